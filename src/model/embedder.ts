// Builds the embedder the configuration names (OpenAI-compatible, Workers AI, or the local hashed
// one, see chooseEmbedding in config.ts) and describes it for /health and the memory stats, so an
// operator can see which vectors an index holds without reading the environment. Without an
// EMBEDDING_MODEL the index decides: an index that already holds vectors of another size keeps
// the embedder that wrote them (changing embedders stays an explicit re-embed).
import type { Config } from "../config.ts";
import { createHashEmbedder } from "../runtime/retrieval/hash-embedder.ts";
import type { Embedder } from "../runtime/ports/vectors.ts";
import { createOpenAIEmbedder } from "./openai-embedder.ts";
import { createWorkersAIEmbedder } from "./workers-ai-embedder.ts";

export interface EmbedderDescription {
  backend: Embedder["kind"];
  id: string;
  dimensions: number;
}

export function createEmbedder(
  config: Config,
  indexDimensions?: () => Promise<number | null>,
): Embedder {
  const preferred = embedderFor(config.embedding);
  const others = config.embeddingAlternatives
    .map(embedderFor)
    .filter((embedder) => embedder.id !== preferred.id);
  if (!indexDimensions || others.length === 0) return preferred;
  return pinnedEmbedder([preferred, ...others], indexDimensions);
}

function embedderFor(backend: Config["embedding"]): Embedder {
  switch (backend.kind) {
    case "openai":
      return createOpenAIEmbedder({
        apiKey: backend.apiKey,
        baseURL: backend.baseURL,
        model: backend.model,
        dimensions: backend.dimensions,
        // Late-bound, so whatever replaces globalThis.fetch later (tests, stand-ins) is used.
        fetch: (input, init) => fetch(input, init),
      });
    case "workers-ai":
      return createWorkersAIEmbedder({
        ai: backend.ai,
        model: backend.model,
        dimensions: backend.dimensions,
      });
    case "local":
      return createHashEmbedder({ dimensions: backend.dimensions });
  }
}

/**
 * The first candidate whose size is what the index holds (the preferred one for an empty index),
 * settled once per isolate before the first embedding, or by ready(). A failed read of the index
 * leaves the preferred one in place and is tried again on the next call.
 */
function pinnedEmbedder(
  candidates: Embedder[],
  indexDimensions: () => Promise<number | null>,
): Embedder {
  let current = candidates[0]!;
  let settled: Promise<void> | null = null;
  const ready = (): Promise<void> => {
    settled ??= indexDimensions().then(
      (dimensions) => {
        current =
          (dimensions !== null &&
            candidates.find((candidate) => candidate.dimensions === dimensions)) ||
          candidates[0]!;
      },
      () => {
        settled = null;
      },
    );
    return settled;
  };
  return {
    get id() {
      return current.id;
    },
    get kind() {
      return current.kind;
    },
    get dimensions() {
      return current.dimensions;
    },
    get maxBatch() {
      return current.maxBatch;
    },
    ready,
    async embed(texts, signal) {
      await ready();
      return current.embed(texts, signal);
    },
  };
}

export function describeEmbedder(embedder: Embedder): EmbedderDescription {
  return { backend: embedder.kind, id: embedder.id, dimensions: embedder.dimensions };
}
