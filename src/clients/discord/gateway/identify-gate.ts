// When the next IDENTIFY may go out. Discord allows `max_concurrency` IDENTIFYs per 5 seconds
// (one per rate-limit bucket; a single shard is bucket 0, so one per 5 s) and a daily budget of
// session starts (`session_start_limit`, 1,000 per 24 h for most bots): when that is spent, wait
// `reset_after`. RESUMEs do not count against either.
import type { GatewayBotInfo } from "./protocol.ts";

export const IDENTIFY_WINDOW_MS = 5_000;
/**
 * An IDENTIFY leaves once the socket is open and HELLO has come, some time after its slot was
 * taken: slots of one bucket are spaced by Discord's 5 s plus this, so two never land closer.
 */
export const IDENTIFY_SLOT_MARGIN_MS = 1_000;

/** Milliseconds to wait before identifying; 0 when it may go now. */
export function identifyDelayMs(
  now: number,
  lastIdentifyAt: number | null,
  limit: GatewayBotInfo["session_start_limit"] | undefined,
): number {
  if (limit && limit.remaining <= 0) return Math.max(limit.reset_after, IDENTIFY_WINDOW_MS);
  if (lastIdentifyAt === null) return 0;
  return Math.max(0, lastIdentifyAt + IDENTIFY_WINDOW_MS - now);
}
