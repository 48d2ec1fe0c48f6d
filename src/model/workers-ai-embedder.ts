// Embedder over Workers AI text-embedding models (`env.AI.run(model, { text })`), batched at 100
// texts, the answer zod-checked (one vector per text, the configured size) and normalized. The
// binding has no local simulator and no status codes: one retry, then an EmbeddingError; locally
// and in tests the hashed embedder serves instead.
import { z } from "zod";
import { EmbeddingError } from "../runtime/util/errors.ts";
import { unitVector } from "../runtime/retrieval/hash-embedder.ts";
import type { Embedder } from "../runtime/ports/vectors.ts";
import { runAbortably, truncate, type WorkersAIBinding } from "./workers-ai-chat.ts";

export const WORKERS_AI_EMBEDDING_MAX_BATCH = 100;
export const DEFAULT_WORKERS_AI_EMBEDDING_MODEL = "@cf/baai/bge-base-en-v1.5";
/** Output sizes of the Workers AI embedding models we know; others need EMBEDDING_DIMENSIONS. */
export const WORKERS_AI_EMBEDDING_DIMENSIONS: Readonly<Record<string, number>> = {
  "@cf/baai/bge-small-en-v1.5": 384,
  "@cf/baai/bge-base-en-v1.5": 768,
  "@cf/baai/bge-large-en-v1.5": 1024,
  "@cf/baai/bge-m3": 1024,
};
/** The first try plus one retry: the binding already retries internally, more rarely helps. */
const WORKERS_AI_EMBEDDING_ATTEMPTS = 2;

export interface WorkersAIEmbedderOptions {
  /** `env.AI`, or a fake with the same `run`. */
  ai: WorkersAIBinding;
  model: string;
  dimensions: number;
}

// `shape` is [texts, dimensions] when present; zod 4's number() refuses NaN and ±Infinity.
const EmbeddingOutput = z.object({
  shape: z.array(z.int()).optional(),
  data: z.array(z.array(z.number())),
});

export function createWorkersAIEmbedder(options: WorkersAIEmbedderOptions): Embedder {
  if (!Number.isInteger(options.dimensions) || options.dimensions < 1) {
    throw new EmbeddingError(
      `embedding model ${options.model}: dimensions must be a positive whole number`,
    );
  }
  return {
    id: `workers-ai:${options.model}`,
    kind: "workers-ai",
    dimensions: options.dimensions,
    maxBatch: WORKERS_AI_EMBEDDING_MAX_BATCH,
    async embed(texts, signal) {
      const vectors: Float32Array[] = [];
      for (let start = 0; start < texts.length; start += WORKERS_AI_EMBEDDING_MAX_BATCH) {
        vectors.push(
          ...(await embedBatch(
            options,
            texts.slice(start, start + WORKERS_AI_EMBEDDING_MAX_BATCH),
            signal,
          )),
        );
      }
      return vectors;
    },
  };
}

async function embedBatch(
  options: WorkersAIEmbedderOptions,
  texts: string[],
  signal: AbortSignal | undefined,
): Promise<Float32Array[]> {
  const { model } = options;
  let problem = "";
  for (let attempt = 1; attempt <= WORKERS_AI_EMBEDDING_ATTEMPTS; attempt++) {
    signal?.throwIfAborted();
    let output: unknown;
    try {
      output = await runAbortably(options.ai, model, { text: texts }, signal);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      problem = `Workers AI error: ${truncate(error instanceof Error ? error.message : String(error))}`;
      continue;
    }
    const parsed = toVectors(output, texts.length, options);
    if (parsed.ok) return parsed.vectors;
    problem = `malformed output: ${parsed.problem}`;
  }
  throw new EmbeddingError(
    `embedding model ${model}: ${problem} after ${WORKERS_AI_EMBEDDING_ATTEMPTS} attempts`,
  );
}

function toVectors(
  output: unknown,
  expected: number,
  options: { model: string; dimensions: number },
): { ok: true; vectors: Float32Array[] } | { ok: false; problem: string } {
  const parsed = EmbeddingOutput.safeParse(output);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      problem: issue
        ? `${issue.path.join(".") || "output"}: ${issue.message}`
        : "unexpected output",
    };
  }
  const { data, shape } = parsed.data;
  if (data.length !== expected)
    return { ok: false, problem: `${data.length} vectors for ${expected} texts` };
  const size = shape?.[1] ?? data[0]?.length;
  const wrong = data.find((values) => values.length !== options.dimensions);
  if (wrong || (expected > 0 && size !== options.dimensions)) {
    // Not worth a retry: the model's size and the configuration disagree.
    throw new EmbeddingError(
      `embedding model ${options.model} returned ${wrong?.length ?? size}-dimensional vectors, expected ${options.dimensions}; ` +
        "set EMBEDDING_DIMENSIONS to the model's size (and use a vector index of that size)",
    );
  }
  const vectors: Float32Array[] = [];
  for (const [i, values] of data.entries()) {
    const unit = unitVector(values);
    if (!unit) return { ok: false, problem: `vector ${i} is all zeros` };
    vectors.push(unit);
  }
  return { ok: true, vectors };
}
