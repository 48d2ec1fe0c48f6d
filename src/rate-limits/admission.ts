// Rate limits without a hop on the request's path: admit, then charge. Each isolate keeps a copy of
// the buckets its requests drew from; a request is refused (429 with Retry-After) when that copy
// is empty, else admitted at once, and charged to the key's exact bucket in its RateLimiter
// Durable Object afterwards, off the request's path. One charge per key is in flight at a time:
// requests admitted meanwhile are charged together by the next one (a busy key costs one RPC per
// limiter round trip, not one per request). The charge's answer, the bucket as it stands,
// replaces the copy (less what was admitted here and not charged yet), so what other isolates
// spent shows up here after one charge. A key's requests spread over many isolates can pass the
// limit by what each admits before its charge comes back. If the limiter cannot be reached,
// requests are let through (and logged): an outage of the limiter must not become an outage of
// the API.
import type { Env } from "../env.ts";
import { RateLimitedError } from "../runtime/util/errors.ts";
import { takeFromBucket, type BucketState, type RateRule } from "./token-bucket.ts";
import { errorField, log } from "../log.ts";

/** Keeps a promise's work alive after the response (ExecutionContext.waitUntil). */
export type KeepAlive = (work: Promise<unknown>) => void;

/** Keys whose copies an isolate keeps; the least recently used go first. */
const MAX_KEYS = 10_000;

interface Copy {
  rule: RateRule;
  state: BucketState | undefined;
  /** Admitted here and not sent to the limiter yet. */
  unsent: number;
  /** The charges being sent (null: none); it resolves once `unsent` is 0 and answered. */
  charging: Promise<void> | null;
}

const copies = new Map<string, Copy>();

/** One bucket a request draws from: its limiter key, its rule (null: unlimited), whose it is. */
export interface Bucket {
  key: string;
  rule: RateRule | null;
  /** Names the bucket's owner in a refusal ("this API token", `user "ann"`). */
  what: string;
}

/**
 * Refuses with 429 when any of the buckets (as this isolate knows them) is empty, taking from
 * none of them; otherwise admits the request and charges it to each exact bucket, kept alive by
 * `keepAlive`. Without one (a caller with no execution context) the charges are awaited.
 */
export async function admit(
  env: Env,
  buckets: readonly Bucket[],
  keepAlive?: KeepAlive,
): Promise<void> {
  const now = Date.now();
  const taken: Array<{ key: string; copy: Copy; before: BucketState | undefined }> = [];
  for (const { key, rule, what } of buckets) {
    if (!rule) continue;
    const copy = copyOf(key, rule);
    const before = copy.state;
    const { state, result } = takeFromBucket(before, rule, now);
    copy.state = state;
    if (!result.allowed) {
      // What was taken from the buckets before this one is put back: the request is not admitted.
      for (const earlier of taken) earlier.copy.state = earlier.before;
      const seconds = Math.max(1, Math.ceil(result.retryAfterSeconds));
      throw new RateLimitedError(`${what}: rate limit reached; retry in ${seconds} s`, seconds);
    }
    taken.push({ key, copy, before });
  }
  const charged = taken.map(({ key, copy }) => charge(env, key, copy));
  if (keepAlive) for (const charging of charged) keepAlive(charging);
  else await Promise.all(charged);
}

/** One bucket: as admit. */
export function enforceRate(
  env: Env,
  key: string,
  rule: RateRule | null,
  what: string,
  keepAlive?: KeepAlive,
): Promise<void> {
  return admit(env, [{ key, rule, what }], keepAlive);
}

/** Forgets every copy (tests simulate a fresh isolate with it). */
export function resetRateCopies(): void {
  copies.clear();
}

function copyOf(key: string, rule: RateRule): Copy {
  const copy = copies.get(key) ?? { rule, state: undefined, unsent: 0, charging: null };
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

/**
 * Charges one admitted request to the exact bucket: with the charge under way for the key, if
 * there is one, else by a new one. Resolves once it is recorded; never fails (an outage is logged).
 */
function charge(env: Env, key: string, copy: Copy): Promise<void> {
  copy.unsent += 1;
  // Started after this assignment (a microtask later), so sendCharges' reset cannot come first.
  copy.charging ??= Promise.resolve().then(() => sendCharges(env, key, copy));
  return copy.charging;
}

/** Sends what is owed, one RPC at a time, until nothing admitted here is left uncharged. */
async function sendCharges(env: Env, key: string, copy: Copy): Promise<void> {
  try {
    while (copy.unsent > 0) {
      const cost = copy.unsent;
      copy.unsent = 0;
      try {
        const exact = await env.LIMITS.getByName(key).charge(copy.rule, cost);
        // What was admitted here while this charge travelled is not in the limiter's answer yet.
        copy.state = { tokens: exact.tokens - copy.unsent, updatedAt: exact.updatedAt };
      } catch (error) {
        log.warn("rate_limiter_unreachable", { key, error: errorField(error) });
      }
    }
  } finally {
    // Synchronously after the last check: a request admitted from now on starts a new charge.
    copy.charging = null;
  }
}
