// The production-like waits `npm run bench:compare -- --embed-ms N --first-token-ms N
// --tokens-per-s N` gives both sides' models alike (the stand-in's ModelLatency; ElizaOS's registered
// handlers read the same three figures from COMPARE_* variables). All zero: today's instant model.
import type { ModelLatency } from "../model-server.ts";

export type CompareDelays = ModelLatency;

/**
 * Under delays, each side lets the work a message started finish (no model call open, none for
 * this long) before it sends the next: a person reads the reply before writing again, and the
 * calls each reply waited for are then told apart from the last message's after-reply work.
 */
export const SETTLE_QUIET_MS = 250;

export function anyDelay(delays: CompareDelays): boolean {
  return delays.embedMs > 0 || delays.firstTokenMs > 0 || delays.tokensPerSecond > 0;
}

export function describeDelays(delays: CompareDelays): string {
  if (!anyDelay(delays)) return "instant model";
  const writing = delays.tokensPerSecond > 0 ? `${delays.tokensPerSecond} tokens/s` : "no writing";
  return `embedding ${delays.embedMs} ms, first token ${delays.firstTokenMs} ms, ${writing}`;
}

/** For the ElizaOS driver's environment. */
export function delaysEnv(delays: CompareDelays): Record<string, string> {
  return {
    COMPARE_EMBED_MS: String(delays.embedMs),
    COMPARE_FIRST_TOKEN_MS: String(delays.firstTokenMs),
    COMPARE_TOKENS_PER_S: String(delays.tokensPerSecond),
  };
}
