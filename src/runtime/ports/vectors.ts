// Embeddings and the vector index: the Embedder interface and the records, queries and matches of
// a VectorIndex (Vectorize, or the local index in D1).
import type { MemoryType } from "./memory.ts";

/** Turns text into unit-length vectors of a fixed dimension. */
export interface Embedder {
  /** Which embedder, e.g. "local:hash-v1", "openai:text-embedding-3-small". */
  readonly id: string;
  readonly kind: "openai" | "workers-ai" | "local";
  readonly dimensions: number;
  /** Most texts one call may carry; callers batch to this. */
  readonly maxBatch: number;
  /** One L2-normalized vector per text, in order. Throws when the service fails or a size is wrong. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /**
   * For an embedder chosen by what the vector index holds: settles which one it is. Callers that
   * read `id` or `dimensions` before embedding anything await it first.
   */
  ready?(): Promise<void>;
  /** Whether a text's vector is at hand, so embedding it now costs no call (recent-vectors.ts). */
  known?(text: string): boolean;
  /**
   * Texts to send along with the next call instead of in a call of their own (a reply, whose
   * vector nobody waits for, rides with the next turn's query). Their vectors are then known.
   */
  later?(texts: string[]): void;
}

/** What a vector is filtered by; mirrors its memory's columns. */
export interface VectorMetadata {
  agentId: string;
  type: MemoryType;
  roomId: string | null;
  userId: string | null;
}

export interface VectorRecord {
  /** The memory's id (at most 64 characters, Vectorize's id limit). */
  id: string;
  values: Float32Array;
  metadata: VectorMetadata;
}

export interface VectorQuery {
  agentId: string;
  vector: Float32Array;
  topK: number;
  types?: MemoryType[];
  roomId?: string;
  userId?: string;
}

export interface VectorMatch {
  id: string;
  /** Cosine similarity, -1..1. */
  score: number;
}

/**
 * Nearest-neighbour search over memory vectors, one namespace per agent. Writes may become
 * visible to queries later (Vectorize is eventually consistent): callers never rely on
 * read-after-write.
 */
export interface VectorIndex {
  readonly kind: "vectorize" | "local";
  /** The index's dimension, or null when it has none yet (an empty local index). */
  dimensions(): Promise<number | null>;
  /** Throws `DimensionMismatchError` if a vector's length is not the index's dimension. */
  upsert(records: VectorRecord[]): Promise<void>;
  /**
   * An index kept in D1 (the local one): `upsert`, and the records' memories marked embedded at
   * `at`, in one transaction. Without it, the caller marks them once `upsert` has returned.
   */
  upsertEmbedded?(records: VectorRecord[], at: number): Promise<void>;
  query(query: VectorQuery): Promise<VectorMatch[]>;
  /**
   * The same query in two stages, for an index that ranks in this isolate (the local one): `early`
   * at once, from what it holds already, best first (a caller reads those memories' rows while the
   * index catches up), and `final`, what `query` answers. null when it holds nothing to rank yet
   * (then `query`). Not every `early` match survives into `final`, nor the other way round.
   */
  queryStaged?(query: VectorQuery): { early: VectorMatch[]; final: Promise<VectorMatch[]> } | null;
  delete(agentId: string, ids: string[]): Promise<void>;
  /**
   * Search found these ids' memories gone: an index that caches (the local one) stops returning
   * them. Their stored vectors went with their memories; nothing is written.
   */
  forget?(agentId: string, ids: string[]): void;
}
