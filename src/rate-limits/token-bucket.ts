// Token-bucket arithmetic for rate limits, pure so it is tested without a Durable Object. A rule
// like "20/min" is a bucket of 20 that refills continuously at 20 per minute: bursts up to 20,
// and 20 a minute sustained. `now` is passed in. `takeFromBucket` decides one request;
// `chargeBucket` records requests already admitted (they may leave the bucket in debt, which
// later requests wait out).

export interface RateRule {
  /** Most requests in a burst (the bucket's size). */
  capacity: number;
  /** Requests regained per second. */
  refillPerSecond: number;
}

export interface BucketState {
  tokens: number;
  updatedAt: number;
}

export interface TakeResult {
  allowed: boolean;
  /** Whole requests left after this one. */
  remaining: number;
  /** When refused: seconds until one request would be allowed. */
  retryAfterSeconds: number;
}

const PERIOD_SECONDS: Readonly<Record<string, number>> = {
  s: 1,
  sec: 1,
  second: 1,
  m: 60,
  min: 60,
  minute: 60,
  h: 3600,
  hour: 3600,
  d: 86_400,
  day: 86_400,
};
export const RATE_RULE_FORMAT = '"<count>/<s|min|hour|day>" (e.g. "20/min"), or "off"';

/** Parses "20/min"; null means "off" (no limit). Throws with the expected format otherwise. */
export function parseRateRule(text: string): RateRule | null {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === "off") return null;
  const match = /^(\d{1,7})\s*\/\s*([a-z]+)$/.exec(trimmed);
  const period = match ? PERIOD_SECONDS[match[2]!] : undefined;
  const count = match ? Number(match[1]) : 0;
  if (!period || count < 1) throw new Error(`expected ${RATE_RULE_FORMAT}`);
  return { capacity: count, refillPerSecond: count / period };
}

export function takeFromBucket(
  state: BucketState | undefined,
  rule: RateRule,
  now: number,
  cost = 1,
): { state: BucketState; result: TakeResult } {
  const elapsedSeconds = state ? Math.max(0, now - state.updatedAt) / 1000 : 0;
  const available = state
    ? Math.min(rule.capacity, state.tokens + elapsedSeconds * rule.refillPerSecond)
    : rule.capacity;
  if (available >= cost) {
    const tokens = available - cost;
    return {
      state: { tokens, updatedAt: now },
      result: { allowed: true, remaining: Math.floor(tokens), retryAfterSeconds: 0 },
    };
  }
  const retryAfterSeconds = (cost - available) / rule.refillPerSecond;
  return {
    state: { tokens: available, updatedAt: now },
    result: { allowed: false, remaining: 0, retryAfterSeconds },
  };
}

/**
 * Subtracts `cost` requests that were already let through: unlike a take, a charge is never
 * refused, and the bucket may go below zero. A bucket in debt refuses takes until it has refilled.
 */
export function chargeBucket(
  state: BucketState | undefined,
  rule: RateRule,
  now: number,
  cost: number,
): BucketState {
  const elapsedSeconds = state ? Math.max(0, now - state.updatedAt) / 1000 : 0;
  const available = state
    ? Math.min(rule.capacity, state.tokens + elapsedSeconds * rule.refillPerSecond)
    : rule.capacity;
  return { tokens: available - cost, updatedAt: Math.max(now, state?.updatedAt ?? now) };
}
