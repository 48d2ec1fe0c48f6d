// The one `fetch` for URLs that come from outside (MCP servers, what their OAuth discovery names,
// Discord attachments, later the web reader). Every URL, and every redirect target, passes
// url-safety.ts before anything is sent; redirects are followed here (a few at most) or handed
// back when the caller asked for `redirect: "manual"`; the answer is capped in time and size while
// it is read, whatever Content-Length says. Refusals are OutboundRequestError: they name the
// origin and the rule, never what a remote service answered.
import { untilAborted } from "../runtime/util/deadline.ts";
import { AppError } from "../runtime/util/errors.ts";
import { urlRefusal, type UrlPolicy } from "./url-safety.ts";

export interface FetchCaps {
  /**
   * Until the whole answer is read; for an event stream (when `streams` allows one), until its
   * headers only, since an MCP stream stays open for the session.
   */
  timeoutMs: number;
  /** The body of one answer; for an allowed event stream, one event (bytes up to a blank line). */
  maxBytes: number;
  /** Whether a `text/event-stream` answer may stay open (MCP); otherwise it is capped like any body. */
  streams: boolean;
}

export interface GuardedFetchOptions {
  /** The network: globalThis.fetch in the worker, a stand-in in tests. */
  fetch: typeof fetch;
  policy: UrlPolicy;
  caps: FetchCaps;
  /** Redirects followed for a caller that did not ask for `manual` (default 3). */
  maxRedirects?: number;
}

export type OutboundFailure = "refused" | "redirects" | "too_large" | "timeout";

/** A request the guard stopped. The message is ours alone: origin, rule, limit. */
export class OutboundRequestError extends AppError {
  readonly failure: OutboundFailure;

  constructor(failure: OutboundFailure, message: string) {
    super("upstream", 502, message);
    this.failure = failure;
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
const DEFAULT_MAX_REDIRECTS = 3;

export function createGuardedFetch(options: GuardedFetchOptions): typeof fetch {
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  return async (input, init) => {
    const request = input instanceof Request ? input : null;
    let url = new URL(request ? request.url : input instanceof URL ? input.href : String(input));
    let method = (init?.method ?? request?.method ?? "GET").toUpperCase();
    let headers = new Headers(init?.headers ?? request?.headers);
    let body: BodyInit | null | undefined = init?.body ?? request?.body;
    const mode = init?.redirect ?? request?.redirect ?? "follow";
    const deadline = linkedDeadline(
      init?.signal ?? request?.signal ?? null,
      options.caps.timeoutMs,
    );
    try {
      for (let hop = 0; ; hop++) {
        const reason = await urlRefusal(url, options.policy);
        if (reason)
          throw new OutboundRequestError(
            "refused",
            `${hop === 0 ? "request" : "redirect"} to ${url.origin} refused: ${reason}`,
          );
        const response = await deadline.run(
          () =>
            options.fetch(url.href, {
              method,
              headers,
              body,
              redirect: "manual",
              signal: deadline.signal,
            }),
          url,
        );
        const location = REDIRECT_STATUSES.has(response.status)
          ? response.headers.get("location")
          : null;
        if (location === null || mode === "manual")
          return capped(response, options.caps, deadline, url);
        await response.body?.cancel();
        if (mode === "error")
          throw new OutboundRequestError(
            "redirects",
            `${url.origin} answered with a redirect, which is not allowed here`,
          );
        if (hop >= maxRedirects)
          throw new OutboundRequestError(
            "redirects",
            `${url.origin} redirected more than ${maxRedirects} times`,
          );
        const target = resolveLocation(location, url);
        // What fetch does (WHATWG Fetch, HTTP-redirect fetch): 303, and 301/302 after a POST,
        // become a GET without a body; credentials do not follow to another origin.
        if (
          response.status === 303 ||
          ((response.status === 301 || response.status === 302) && method === "POST")
        ) {
          if (method !== "HEAD") method = "GET";
          body = undefined;
          headers.delete("content-type");
        } else if (body instanceof ReadableStream) {
          throw new OutboundRequestError(
            "redirects",
            `${url.origin} redirected a streamed request body, which cannot be sent again`,
          );
        }
        if (target.origin !== url.origin) {
          headers = new Headers(headers);
          for (const name of ["authorization", "cookie", "proxy-authorization"])
            headers.delete(name);
        }
        url = target;
      }
    } catch (error) {
      deadline.release();
      throw error;
    }
  };
}

function resolveLocation(location: string, base: URL): URL {
  try {
    return new URL(location, base);
  } catch {
    throw new OutboundRequestError(
      "redirects",
      `${base.origin} redirected to something that is not a URL`,
    );
  }
}

interface Deadline {
  signal: AbortSignal;
  /** Runs one network step, turning our own timeout into an OutboundRequestError. */
  run<T>(step: () => Promise<T>, url: URL): Promise<T>;
  /** Stops the clock (an event stream's headers arrived); the caller's signal still aborts. */
  clear(): void;
  /** Stops the clock and forgets the caller's signal: the exchange is over. */
  release(): void;
  readonly timedOut: boolean;
}

/** Our time cap and the caller's signal in one signal; the caller's reason wins when it aborted. */
function linkedDeadline(caller: AbortSignal | null, timeoutMs: number): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const onCallerAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) controller.abort(caller.reason);
  else caller?.addEventListener("abort", onCallerAbort, { once: true });
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(
      new OutboundRequestError("timeout", `no complete answer within ${timeoutMs} ms`),
    );
  }, timeoutMs);
  const deadline: Deadline = {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    async run(step, url) {
      try {
        // Raced against the signal too: a network that ignores it cannot outlast the cap.
        return await untilAborted(step(), controller.signal);
      } catch (error) {
        if (timedOut)
          throw new OutboundRequestError(
            "timeout",
            `${url.origin} did not answer within ${timeoutMs} ms`,
          );
        throw error;
      }
    },
    clear() {
      clearTimeout(timer);
    },
    release() {
      clearTimeout(timer);
      caller?.removeEventListener("abort", onCallerAbort);
    },
  };
  return deadline;
}

