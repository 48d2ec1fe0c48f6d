// ChatModel over any OpenAI-compatible Chat Completions API, through the `openai` package with its
// own retries switched off: we retry here (backoff with jitter, Retry-After, per-attempt timeout)
// and turn every final failure into one ModelCallError whose `failover` says if another model helps.

import { sha256Hex } from "../runtime/util/hashing.ts";
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { ModelCallError, ModelNotConfiguredError } from "../runtime/util/errors.ts";
import type { ChatModel, ChatRequest, ChatResponse } from "../runtime/ports/model.ts";
import { parseOpenAICompletion, toOpenAIMessages, toOpenAITools } from "./openai-mapping.ts";
import { collectStream } from "./openai-stream.ts";
import {
  MAX_SERVER_RETRY_DELAY_MS,
  isRetryableStatus,
  resolveRetryPolicy,
  serverRetryDelayMs,
  type RetryOptions,
  type RetryPolicy,
  type Sleep,
} from "../runtime/util/retry.ts";
import { retrying, type RetryAdvice } from "../runtime/util/retry.ts";

export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/** Upstream error text quoted in our messages is cut to this length. */
const MAX_UPSTREAM_MESSAGE_CHARS = 200;

export interface OpenAIChatModelOptions {
  apiKey: string;
  baseURL: string;
  fetch: typeof fetch;
  /** Send `prompt_cache_key` with requests that carry a cache scope (default: yes). */
  promptCacheKey?: boolean;
  /** Per attempt, not per call. */
  timeoutMs?: number;
  retry?: RetryOptions;
  sleep?: Sleep;
  random?: () => number;
  /** For Retry-After given as an HTTP-date. */
  now?: () => number;
}

type AttemptFailure =
  | {
      kind: "http";
      status: number;
      retryable: boolean;
      serverDelayMs?: number;
      upstreamMessage?: string;
      requestId?: string;
    }
  | { kind: "timeout" }
  | { kind: "network"; detail: string }
  | { kind: "malformed"; detail: string }
  | { kind: "client"; detail: string };

type AttemptOutcome = { ok: true; response: ChatResponse } | { ok: false; failure: AttemptFailure };

interface CallContext {
  client: OpenAI;
  /** The endpoint's origin, for the operator's error messages (never a path or a key). */
  endpoint: string;
  sendCacheKey: boolean;
  apiKey: string;
  timeoutMs: number;
  policy: RetryPolicy;
  sleep: Sleep | undefined;
  random: () => number;
  now: () => number;
}

export function createOpenAIChatModel(options: OpenAIChatModelOptions): ChatModel {
  if (!options.apiKey) throw new ModelNotConfiguredError("OPENAI_API_KEY is not set");
  const timeoutMs = options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  const client = createOpenAIClient({ ...options, timeoutMs });
  const context: CallContext = {
    client,
    endpoint: originOf(options.baseURL),
    sendCacheKey: options.promptCacheKey ?? true,
    apiKey: options.apiKey,
    timeoutMs,
    policy: resolveRetryPolicy(options.retry),
    sleep: options.sleep,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
  };
  return { backend: "openai", complete: (request) => completeWithRetries(context, request) };
}

async function completeWithRetries(
  context: CallContext,
  request: ChatRequest,
): Promise<ChatResponse> {
  const { signal } = request;
  const params = toCreateParams(
    request,
    context.sendCacheKey ? await promptCacheKey(request.cacheScope) : undefined,
  );
  const result = await retrying(
    async (attempt) => {
      const outcome = await attemptOnce(context, params, request, attempt);
      if (outcome.ok) return { ok: true, value: outcome.response };
      return { ok: false, failure: outcome.failure, retry: adviceFor(outcome.failure) };
    },
    { policy: context.policy, sleep: context.sleep, random: context.random, signal },
  );
  if (result.ok) return result.value;
  // A server wait past the cap would stall the turn; another model is the better bet.
  throw toModelCallError(
    context,
    request.model,
    result.failure,
    result.attempts,
    result.tooLongWaitMs,
  );
}

