// Embedder over Workers AI text-embedding models (`env.AI.run(model, { text })`), batched at 100
// texts, with the answer validated (shape and size) and normalized. Workers AI has no local
// simulator: locally and in tests the hashed embedder serves instead.
import { z } from "zod";
import { EmbeddingError } from "../runtime/errors.ts";
import type { Embedder } from "../runtime/types.ts";
import { normalize } from "./openai-embedder.ts";

export const WORKERS_AI_EMBEDDING_BATCH = 100;
export const DEFAULT_WORKERS_AI_EMBEDDING_MODEL = "@cf/baai/bge-base-en-v1.5";
/** Output sizes of the Workers AI embedding models we know. */
export const WORKERS_AI_EMBEDDING_DIMENSIONS: Record<string, number> = {
  "@cf/baai/bge-small-en-v1.5": 384,
  "@cf/baai/bge-base-en-v1.5": 768,
  "@cf/baai/bge-large-en-v1.5": 1024,
  "@cf/baai/bge-m3": 1024,
};

const EmbeddingOutput = z.object({ data: z.array(z.array(z.number().refine(Number.isFinite, "not a finite number"))) });

/** The part of the `Ai` binding this uses (a structural type, so tests can pass a fake). */
export interface AiRunner {
  run(model: string, input: { text: string[] }): Promise<unknown>;
}

export function createWorkersAIEmbedder(options: { ai: AiRunner; model: string; dimensions: number }): Embedder {
  return {
    id: `workers-ai:${options.model}`,
    kind: "workers-ai",
    dimensions: options.dimensions,
    maxBatch: WORKERS_AI_EMBEDDING_BATCH,
    async embed(texts) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += WORKERS_AI_EMBEDDING_BATCH) {
        const batch = texts.slice(i, i + WORKERS_AI_EMBEDDING_BATCH);
        let raw: unknown;
        try {
          raw = await options.ai.run(options.model, { text: batch });
        } catch (error) {
          throw new EmbeddingError(`Workers AI embedding with ${options.model} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
        const parsed = EmbeddingOutput.safeParse(raw);
        if (!parsed.success || parsed.data.data.length !== batch.length) {
          throw new EmbeddingError(`Workers AI returned a malformed embedding answer for ${options.model}`);
        }
        for (const values of parsed.data.data) {
          if (values.length !== options.dimensions) {
            throw new EmbeddingError(`${options.model} returned ${values.length}-dimensional vectors; expected ${options.dimensions}`);
          }
          out.push(normalize(values));
        }
      }
      return out;
    },
  };
}
