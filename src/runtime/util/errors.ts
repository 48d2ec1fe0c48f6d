// Typed errors shared by every layer. Each carries a stable `code` and an HTTP status; the worker
// maps them to `{"error":{code,message,details?}}` in one place (src/http/errors.ts). Callers branch
// on the class or the code, never on message text.

export type ErrorCode =
  | "validation"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "rate_limited"
  | "upstream"
  | "model"
  | "model_not_configured"
  | "not_configured"
  | "tool"
  | "embedding"
  | "dimension_mismatch"
  | "database_unavailable"
  | "internal";

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: unknown;

  constructor(code: ErrorCode, status: number, message: string, details?: unknown) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = details;
  }

  toJSON(): SerializedError {
    return { code: this.code, status: this.status, message: this.message, details: this.details };
  }
}

/** The plain form an error takes across RPC boundaries (class identity does not survive RPC). */
export interface SerializedError {
  code: ErrorCode;
  status: number;
  message: string;
  details?: unknown;
}

export class ValidationError extends AppError {
  constructor(message: string, details?: unknown) {
    super("validation", 400, message, details);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = "a valid bearer token is required") {
    super("unauthorized", 401, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super("forbidden", 403, message);
  }
}

/** A rate limit or spending ceiling was hit; `retryAfterSeconds` becomes the Retry-After header. */
export class RateLimitedError extends AppError {
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number, details?: Record<string, unknown>) {
    super("rate_limited", 429, message, { ...details, retryAfterSeconds });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export class NotFoundError extends AppError {
  constructor(message: string) {
    super("not_found", 404, message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, details?: unknown) {
    super("conflict", 409, message, details);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string) {
    super("payload_too_large", 413, message);
  }
}

/**
 * One of the deployment's memory databases failed (src/db/shards.ts): the agents it holds answer
 * this until it recovers, the others are not affected. The message names the database only.
 */
export class DatabaseUnavailableError extends AppError {
  constructor(message: string) {
    super("database_unavailable", 503, message);
  }
}

/** The deployment lacks a variable or binding this request needs (the message names it). */
export class NotConfiguredError extends AppError {
  constructor(message: string) {
    super("not_configured", 503, message);
  }
}

export class ModelNotConfiguredError extends AppError {
  constructor(message: string) {
    super("model_not_configured", 503, message);
  }
}

/**
 * Why a model call failed, for the operator's fix (GET /health, the playground): the endpoint did
 * not answer; it does not serve the model; it refused the key; it was busy or failing (429, 5xx);
 * its reply was unusable (not the JSON asked for, malformed); anything else.
 */
export type ModelFailureCause =
  | "unreachable"
  | "unknown_model"
  | "credentials"
  | "overloaded"
  | "invalid_reply"
  | "other";

/** The model API failed for good (after the client's retries) or answered with something unusable. */
export class ModelCallError extends AppError {
  /** The model that failed. */
  readonly model: string;
  /** HTTP status from the model API, when there was one. */
  readonly upstreamStatus?: number;
  /** Whether trying another model could help (unavailable, overloaded, unknown model, malformed). */
  readonly failover: boolean;
  readonly failureCause: ModelFailureCause;

  constructor(input: {
    model: string;
    message: string;
    upstreamStatus?: number;
    failover: boolean;
    cause?: ModelFailureCause;
  }) {
    super("model", 502, input.message);
    this.model = input.model;
    this.upstreamStatus = input.upstreamStatus;
    this.failover = input.failover;
    this.failureCause = input.cause ?? causeOfStatus(input.upstreamStatus);
  }
}

function causeOfStatus(status: number | undefined): ModelFailureCause {
  if (status === undefined) return "other";
  if (status === 401 || status === 403) return "credentials";
  if (status === 404) return "unknown_model";
  if (status === 429 || status >= 500) return "overloaded";
  return "other";
}

/** A failure's model cause, or null when it is not a model call's failure. */
export function modelFailureCause(error: unknown): ModelFailureCause | null {
  return error instanceof ModelCallError ? error.failureCause : null;
}

/** The embedding service failed (after retries) or returned something unusable. */
export class EmbeddingError extends AppError {
  constructor(message: string) {
    super("embedding", 502, message);
  }
}

/**
 * The embedder's vectors do not fit the vector index (e.g. EMBEDDING_DIMENSIONS changed after the
 * index was created). Never a silent drop: the write is refused and the memory stays unembedded.
 */
export class DimensionMismatchError extends AppError {
  constructor(input: { expected: number; actual: number; where: string }) {
    super(
      "dimension_mismatch",
      503,
      `embedding dimension ${input.actual} does not match the vector index's ${input.expected} (${input.where}); ` +
        "set EMBEDDING_DIMENSIONS/EMBEDDING_MODEL to match the index, or create a new index (see docs/memory.md)",
      { expected: input.expected, actual: input.actual },
    );
  }
}

export class InternalError extends AppError {
  constructor(message: string) {
    super("internal", 500, message);
  }
}

/** Rebuilds a typed error from its RPC-safe form. */
export function fromSerialized(error: SerializedError): AppError {
  return new AppError(error.code, error.status, error.message, error.details);
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}