async function attemptOnce(
  context: CallContext,
  params: ChatCompletionCreateParamsNonStreaming,
  request: ChatRequest,
  attempt: number,
): Promise<AttemptOutcome> {
  const requestOptions = {
    signal: request.signal,
    timeout: context.timeoutMs,
    maxRetries: 0,
    // The SDK reports its own retries in this header; ours would always read 0 without this.
    headers: { "x-stainless-retry-count": String(attempt - 1) },
  };
  const onText = request.onText;
  try {
    if (onText) {
      // Usage arrives in a last chunk without choices, only when asked for.
      const stream = await context.client.chat.completions.create(
        { ...params, stream: true, stream_options: { include_usage: true } },
        requestOptions,
      );
      const streamed = await collectStream(stream, request.model, onText);
      return streamed.ok
        ? streamed
        : { ok: false, failure: { kind: "malformed", detail: streamed.problem } };
    }
    const body: unknown = await context.client.chat.completions.create(params, requestOptions);
    const parsed = parseOpenAICompletion(body, request.model);
    return parsed.ok
      ? parsed
      : { ok: false, failure: { kind: "malformed", detail: parsed.problem } };
  } catch (error) {
    // The caller's abort is not a model failure: surface the caller's own reason, untouched.
    if (request.signal?.aborted) throw request.signal.reason;
    return { ok: false, failure: classifyError(error, context.now()) };
  }
}

/**
 * The SDK client for an OpenAI-compatible endpoint, our retries only (maxRetries 0). Explicit
 * nulls: with nodejs_compat, process.env mirrors worker vars and the SDK would otherwise pick up
 * OPENAI_ORG_ID / OPENAI_PROJECT_ID / OPENAI_ADMIN_KEY behind our back; OPENAI_LOG=debug would
 * make it log full request details.
 */
export function createOpenAIClient(options: {
  apiKey: string;
  baseURL?: string;
  fetch?: typeof fetch;
  timeoutMs: number;
}): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    fetch: options.fetch,
    maxRetries: 0,
    timeout: options.timeoutMs,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    logLevel: "warn",
  });
}

function toCreateParams(
  request: ChatRequest,
  cacheKey: string | undefined,
): ChatCompletionCreateParamsNonStreaming {
  const params: ChatCompletionCreateParamsNonStreaming = {
    model: request.model,
    messages: toOpenAIMessages(request.messages),
  };
  // OpenAI routes requests with one key to the same cache, so a room's turns find their prefix.
  if (cacheKey) params.prompt_cache_key = cacheKey;
  const tools = toOpenAITools(request.tools);
  if (tools) params.tools = tools;
  if (request.temperature !== undefined) params.temperature = request.temperature;
  // `max_tokens` is deprecated and rejected by reasoning models; this one works everywhere.
  if (request.maxOutputTokens !== undefined) params.max_completion_tokens = request.maxOutputTokens;
  return params;
}

/** Hex characters of the SHA-256 kept in a `prompt_cache_key`: stable, short, no ids in clear. */
const PROMPT_CACHE_KEY_HEX_CHARS = 32;

/**
 * The scope as OpenAI sees it: a hash, since a room id may carry a platform user id and the key is
 * stored with the request on the provider's side. Same scope, same key, across isolates and deploys.
 */
export async function promptCacheKey(scope: string | undefined): Promise<string | undefined> {
  if (!scope) return undefined;
  return `ea-${(await sha256Hex(scope)).slice(0, PROMPT_CACHE_KEY_HEX_CHARS)}`;
}

function classifyError(error: unknown, nowMs: number): AttemptFailure {
  // Order matters: the timeout and abort errors are subclasses of APIConnectionError/APIError.
  if (error instanceof APIConnectionTimeoutError) return { kind: "timeout" };
  if (error instanceof APIUserAbortError) return { kind: "network", detail: "request aborted" };
  if (error instanceof APIConnectionError) {
    const cause = error.cause instanceof Error ? error.cause.message : undefined;
    return { kind: "network", detail: cause ?? error.message };
  }
  if (error instanceof APIError && typeof error.status === "number") {
    const status = error.status;
    // OpenAI's own hint; we only obey its "no", so a 4xx marked retryable still fails fast.
    const serverSaysNo = error.headers?.get("x-should-retry") === "false";
    return {
      kind: "http",
      status,
      retryable: isRetryableStatus(status) && !serverSaysNo,
      serverDelayMs: serverRetryDelayMs(error.headers, nowMs),
      upstreamMessage: upstreamMessageOf(error.error),
      requestId: error.requestID ?? undefined,
    };
  }
  // The SDK parses JSON bodies itself; a 200 whose body is not JSON surfaces as a SyntaxError.
  if (error instanceof SyntaxError)
    return { kind: "malformed", detail: "response body is not valid JSON" };
  return { kind: "client", detail: error instanceof Error ? error.message : String(error) };
}

