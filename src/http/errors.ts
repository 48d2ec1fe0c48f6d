// The one place errors become HTTP responses: `{"error":{code,message,details?}}` with the
// error's status. Typed AppErrors keep their code; Hono's own HTTP errors (malformed JSON, wrong
// content type) become validation errors; anything else is a 500 that never leaks internals.
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { AppError, type ErrorCode } from "../runtime/util/errors.ts";
import { errorField, log } from "../log.ts";

/** What hono's JSON validator throws for a body it cannot parse. */
const HONO_MALFORMED_JSON = "Malformed JSON in request body";

export function errorBody(code: ErrorCode, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

export function errorResponse(c: Context, error: AppError): Response {
  // A rate-limited error that crossed an RPC boundary is a plain AppError: its seconds ride in details.
  const retryAfter = (error.details as { retryAfterSeconds?: unknown } | undefined)
    ?.retryAfterSeconds;
  if (error.status === 429 && typeof retryAfter === "number")
    c.header("Retry-After", String(Math.max(1, Math.ceil(retryAfter))));
  return c.json(
    errorBody(error.code, error.message, error.details),
    error.status as ContentfulStatusCode,
  );
}

export function handleError(error: unknown, c: Context): Response {
  if (error instanceof AppError) return errorResponse(c, error);
  if (error instanceof HTTPException) {
    const status = error.status;
    const code: ErrorCode =
      status === 401
        ? "unauthorized"
        : status === 404
          ? "not_found"
          : status === 413
            ? "payload_too_large"
            : "validation";
    // The OpenAPI router's own 415 says only "Unsupported Media Type": say what to send.
    const message =
      status === 415
        ? 'the body must be JSON, sent with the header "content-type: application/json"'
        : // Hono's validator words an unparsable body its own way; every route says it as ours do.
          error.message === HONO_MALFORMED_JSON
          ? "invalid request body: not JSON"
          : error.message || "bad request";
    return c.json(errorBody(code, message), status as ContentfulStatusCode);
  }
  log.error("unhandled_error", { path: c.req.path, error: errorField(error, true) });
  return c.json(errorBody("internal", "internal error; see the worker logs"), 500);
}
