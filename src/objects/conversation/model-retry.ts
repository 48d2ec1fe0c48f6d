// When a chat turn that failed on the model is tried again. A turn whose reply goes to a surface
// (Discord, Telegram, Slack) and that failed only because the model could not be reached (no
// answer, or 429/5xx after the model client's own retries and any fallback model) waits in the
// journal and runs again later: after 30 s, then 1 min, then every 2 min, until 8 min after the
// message arrived (inside the 15 minutes a Discord interaction's token lives). A newer message in
// the room releases it at once, so replies keep the messages' order. When the window ends, the
// member gets the neutral failure text. REST and streaming callers are answered at once instead:
// they hold the request and retry with their Idempotency-Key.
import { type ModelFailureCause, modelFailureCause } from "../../runtime/util/errors.ts";
import type { JournalEntry } from "./journal-rows.ts";

export const MODEL_RETRY = { windowMs: 8 * 60_000, firstDelayMs: 30_000, maxDelayMs: 120_000 };

/** The model did not answer or was failing: it may be back later. A wrong setting will not. */
const WORTH_RETRYING = new Set<ModelFailureCause>(["unreachable", "overloaded"]);

/**
 * When the failed turn runs again, or null when it fails now: not a chat turn, a failure another
 * try cannot fix, or a try that would start after the window.
 */
export function modelRetryAt(
  entry: Pick<JournalEntry, "delivery" | "createdAt" | "retries">,
  error: unknown,
  now: number,
  policy: typeof MODEL_RETRY = MODEL_RETRY,
): number | null {
  if (!entry.delivery) return null;
  const cause = modelFailureCause(error);
  if (!cause || !WORTH_RETRYING.has(cause)) return null;
  const delay = Math.min(policy.firstDelayMs * 2 ** entry.retries, policy.maxDelayMs);
  const at = now + delay;
  return at < entry.createdAt + policy.windowMs ? at : null;
}
