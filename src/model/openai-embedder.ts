// Embedder over any OpenAI-compatible /embeddings endpoint, through the `openai` package with its
// own retries off (we retry 429/5xx/timeouts here, as the chat client does). Inputs go in batches
// of 100; each answer is zod-checked (one vector per input, ordered by `index`, of the configured
// size) and normalized. Every failure is an EmbeddingError that names the model, never the key.
import type OpenAI from "openai";
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { createOpenAIClient } from "./openai-chat.ts";
import { z } from "zod";
import { EmbeddingError } from "../runtime/util/errors.ts";
import { unitVector } from "../runtime/retrieval/hash-embedder.ts";
import type { Embedder } from "../runtime/ports/vectors.ts";
import {
  isRetryableStatus,
  resolveRetryPolicy,
  serverRetryDelayMs,
  type RetryOptions,
  type RetryPolicy,
  type Sleep,
} from "../runtime/util/retry.ts";
import { retrying, type AttemptOutcome } from "../runtime/util/retry.ts";

/** Inputs per request; OpenAI takes more, but smaller batches fail and retry more cheaply. */
export const OPENAI_EMBEDDING_MAX_BATCH = 100;
export const DEFAULT_EMBEDDING_TIMEOUT_MS = 30_000;
/** Only these models accept a requested output size (`dimensions`); others have a fixed one. */
const ACCEPTS_DIMENSIONS = /^text-embedding-3-/;

export interface OpenAIEmbedderOptions {
  apiKey: string;
  baseURL: string;
  model: string;
  dimensions: number;
  fetch: typeof fetch;
  /** Per attempt, not per call. */
  timeoutMs?: number;
  retry?: RetryOptions;
  sleep?: Sleep;
  random?: () => number;
  /** For Retry-After given as an HTTP-date. */
  now?: () => number;
}

// zod 4's number() already refuses NaN and ±Infinity.
const EmbeddingsResponse = z.object({
  data: z.array(z.object({ index: z.int().min(0), embedding: z.array(z.number()) })),
});

type Failure =
  | { kind: "http"; status: number; retryable: boolean; serverDelayMs?: number }
  | { kind: "timeout" }
  | { kind: "network"; detail: string }
  | { kind: "malformed"; detail: string }
  | { kind: "client"; detail: string };

interface Context {
  client: OpenAI;
  options: OpenAIEmbedderOptions;
  timeoutMs: number;
  policy: RetryPolicy;
  sleep: Sleep | undefined;
  random: () => number;
  now: () => number;
}

export function createOpenAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  if (!Number.isInteger(options.dimensions) || options.dimensions < 1) {
    throw new EmbeddingError(
      `embedding model ${options.model}: dimensions must be a positive whole number`,
    );
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_EMBEDDING_TIMEOUT_MS;
  const client = createOpenAIClient({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    fetch: options.fetch,
    timeoutMs,
  });
  const context: Context = {
    client,
    options,
    timeoutMs,
    policy: resolveRetryPolicy(options.retry),
    sleep: options.sleep,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
  };
  return {
    id: `openai:${options.model}`,
    kind: "openai",
    dimensions: options.dimensions,
    maxBatch: OPENAI_EMBEDDING_MAX_BATCH,
    async embed(texts, signal) {
      const vectors: Float32Array[] = [];
      // Sequential: a 429 on one batch should slow the rest down, not meet them in flight.
      for (let start = 0; start < texts.length; start += OPENAI_EMBEDDING_MAX_BATCH) {
        vectors.push(
          ...(await embedBatch(
            context,
            texts.slice(start, start + OPENAI_EMBEDDING_MAX_BATCH),
            signal,
          )),
        );
      }
      return vectors;
    },
  };
}

async function embedBatch(
  context: Context,
  texts: string[],
  signal: AbortSignal | undefined,
): Promise<Float32Array[]> {
  const { model, dimensions } = context.options;
  const params = {
    model,
    input: texts,
    encoding_format: "float" as const,
    ...(ACCEPTS_DIMENSIONS.test(model) ? { dimensions } : {}),
  };
  const attempt = async (n: number): Promise<AttemptOutcome<Float32Array[], Failure>> => {
    let failure: Failure;
    try {
      const body: unknown = await context.client.embeddings.create(params, {
        signal,
        timeout: context.timeoutMs,
        maxRetries: 0,
        headers: { "x-stainless-retry-count": String(n - 1) },
      });
      const parsed = toVectors(body, texts.length, context.options);
      if (parsed.ok) return { ok: true, value: parsed.vectors };
      failure = { kind: "malformed", detail: parsed.problem };
    } catch (error) {
      // The caller's abort is not a service failure: surface the caller's own reason.
      if (signal?.aborted) throw signal.reason;
      // A vector of the wrong size is a configuration problem; asking again will not fix it.
      if (error instanceof EmbeddingError) throw error;
      failure = classify(error, context.now());
    }
    if (!isRetryable(failure)) return { ok: false, failure, retry: "final" };
    const serverDelayMs = failure.kind === "http" ? failure.serverDelayMs : undefined;
    return {
      ok: false,
      failure,
      retry: serverDelayMs === undefined ? "backoff" : { afterMs: serverDelayMs },
    };
  };
  const result = await retrying(attempt, {
    policy: context.policy,
    sleep: context.sleep,
    random: context.random,
    signal,
  });
  if (result.ok) return result.value;
  throw toEmbeddingError(context, result.failure, result.attempts, result.tooLongWaitMs);
}

