// Errors on the OpenAI-compatible routes leave in OpenAI's shape, `{"error":{message,type,param,
// code}}`, with the same status, so the SDKs raise their typed errors (BadRequestError,
// PermissionDeniedError, ...) carrying our message. This is the one exception to the house shape:
// the house mapping (src/http/errors.ts) still decides status, code and message; `code` keeps the
// house code, so a reader of `{error:{code,message}}` still finds both.
import type { Context } from "hono";
import { z } from "@hono/zod-openapi";
import { handleError } from "../../errors.ts";
import { AppError } from "../../../runtime/util/errors.ts";

/** The longest Retry-After the SDKs wait out; a ceiling further away is not worth a retry. */
const MAX_RETRY_AFTER_SECONDS = 60;

export const OpenAIErrorResponse = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string().openapi({ example: "invalid_request_error" }),
      param: z.string().nullable(),
      code: z.string().openapi({ example: "validation" }),
    }),
  })
  .openapi("OpenAIError");

export const openAIErrorContent = (description: string) => ({
  description,
  content: { "application/json": { schema: OpenAIErrorResponse } },
});

/** OpenAI's error `type` for a status. */
function typeOf(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export function openAIErrorBody(status: number, code: string, message: string, param?: string) {
  return { message, type: typeOf(status), param: param ?? null, code };
}

/** The field an error is about: named by the route (`details.param`), or the first invalid one. */
function paramOf(details: unknown): string | undefined {
  if (typeof details !== "object" || details === null) return undefined;
  const { param, issues } = details as { param?: unknown; issues?: Array<{ path?: unknown }> };
  if (typeof param === "string") return param;
  const path = Array.isArray(issues) ? issues[0]?.path : undefined;
  return typeof path === "string" && path.length > 0 ? path : undefined;
}

/**
 * The SDKs retry 409, 429 and 5xx on their own. Say no where a retry cannot help: a reused
 * Idempotency-Key, a deployment without a model, a limit that lifts only after a minute or more.
 */
function retryHelps(status: number, code: string, headers: Headers): boolean {
  if (status === 409) return false;
  if (code === "model_not_configured" || code === "not_configured") return false;
  if (status === 429) {
    const after = Number(headers.get("retry-after") ?? Number.NaN);
    return Number.isFinite(after) && after <= MAX_RETRY_AFTER_SECONDS;
  }
  return true;
}

/** Runs a check whose refusal is about one field of the request, and names it as `param`. */
export function aboutParam<T>(param: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw namingParam(param, error);
  }
}

/** The same error, naming the field it is about (an AppError; anything else is left as it is). */
export function namingParam(param: string, error: unknown): unknown {
  if (!(error instanceof AppError)) return error;
  const details = typeof error.details === "object" && error.details !== null ? error.details : {};
  return new AppError(error.code, error.status, error.message, { ...details, param });
}

/** app.onError of the OpenAI-compatible routes: the house mapping, reshaped. */
export async function handleOpenAIError(error: unknown, c: Context): Promise<Response> {
  const house = handleError(error, c);
  const { error: problem } = (await house.json()) as {
    error: { code: string; message: string; details?: unknown };
  };
  const headers = new Headers(house.headers);
  headers.delete("content-length");
  if (!retryHelps(house.status, problem.code, headers)) headers.set("x-should-retry", "false");
  const body = openAIErrorBody(
    house.status,
    problem.code,
    problem.message,
    paramOf(problem.details),
  );
  return new Response(JSON.stringify({ error: body }), { status: house.status, headers });
}
