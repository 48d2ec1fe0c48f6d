// Picks the embedder the configuration names (OpenAI-compatible, Workers AI, or the local hashed
// one) and describes it for /health and the stats endpoint.
import type { Config } from "../config.ts";
import { createHashEmbedder } from "../runtime/hash-embedder.ts";
import type { Embedder } from "../runtime/types.ts";
import { createOpenAIEmbedder } from "./openai-embedder.ts";
import { createWorkersAIEmbedder } from "./workers-ai-embedder.ts";

export function createEmbedder(config: Config): Embedder {
  const backend = config.embedding;
  switch (backend.kind) {
    case "openai":
      // Late-bound so anything that replaces globalThis.fetch (tests, stand-ins) is honoured.
      return createOpenAIEmbedder({ ...backend, fetch: (input, init) => fetch(input, init) });
    case "workers-ai":
      return createWorkersAIEmbedder({ ai: backend.ai as unknown as Parameters<typeof createWorkersAIEmbedder>[0]["ai"], model: backend.model, dimensions: backend.dimensions });
    case "local":
      return createHashEmbedder({ dimensions: backend.dimensions });
  }
}

export function describeEmbedder(embedder: Embedder): { backend: Embedder["kind"]; id: string; dimensions: number } {
  return { backend: embedder.kind, id: embedder.id, dimensions: embedder.dimensions };
}