/** Retried: the server's own wait when it named one, else backoff; never a client error. */
function adviceFor(failure: AttemptFailure): RetryAdvice {
  if (!isRetryable(failure)) return "final";
  if (failure.kind === "http" && failure.serverDelayMs !== undefined)
    return { afterMs: failure.serverDelayMs };
  return "backoff";
}

function isRetryable(failure: AttemptFailure): boolean {
  switch (failure.kind) {
    case "http":
      return failure.retryable;
    case "timeout":
    case "network":
    case "malformed":
      return true;
    case "client":
      return false;
  }
}

function toModelCallError(
  context: CallContext,
  model: string,
  failure: AttemptFailure,
  attempts: number,
  refusedDelayMs?: number,
): ModelCallError {
  const after = `after ${attempts} attempt${attempts === 1 ? "" : "s"}`;
  const build = (message: string, failover: boolean, upstreamStatus?: number): ModelCallError =>
    new ModelCallError({
      model,
      message: redact(message, context.apiKey),
      failover,
      upstreamStatus,
      cause:
        failure.kind === "timeout" || failure.kind === "network"
          ? "unreachable"
          : failure.kind === "malformed"
            ? "invalid_reply"
            : undefined,
    });
  switch (failure.kind) {
    case "http": {
      const { status } = failure;
      if (status === 401 || status === 403) {
        // Never quote the upstream text here: OpenAI echoes a masked fragment of the key.
        return build(
          `model ${model}: HTTP ${status}, the model API rejected the credentials; check OPENAI_API_KEY`,
          false,
          status,
        );
      }
      // The request id is what OpenAI support asks for; the upstream text says what was wrong.
      const id = failure.requestId ? ` (request ${failure.requestId})` : "";
      const quoted = `${id}${failure.upstreamMessage ? `: ${failure.upstreamMessage}` : ""}`;
      if (refusedDelayMs !== undefined) {
        const asked = Math.ceil(refusedDelayMs / 1000);
        const cap = MAX_SERVER_RETRY_DELAY_MS / 1000;
        return build(
          `model ${model}: HTTP ${status} ${after}; server asked to retry in ${asked} s, more than the ${cap} s we wait${quoted}`,
          true,
          status,
        );
      }
      if (status === 404)
        return build(
          `model ${model}: HTTP 404 (unknown model or endpoint)${quoted}; check MODEL, SMALL_MODEL and OPENAI_BASE_URL (${context.endpoint})`,
          true,
          status,
        );
      const failover = isRetryableStatus(status);
      return build(`model ${model}: HTTP ${status} ${after}${quoted}`, failover, status);
    }
    case "timeout":
      return build(
        `model ${model}: no answer within ${context.timeoutMs} ms ${after}; ${unreachableHint(context)}`,
        true,
      );
    case "network":
      return build(
        `model ${model}: network error ${after}: ${failure.detail}; ${unreachableHint(context)}`,
        true,
      );
    case "malformed":
      return build(`model ${model}: malformed output ${after}: ${failure.detail}`, true);
    case "client":
      return build(`model ${model}: client error: ${failure.detail}`, false);
  }
}

/** What an operator checks when the endpoint does not answer: where it is, and the variable. */
function unreachableHint(context: CallContext): string {
  return `is the endpoint at ${context.endpoint} (OPENAI_BASE_URL) up and reachable?`;
}

function originOf(baseURL: string): string {
  try {
    return new URL(baseURL).origin;
  } catch {
    return "OPENAI_BASE_URL";
  }
}

function upstreamMessageOf(errorBody: unknown): string | undefined {
  if (typeof errorBody !== "object" || errorBody === null || !("message" in errorBody))
    return undefined;
  const message = errorBody.message;
  if (typeof message !== "string" || message.length === 0) return undefined;
  return message.length > MAX_UPSTREAM_MESSAGE_CHARS
    ? `${message.slice(0, MAX_UPSTREAM_MESSAGE_CHARS)}…`
    : message;
}

/** Belt and braces: whatever an upstream or transport error says, the key never leaves here. */
function redact(message: string, apiKey: string): string {
  return message.split(apiKey).join("[redacted]");
}
