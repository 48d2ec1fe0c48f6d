// Rate limits without a hop on the request's path: admit, then charge. Each isolate keeps a copy of
// the buckets its requests drew from; a request is refused (429 with Retry-After) when that copy
// is empty, else admitted at once, and charged to the key's exact bucket in its RateLimiter
// Durable Object afterwards, by its own request (a charge is I/O, and Workers forbid one request
// from finishing another's). The charge's answer, the bucket as it stands, replaces the copy
// (less what this isolate admitted whose charges are still travelling), so what other isolates
// spent shows up here after one request. A key's requests spread
// over many isolates can pass the limit by what each admits before its charge comes back. If the
// limiter cannot be reached, requests are let through (and logged): an outage of the limiter must
// not become an outage of the API.
import type { Env } from "../env.ts";
import { RateLimitedError } from "../runtime/errors.ts";
import { takeFromBucket, type BucketState, type RateRule } from "../runtime/token-bucket.ts";
import { errorField, log } from "../log.ts";

/** Keeps a promise's work alive after the response (ExecutionContext.waitUntil). */
export type KeepAlive = (work: Promise<unknown>) => void;

/** Keys whose copies an isolate keeps; the least recently used go first. */
const MAX_KEYS = 10_000;

interface Copy {
  rule: RateRule;
  state: BucketState | undefined;
  /** Admitted here whose charges have not come back yet. */
  inFlight: number;
}

const copies = new Map<string, Copy>();

/**
 * Refuses with 429 when the key's bucket (as this isolate knows it) is empty; otherwise admits
 * the request and charges it to the exact bucket, kept alive by `keepAlive`. Without one (a
 * caller with no execution context) the charge is awaited.
 */
export async function enforceRate(
  env: Env,
  key: string,
  rule: RateRule | null,
  what: string,
  keepAlive?: KeepAlive,
): Promise<void> {
  if (!rule) return;
  const copy = copyOf(key, rule);
  const { state, result } = takeFromBucket(copy.state, rule, Date.now());
  copy.state = state;
  if (!result.allowed) {
    const seconds = Math.max(1, Math.ceil(result.retryAfterSeconds));
    throw new RateLimitedError(`${what}: rate limit reached; retry in ${seconds} s`, seconds);
  }
  const charged = charge(env, key, copy);
  if (keepAlive) keepAlive(charged);
  else await charged;
}

/** Forgets every copy (tests simulate a fresh isolate with it). */
export function resetRateCopies(): void {
  copies.clear();
}

function copyOf(key: string, rule: RateRule): Copy {
  const copy = copies.get(key) ?? { rule, state: undefined, inFlight: 0 };
  // The latest rule wins (a token's own limit can change); most recently used last.
  copy.rule = rule;
  copies.delete(key);
  copies.set(key, copy);
  if (copies.size > MAX_KEYS) {
    const oldest = copies.keys().next().value;
    if (oldest !== undefined) copies.delete(oldest);
  }
  return copy;
}

/** Charges one admitted request to the exact bucket; never fails (an outage is logged). */
async function charge(env: Env, key: string, copy: Copy): Promise<void> {
  copy.inFlight += 1;
  try {
    const exact = await env.LIMITS.getByName(key).charge(copy.rule, 1);
    copy.inFlight -= 1;
    // What was admitted here while this charge travelled is not in the limiter's answer yet.
    copy.state = { tokens: exact.tokens - copy.inFlight, updatedAt: exact.updatedAt };
  } catch (error) {
    copy.inFlight -= 1;
    log.warn("rate_limiter_unreachable", { key, error: errorField(error) });
  }
}
