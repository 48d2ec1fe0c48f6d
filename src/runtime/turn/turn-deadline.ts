// A turn's deadline as a result the caller reads: the work's own value, or TIMED_OUT once the
// deadline has passed. A call the deadline aborted rejects; that rejection is the timeout itself,
// so it is read here, where the call is made, and never travels up as an error.

/** What a turn or a task step that ran out of time answers. */
export const TIMEOUT_REPLY =
  "I ran out of time on this one before I could finish. Please try again.";

export const TIMED_OUT = { kind: "timed_out" } as const;
export type TimedOut = typeof TIMED_OUT;

export function isTimedOut(value: unknown): value is TimedOut {
  return value === TIMED_OUT;
}

export interface TurnDeadline {
  signal: AbortSignal;
  clear(): void;
}

/** Aborts its signal after `ms`; `clear` when the turn ends, so no timer outlives it. */
export function startDeadline(ms: number): TurnDeadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("turn timeout")), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** `work`'s value, or TIMED_OUT when it rejected after the deadline aborted `signal`. */
export async function beforeDeadline<T>(
  signal: AbortSignal,
  work: Promise<T>,
): Promise<T | TimedOut> {
  try {
    return await work;
  } catch (error) {
    if (signal.aborted) return TIMED_OUT;
    throw error;
  }
}