/**
 * One unit vector per input in input order, or the problem. A vector of the wrong size throws at
 * once (EmbeddingError) instead of being reported as retryable malformed output.
 */
function toVectors(
  body: unknown,
  expected: number,
  options: { model: string; dimensions: number },
): { ok: true; vectors: Float32Array[] } | { ok: false; problem: string } {
  const parsed = EmbeddingsResponse.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      problem: issue ? `${issue.path.join(".") || "body"}: ${issue.message}` : "unexpected body",
    };
  }
  const { data } = parsed.data;
  if (data.length !== expected)
    return { ok: false, problem: `${data.length} vectors for ${expected} inputs` };
  const vectors: Array<Float32Array | undefined> = new Array(expected);
  for (const item of data) {
    if (item.index >= expected || vectors[item.index] !== undefined) {
      return { ok: false, problem: `index ${item.index} is out of range or repeated` };
    }
    if (item.embedding.length !== options.dimensions) {
      throw new EmbeddingError(
        `embedding model ${options.model} returned ${item.embedding.length}-dimensional vectors, expected ${options.dimensions}; ` +
          "set EMBEDDING_DIMENSIONS to the model's size (and use a vector index of that size)",
      );
    }
    const unit = unitVector(item.embedding);
    if (!unit) return { ok: false, problem: `vector ${item.index} is all zeros` };
    vectors[item.index] = unit;
  }
  // Lengths match and no index repeats, so every slot is filled.
  return { ok: true, vectors: vectors as Float32Array[] };
}

function classify(error: unknown, nowMs: number): Failure {
  // Order matters: the timeout and abort errors are subclasses of APIConnectionError/APIError.
  if (error instanceof APIConnectionTimeoutError) return { kind: "timeout" };
  if (error instanceof APIUserAbortError) return { kind: "network", detail: "request aborted" };
  if (error instanceof APIConnectionError) {
    return {
      kind: "network",
      detail: error.cause instanceof Error ? error.cause.message : error.message,
    };
  }
  if (error instanceof APIError && typeof error.status === "number") {
    const serverSaysNo = error.headers?.get("x-should-retry") === "false";
    return {
      kind: "http",
      status: error.status,
      retryable: isRetryableStatus(error.status) && !serverSaysNo,
      serverDelayMs: serverRetryDelayMs(error.headers, nowMs),
    };
  }
  // The SDK parses JSON itself; a 200 whose body is not JSON surfaces as a SyntaxError.
  if (error instanceof SyntaxError)
    return { kind: "malformed", detail: "response body is not valid JSON" };
  return { kind: "client", detail: error instanceof Error ? error.message : String(error) };
}

function isRetryable(failure: Failure): boolean {
  if (failure.kind === "http") return failure.retryable;
  return failure.kind !== "client";
}

function toEmbeddingError(
  context: Context,
  failure: Failure,
  attempts: number,
  refusedDelayMs?: number,
): EmbeddingError {
  const { model, apiKey } = context.options;
  const after = `after ${attempts} attempt${attempts === 1 ? "" : "s"}`;
  let message: string;
  switch (failure.kind) {
    case "http":
      // Upstream error text is never quoted: OpenAI echoes a masked fragment of a rejected key.
      if (failure.status === 401 || failure.status === 403) {
        message = `embedding model ${model}: HTTP ${failure.status}, the API rejected the credentials; check OPENAI_API_KEY`;
      } else if (failure.status === 404) {
        message = `embedding model ${model}: HTTP 404 (unknown model or endpoint); check EMBEDDING_MODEL and OPENAI_BASE_URL`;
      } else if (refusedDelayMs !== undefined) {
        message = `embedding model ${model}: HTTP ${failure.status} ${after}; server asked to retry in ${Math.ceil(refusedDelayMs / 1000)} s`;
      } else {
        message = `embedding model ${model}: HTTP ${failure.status} ${after}`;
      }
      break;
    case "timeout":
      message = `embedding model ${model}: no answer within ${context.timeoutMs} ms ${after}`;
      break;
    case "network":
      message = `embedding model ${model}: network error ${after}: ${failure.detail}`;
      break;
    case "malformed":
      message = `embedding model ${model}: malformed response ${after}: ${failure.detail}`;
      break;
    case "client":
      message = `embedding model ${model}: client error: ${failure.detail}`;
      break;
  }
  // Belt and braces: whatever a transport error says, the key never leaves here.
  return new EmbeddingError(apiKey ? message.split(apiKey).join("[redacted]") : message);
}
