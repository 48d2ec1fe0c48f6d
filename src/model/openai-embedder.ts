// Embedder over any OpenAI-compatible /embeddings endpoint, through the `openai` package with its
// own retries off: batches of at most 100 inputs, 429/5xx/timeouts retried with backoff and jitter
// (Retry-After honoured), the response validated (one vector per input, in `index` order, of the
// configured size) and normalized. Failures become EmbeddingError; the key never appears in one.
import OpenAI, { APIConnectionError, APIError } from "openai";
import { z } from "zod";
import { EmbeddingError } from "../runtime/errors.ts";
import type { Embedder } from "../runtime/types.ts";
import { abortableSleep, backoffDelayMs, isRetryableStatus, MAX_SERVER_RETRY_DELAY_MS, resolveRetryPolicy, serverRetryDelayMs, type RetryOptions, type Sleep } from "./retry.ts";

export const OPENAI_EMBEDDING_BATCH = 100;
const EMBEDDING_TIMEOUT_MS = 30_000;

export interface OpenAIEmbedderOptions {
  apiKey: string;
  baseURL: string;
  model: string;
  dimensions: number;
  fetch: typeof fetch;
  retry?: RetryOptions;
  sleep?: Sleep;
  random?: () => number;
}

const EmbeddingResponse = z.object({
  data: z.array(z.object({ index: z.int().min(0), embedding: z.array(z.number().refine(Number.isFinite, "not a finite number")) })),
});

export function createOpenAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, fetch: options.fetch, maxRetries: 0, timeout: EMBEDDING_TIMEOUT_MS });
  const policy = resolveRetryPolicy(options.retry);
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  // Only the text-embedding-3 family accepts a requested size; others have a fixed one (checked below).
  const sendsDimensions = /^text-embedding-3/.test(options.model);

  const embedBatch = async (texts: string[], signal?: AbortSignal): Promise<Float32Array[]> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const raw: unknown = await client.embeddings.create(
          { model: options.model, input: texts, encoding_format: "float", ...(sendsDimensions ? { dimensions: options.dimensions } : {}) },
          { signal },
        );
        return toVectors(raw, texts.length, options);
      } catch (error) {
        if (error instanceof EmbeddingError || signal?.aborted) throw error;
        const status = error instanceof APIError ? error.status : undefined;
        const retryable = error instanceof APIConnectionError || (status !== undefined && isRetryableStatus(status));
        if (!retryable || attempt >= policy.maxAttempts) {
          const what = status !== undefined ? `HTTP ${status}` : error instanceof APIConnectionError ? "the endpoint is unreachable" : "an unexpected error";
          throw new EmbeddingError(`embedding with ${options.model} failed after ${attempt} attempt(s): ${what}`);
        }
        const asked = error instanceof APIError ? serverRetryDelayMs(error.headers as Headers | undefined, Date.now()) : undefined;
        await sleep(asked !== undefined && asked <= MAX_SERVER_RETRY_DELAY_MS ? asked : backoffDelayMs(attempt, policy, random), signal);
      }
    }
  };

  return {
    id: `openai:${options.model}`,
    kind: "openai",
    dimensions: options.dimensions,
    maxBatch: OPENAI_EMBEDDING_BATCH,
    async embed(texts, signal) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += OPENAI_EMBEDDING_BATCH) {
        out.push(...(await embedBatch(texts.slice(i, i + OPENAI_EMBEDDING_BATCH), signal)));
      }
      return out;
    },
  };
}

function toVectors(raw: unknown, expected: number, options: { model: string; dimensions: number }): Float32Array[] {
  const parsed = EmbeddingResponse.safeParse(raw);
  if (!parsed.success) throw new EmbeddingError(`the embeddings response of ${options.model} is malformed`);
  const byIndex = new Map(parsed.data.data.map((item) => [item.index, item.embedding]));
  const vectors: Float32Array[] = [];
  for (let i = 0; i < expected; i++) {
    const values = byIndex.get(i);
    if (!values) throw new EmbeddingError(`the embeddings response of ${options.model} has no vector for input ${i}`);
    if (values.length !== options.dimensions) {
      throw new EmbeddingError(`${options.model} returned ${values.length}-dimensional vectors; EMBEDDING_DIMENSIONS is ${options.dimensions}`);
    }
    vectors.push(normalize(values));
  }
  return vectors;
}

/** Unit length, so a dot product is the cosine; a zero vector stays zero. */
export function normalize(values: ArrayLike<number>): Float32Array {
  const vector = Float32Array.from(values);
  let norm = 0;
  for (const v of vector) norm += v * v;
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < vector.length; i++) vector[i]! *= scale;
  }
  return vector;
}
