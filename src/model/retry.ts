// Retry policy for model API calls: which failures are worth another attempt, how long to wait
// (exponential backoff with full jitter, or the server's own Retry-After), and an abortable sleep.
// Pure functions over injected `random` and `now`, so the schedule is testable without waiting.

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
