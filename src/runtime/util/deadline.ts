// One way to bound a promise by a timeout, shared by providers, tools and evaluators, so every
// timer is cleared on both paths and no stray timer keeps a Durable Object busy.

export class DeadlineExceeded extends Error {
  readonly ms: number;

  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.ms = ms;
    this.name = "DeadlineExceeded";
  }
}

/** Resolves like `promise`, or rejects with DeadlineExceeded after `ms` (calling `onTimeout` first). */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout?: () => void,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new DeadlineExceeded(ms));
    }, ms);
  });
  return Promise.race([promise, deadline]).finally(() => {
    if (timer !== null) clearTimeout(timer);
  });
}

/**
 * `promise`, or the signal's reason once it aborts, whichever comes first: for work that takes no
 * signal of its own (it runs on; only the wait ends). The listener is removed on both paths.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
