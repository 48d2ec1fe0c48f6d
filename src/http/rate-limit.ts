// Applies a token-bucket rule to a key through its RateLimiter Durable Object, and turns a refusal
// into 429 with Retry-After. If the limiter cannot be reached, the request is let through (and
// logged): an outage of the limiter must not become an outage of the API.
import type { Env } from "../env.ts";
import { RateLimitedError } from "../runtime/errors.ts";
import type { RateRule } from "../runtime/token-bucket.ts";
import { errorField, log } from "../log.ts";

export async function enforceRate(
  env: Env,
  key: string,
  rule: RateRule | null,
  what: string,
): Promise<void> {
  if (!rule) return;
  let result: Awaited<ReturnType<typeof take>>;
  try {
    result = await take(env, key, rule);
  } catch (error) {
    log.warn("rate_limiter_unreachable", { key, error: errorField(error) });
    return;
  }
  if (!result.allowed) {
    const seconds = Math.max(1, Math.ceil(result.retryAfterSeconds));
    throw new RateLimitedError(`${what}: rate limit reached; retry in ${seconds} s`, seconds);
  }
}

function take(env: Env, key: string, rule: RateRule) {
  return env.LIMITS.getByName(key).take(rule);
}
