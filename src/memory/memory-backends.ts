// Builds the memory stack for one environment: the embedder the configuration picks, the vector
// index (Vectorize when the VECTORS binding exists, else the local index in D1), hybrid retrieval
// and the embedding pipeline. The worker and every room object get the same wiring from here.
import { drizzle } from "drizzle-orm/d1";
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { createEmbedder } from "../model/embedder.ts";
import type { Embedder, MemoryRetriever, VectorIndex } from "../runtime/types.ts";
import type { Db } from "./d1-memory-store.ts";
import { createEmbeddingPipeline, type EmbeddingPipeline } from "./embedding-pipeline.ts";
import { createHybridSearch } from "./hybrid-search.ts";
import { createLocalVectorIndex } from "./local-vector-index.ts";
import { createVectorizeIndex } from "./vectorize-index.ts";

export interface MemoryBackends {
  db: Db;
  embedder: Embedder;
  index: VectorIndex;
  retriever: MemoryRetriever;
  pipeline: EmbeddingPipeline;
}

const cache = new WeakMap<object, MemoryBackends>();

export function memoryBackends(env: Env): MemoryBackends {
  const cached = cache.get(env);
  if (cached) return cached;
  const config = loadConfig(env);
  const db = drizzle(env.DB);
  const vectorize = env.VECTORS ? createVectorizeIndex(env.VECTORS) : null;
  const index = vectorize ?? createLocalVectorIndex(db);
  // Without EMBEDDING_MODEL, the embedder whose size the index already holds keeps serving it.
  const embedder = createEmbedder(config, () => index.dimensions());
  const backends: MemoryBackends = {
    db,
    embedder,
    index,
    retriever: createHybridSearch({ db, index, embedder, vectorWeight: vectorWeightFor(embedder) }),
    pipeline: createEmbeddingPipeline({ db, embedder, index, now: () => Date.now(), deleteLegacyVectors: vectorize ? (ids) => vectorize.deleteLegacy(ids) : undefined }),
  };
  cache.set(env, backends);
  return backends;
}

/**
 * The hashed local embedder is lexical, like BM25 but without term weighting: on LoCoMo it scores
 * R@10 42 against FTS5's 63, and an equal vote lowers the fused result to 54. It keeps a small
 * vote (ties, misspellings, queries FTS5 finds nothing for). A semantic embedder votes fully.
 */
export const LOCAL_VECTOR_WEIGHT = 0.1;

function vectorWeightFor(embedder: Embedder): number {
  return embedder.kind === "local" ? LOCAL_VECTOR_WEIGHT : 1;
}
