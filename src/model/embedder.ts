// Builds the embedder the configuration names (OpenAI-compatible, Workers AI, or the local hashed
// one, see chooseEmbedding in config.ts) and describes it for /health and the memory stats, so an
// operator can see which vectors an index holds without reading the environment.
import type { Config } from "../config.ts";
import { createHashEmbedder } from "../runtime/hash-embedder.ts";
import type { Embedder } from "../runtime/types.ts";
import { createOpenAIEmbedder } from "./openai-embedder.ts";
import { createWorkersAIEmbedder } from "./workers-ai-embedder.ts";

export interface EmbedderDescription {
  backend: Embedder["kind"];
  id: string;
  dimensions: number;
}

export function createEmbedder(config: Config): Embedder {
  const backend = config.embedding;
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
      return createWorkersAIEmbedder({ ai: backend.ai, model: backend.model, dimensions: backend.dimensions });
    case "local":
      return createHashEmbedder({ dimensions: backend.dimensions });
  }
}

export function describeEmbedder(embedder: Embedder): EmbedderDescription {
  return { backend: embedder.kind, id: embedder.id, dimensions: embedder.dimensions };
}
