// What a member of a chat (Discord, Telegram, Slack) reads when their turn failed. Our errors are
// written for whoever called the API: a member is not that person. Failures of the deployment
// (the model or an outside service unreachable, a setting missing, the database down) get one
// neutral sentence, and their detail stays with the operator (the turn's `run_failed` log line, its
// trace and the turn inspector); failures about the member's own message (too large, too fast, not
// allowed) keep their words, which are written for them.
import type { SerializedError } from "../../runtime/util/errors.ts";

/** Errors whose message speaks to the member about their own message or rights. */
const MEMBER_FACING = new Set<SerializedError["code"]>([
  "validation",
  "payload_too_large",
  "rate_limited",
  "forbidden",
  "not_found",
]);

export const UNAVAILABLE_TEXT =
  "⚠️ I can't answer right now. The people who run me can see what went wrong; please try again in a little while.";

export function memberErrorText(error: Pick<SerializedError, "code" | "message">): string {
  return MEMBER_FACING.has(error.code)
    ? `⚠️ I couldn't answer that: ${error.message}`
    : UNAVAILABLE_TEXT;
}
