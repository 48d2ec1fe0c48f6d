// Says what failed when an MCP server or an authorization server did not give what was needed,
// without repeating what it answered: the SDK's messages carry response bodies ("Raw body: ...",
// "Error POSTing to endpoint: <body>", JSON parse errors quoting the text), and a body may be
// an internal service's. Errors are told apart by class; the status comes from a trace of the
// answers. Our own typed errors (AppError, the guard's refusals) keep their messages.
import {
  AuthorizationServerMismatchError,
  InsecureTokenEndpointError,
  InsufficientScopeError,
  IssuerMismatchError,
  OAuthClientFlowError,
  OAuthError,
  ProtocolError,
  RegistrationRejectedError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SseError,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { AppError } from "../runtime/util/errors.ts";

export interface ResponseTrace {
  fetch: typeof fetch;
  /** The origin and status of the last answer, when it was an error (4xx, 5xx). */
  lastFailure(): { origin: string; status: number } | null;
}

/** Wraps a fetch to remember the last answer's origin and status (never its body). */
export function traceResponses(base: typeof fetch): ResponseTrace {
  let last: { origin: string; status: number } | null = null;
  return {
    fetch: async (input, init) => {
      const response = await base(input, init);
      last = {
        origin: new URL(input instanceof Request ? input.url : String(input)).origin,
        status: response.status,
      };
      return response;
    },
    lastFailure: () => (last && last.status >= 400 ? last : null),
  };
}

/** A short description that is safe to show a client or the model. */
export function describeRemoteError(error: unknown, trace?: ResponseTrace): string {
  const failed = trace?.lastFailure();
  const answered = failed ? `${failed.origin} answered HTTP ${failed.status}` : null;
  if (error instanceof AppError) return error.message;
  if (error instanceof OAuthError)
    return `the authorization server answered ${typeof error.code === "string" && /^[a-z_]{1,64}$/.test(error.code) ? error.code : "an error"}${answered ? ` (${answered})` : ""}`;
  // The OAuth client's own checks: named, never with the values compared.
  if (error instanceof IssuerMismatchError)
    return error.kind === "metadata"
      ? "the authorization server's metadata names another issuer than the URL it came from (RFC 8414)"
      : "the authorization response's iss does not match the authorization server (RFC 9207)";
  if (error instanceof AuthorizationServerMismatchError)
    return "the authorization server is not the one this authorization was started with";
  if (error instanceof InsecureTokenEndpointError)
    return "the authorization server's token endpoint is not HTTPS";
  if (error instanceof RegistrationRejectedError)
    return `the authorization server refused to register the client (HTTP ${error.status})`;
  if (error instanceof InsufficientScopeError) return "the server asks for more access (scope)";
  if (error instanceof OAuthClientFlowError) return "the OAuth flow could not go on";
  if (error instanceof SdkHttpError)
    return error.status > 0
      ? `the server answered HTTP ${error.status}`
      : "the server answered with an unexpected content type";
  if (error instanceof SseError)
    return `its event stream failed${typeof error.code === "number" && error.code > 0 ? ` (HTTP ${error.code})` : ""}`;
  if (error instanceof UnauthorizedError) return "the server needs authorization";
  if (error instanceof ProtocolError) return `the server answered with MCP error ${error.code}`;
  if (error instanceof SdkError) {
    if (error.code === SdkErrorCode.RequestTimeout) return "the server did not answer in time";
    if (error.code === SdkErrorCode.ConnectionClosed) return "the connection was closed";
    return `the MCP client failed (${error.code})`;
  }
  if (answered) return answered;
  if (error instanceof SyntaxError) return "an answer was not valid JSON";
  if (error instanceof TypeError) return "the server could not be reached";
  if (error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError"))
    return "the request was cancelled";
  return "an answer could not be used";
}
