// Builds the memory stack for one environment: the embedder the configuration picks, the vector
// index (Vectorize when the VECTORS binding exists, else the local index in D1), hybrid retrieval
// and the embedding pipeline. The worker and every room object get the same wiring from here.
import { drizzle } from "drizzle-orm/d1";
import { loadConfig, type Env } from "../config.ts";
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
  const embedder = createEmbedder(config);
  const index = env.VECTORS ? createVectorizeIndex(env.VECTORS) : createLocalVectorIndex(db);
  const backends: MemoryBackends = {
    db,
    embedder,
    index,
    retriever: createHybridSearch({ db, index, embedder }),
    pipeline: createEmbeddingPipeline({ db, embedder, index, now: () => Date.now() }),
  };
  cache.set(env, backends);
  return backends;
}
