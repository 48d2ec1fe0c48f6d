// How every call to an outside API is retried (the model backends; Discord, Telegram and Slack
// through src/net/retrying-call.ts): which HTTP statuses say "try again", how long to wait
// (exponential backoff with full jitter, or the server's own Retry-After), and the one loop that
// runs the attempts, bounded per wait and in total. Pure over injected sleep, `random` and `now`,
// so the schedule is testable without waiting.

/** The longest server-requested delay we honour; asking for more means "go elsewhere". */
export const MAX_SERVER_RETRY_DELAY_MS = 30_000;

export interface RetryOptions {
  /** Attempts in total, the first included. */
  maxAttempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export type RetryPolicy = Required<RetryOptions>;

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
};

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export function resolveRetryPolicy(options: RetryOptions | undefined): RetryPolicy {
  const merged = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(options ?? {}) };
  return {
    maxAttempts: Math.max(1, Math.floor(merged.maxAttempts)),
    baseDelayMs: Math.max(0, merged.baseDelayMs),
    maxDelayMs: Math.max(0, merged.maxDelayMs),
  };
}

/** HTTP statuses that say "try again": request timeout, conflict/lock, rate limit, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"): a uniform pick in
 * [0, min(max, base * 2^(n-1))] spreads simultaneous retries better than a fixed schedule.
 * `failedAttempts` counts from 1.
 */
export function backoffDelayMs(
  failedAttempts: number,
  policy: RetryPolicy,
  random: () => number,
): number {
  const ceiling = Math.min(
    policy.maxDelayMs,
    policy.baseDelayMs * 2 ** Math.max(0, failedAttempts - 1),
  );
  const unit = Math.min(1, Math.max(0, random()));
  return Math.round(ceiling * unit);
}

/**
 * The delay the server asked for, in ms, or undefined when it did not say (or said nonsense).
 * `retry-after-ms` (OpenAI, Azure) wins over `Retry-After` (RFC 9110 §10.2.3: delta-seconds or
 * an HTTP-date).
 */
export function serverRetryDelayMs(
  headers: Headers | undefined,
  nowMs: number,
): number | undefined {
  if (!headers) return undefined;
  const millis = headers.get("retry-after-ms");
  if (millis !== null && /^\s*\d+(\.\d+)?\s*$/.test(millis)) return Math.ceil(Number(millis));
  const retryAfter = headers.get("retry-after");
  if (retryAfter === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
  const date = Date.parse(retryAfter);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** setTimeout-based sleep that rejects with the signal's reason as soon as it aborts. */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

function stripUndefined(options: RetryOptions): RetryOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/** All the sleeping one call may do, retries included; a wait that would pass it ends the call. */
export const MAX_TOTAL_RETRY_WAIT_MS = 60_000;

/** Whether a failed attempt is worth another: never, after a backoff, or after the server's wait. */
export type RetryAdvice = "final" | "backoff" | { afterMs: number };

/** What one attempt came to. */
export type AttemptOutcome<T, F> =
  | { ok: true; value: T }
  | { ok: false; failure: F; retry: RetryAdvice };

/** How the call ended; a failure says whether it stopped on a server wait too long to sleep. */
export type RetryResult<T, F> =
  | { ok: true; value: T; attempts: number }
  | { ok: false; failure: F; attempts: number; tooLongWaitMs?: number };

export interface RetryLoopOptions {
  policy: RetryPolicy;
  sleep?: Sleep;
  random?: () => number;
  /** A server-asked wait past this is not slept (default MAX_SERVER_RETRY_DELAY_MS). */
  maxServerWaitMs?: number;
  /** Default MAX_TOTAL_RETRY_WAIT_MS. */
  maxTotalWaitMs?: number;
  /** The caller's abort: checked before each attempt and after each sleep. */
  signal?: AbortSignal;
}

/** Runs `attempt` (numbered from 1) until it succeeds, fails for good, or the budget is spent. */
export async function retrying<T, F>(
  attempt: (n: number) => Promise<AttemptOutcome<T, F>>,
  options: RetryLoopOptions,
): Promise<RetryResult<T, F>> {
  const { policy, signal } = options;
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const maxServerWaitMs = options.maxServerWaitMs ?? MAX_SERVER_RETRY_DELAY_MS;
  const maxTotalWaitMs = options.maxTotalWaitMs ?? MAX_TOTAL_RETRY_WAIT_MS;
  let waited = 0;
  for (let n = 1; ; n++) {
    signal?.throwIfAborted();
    const outcome = await attempt(n);
    if (outcome.ok) return { ok: true, value: outcome.value, attempts: n };
    const { failure, retry } = outcome;
    if (retry === "final" || n >= policy.maxAttempts) return { ok: false, failure, attempts: n };
    const serverWaitMs = typeof retry === "object" ? retry.afterMs : undefined;
    if (serverWaitMs !== undefined && serverWaitMs > maxServerWaitMs)
      return { ok: false, failure, attempts: n, tooLongWaitMs: serverWaitMs };
    const wait = serverWaitMs ?? backoffDelayMs(n, policy, random);
    if (waited + wait > maxTotalWaitMs) return { ok: false, failure, attempts: n };
    // A wait of 0 (Discord: its limiter holds the wait) asks again without yielding to a timer.
    if (wait > 0) await sleep(wait, signal);
    waited += wait;
    // An injected sleep may ignore the signal; an abort during it still ends the call here.
    signal?.throwIfAborted();
  }
}