/** The answer with its body counted as it is read; the deadline ends with the body (or the headers, for a stream). */
function capped(response: Response, caps: FetchCaps, deadline: Deadline, url: URL): Response {
  const stream =
    caps.streams &&
    (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
  if (!response.body || NULL_BODY_STATUSES.has(response.status)) {
    deadline.release();
    return response;
  }
  if (stream) deadline.clear();
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (!stream && declared > caps.maxBytes) {
    deadline.release();
    void response.body.cancel();
    throw new OutboundRequestError(
      "too_large",
      `${url.origin} answered with more than ${caps.maxBytes} bytes`,
    );
  }
  const reader = response.body.getReader();
  const counter = stream ? eventCounter(caps.maxBytes) : bodyCounter(caps.maxBytes);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await untilAborted(reader.read(), deadline.signal);
      } catch (error) {
        deadline.release();
        void reader.cancel().catch(() => undefined);
        controller.error(
          deadline.timedOut
            ? new OutboundRequestError(
                "timeout",
                `${url.origin} did not finish its answer within ${caps.timeoutMs} ms`,
              )
            : error,
        );
        return;
      }
      if (chunk.done) {
        deadline.release();
        controller.close();
        return;
      }
      if (!counter(chunk.value)) {
        deadline.release();
        void reader.cancel();
        const what = stream ? "an event of more than" : "more than";
        controller.error(
          new OutboundRequestError(
            "too_large",
            `${url.origin} answered with ${what} ${caps.maxBytes} bytes`,
          ),
        );
        return;
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      deadline.release();
      return reader.cancel(reason);
    },
  });
  const headers = new Headers(response.headers);
  // The body is re-streamed: its length is whatever arrives, not what was declared.
  headers.delete("content-length");
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** Total bytes, for an ordinary answer. */
function bodyCounter(max: number): (chunk: Uint8Array) => boolean {
  let total = 0;
  return (chunk) => {
    total += chunk.byteLength;
    return total <= max;
  };
}

/** Bytes since the last event boundary (an empty line: LF, CR or CRLF line ends, per the SSE spec). */
function eventCounter(max: number): (chunk: Uint8Array) => boolean {
  let sinceBoundary = 0;
  let lineLength = 0;
  let previous = 0;
  return (chunk) => {
    for (const byte of chunk) {
      const crlf = byte === 0x0a && previous === 0x0d;
      previous = byte;
      if (crlf) continue;
      if (byte === 0x0a || byte === 0x0d) {
        if (lineLength === 0) sinceBoundary = 0;
        lineLength = 0;
        continue;
      }
      lineLength += 1;
      if (++sinceBoundary > max) return false;
    }
    return true;
  };
}
