// The one retrying caller for the outside HTTP APIs of the clients: Discord's REST API, Telegram's
// Bot API and Slack's Web API. A 429 waits what the platform asked (a wait past the inline limit
// ends the call, for the caller's own retry: a room's alarm); 5xx and unreachable servers back
// off with jitter; any other refusal is final at once; all sleeping is bounded per call (the loop
// and policy are src/runtime/util/retry.ts, which the model backends use too). Each platform
// supplies an adapter: how it reads its answer and where it says how long to wait.
import {
  type RetryLoopOptions,
  type RetryResult,
  retrying,
  type AttemptOutcome,
  type RetryAdvice,
  serverRetryDelayMs,
} from "../runtime/util/retry.ts";

/** What a 429 that named no wait waits. */
const DEFAULT_RATE_LIMIT_WAIT_MS = 1_000;

/** A platform's reading of one HTTP answer. */
export type ApiReading<T, F> =
  | { ok: true; value: T }
  | {
      ok: false;
      failure: F;
      /** Set when the platform said "too many requests" and how long to wait (0: ask again now). */
      retryAfterMs?: number;
      /** The platform's own "try again" in a non-5xx answer (Slack's `internal_error` with 200). */
      retryable?: boolean;
    };

/** What differs between platforms; everything else is the caller's. */
export interface ApiAdapter<T, F> {
  /** Reads an answer: the value, or the failure with the platform's wait when it named one. */
  read(response: Response): Promise<ApiReading<T, F>>;
  /** The failure of a request that got no answer (retried with backoff). */
  unreachable(error: unknown): F | Promise<F>;
  /** Runs before each request; a failure it returns ends the call (a pacing wait too long). */
  before?(): Promise<F | undefined>;
}

/**
 * Sends with `send` and retries by the rule of every client: a 429 (or a reading with a wait)
 * waits, 5xx and no answer back off, a reading marked retryable backs off, anything else is final.
 */
export function retryingCall<T, F>(
  send: () => Promise<Response>,
  adapter: ApiAdapter<T, F>,
  options: RetryLoopOptions & { now?: () => number },
): Promise<RetryResult<T, F>> {
  const now = options.now ?? Date.now;
  return retrying(async (): Promise<AttemptOutcome<T, F>> => {
    const refused = await adapter.before?.();
    if (refused !== undefined) return { ok: false, failure: refused, retry: "final" };
    let response: Response;
    try {
      response = await send();
    } catch (error) {
      return { ok: false, failure: await adapter.unreachable(error), retry: "backoff" };
    }
    const reading = await adapter.read(response);
    if (reading.ok) return reading;
    return { ok: false, failure: reading.failure, retry: adviceFor(response, reading, now()) };
  }, options);
}

function adviceFor(
  response: Response,
  reading: { retryAfterMs?: number; retryable?: boolean },
  nowMs: number,
): RetryAdvice {
  if (reading.retryAfterMs !== undefined) return { afterMs: reading.retryAfterMs };
  // RFC 6585 §4: a 429 may say how long to wait in Retry-After (RFC 9110 §10.2.3).
  if (response.status === 429)
    return { afterMs: serverRetryDelayMs(response.headers, nowMs) ?? DEFAULT_RATE_LIMIT_WAIT_MS };
  if (response.status >= 500 || reading.retryable === true) return "backoff";
  return "final";
}
