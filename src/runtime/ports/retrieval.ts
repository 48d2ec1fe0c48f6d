// Retrieval as a turn asks for it: the query, what comes back (with its score and where it came
// from), the timings of its legs, and the MemoryRetriever interface (hybrid search in src/db/memory/).
import type { Memory, MemoryType } from "./memory.ts";

export interface RetrievalQuery {
  agentId: string;
  text: string;
  types?: MemoryType[];
  roomId?: string;
  userId?: string;
  /** With `userId`: also facts any user shared. */
  includeShared?: boolean;
  limit: number;
  /**
   * Memories the prompt already shows (the recent history): never results, neither as hits nor as
   * neighbours, and left out before the legs keep their best candidates, so `limit` counts only
   * what is new to the prompt.
   */
  excludeIds?: string[];
  /**
   * Minimum vector similarity (0..1); memories not embedded yet are kept when their text matches,
   * and the neighbouring messages of a hit that passes come with it.
   */
  threshold?: number;
}

export interface RetrievedMemory {
  memory: Memory;
  /** Fused and re-ranked score, 0..1 (src/runtime/retrieval/fusion.ts, rerank.ts). */
  score: number;
  /** Cosine similarity to the query, when the vector leg found it. */
  similarity: number | null;
  /** "neighbour": the message before or after a hit in its room (neighbour expansion). */
  matchedBy: Array<"text" | "vector" | "neighbour">;
  embedded: boolean;
}

/**
 * How a turn's wait for its query's embedding went (src/runtime/retrieval/query-embedding.ts):
 * - `none`: no embedding was asked for (a greeting, no long-term memory) or none is possible (no
 *   vector index, or the embedder failed: its failure is logged where it happened);
 * - `embedded`: the vector came within the budget;
 * - `late`: the budget ran out first; the turn searched by text alone.
 */
export type QueryEmbeddingOutcome = "none" | "embedded" | "late";

/** Wall time per leg of one search, in ms: embed the query, full text, vectors, then read the best hits' rows and neighbours. */
export type SearchTimings = Partial<Record<"embed" | "text" | "vector" | "load", number>>;

/** Hybrid (full-text + vector) search over one agent's memories, and what it knows about a person. */
export interface MemoryRetriever {
  /** The query's vector, or null when no vector search is possible (then text search alone runs). */
  embedQuery(text: string): Promise<Float32Array | null>;
  /**
   * `vector` from embedQuery (so a turn embeds its query once), or the promise of it: the
   * full-text leg does not wait for it; undefined embeds it here. `timings`, when given, receives
   * each leg's wall time in ms (for Server-Timing).
   */
  search(
    query: RetrievalQuery,
    vector?: Float32Array | null | Promise<Float32Array | null>,
    timings?: SearchTimings,
  ): Promise<RetrievedMemory[]>;
  /** A user's facts and description (any room), plus facts marked shared; newest first. */
  aboutUser(query: { agentId: string; userId: string; limit: number }): Promise<Memory[]>;
  /** A document's fragments at the given positions. */
  fragments(query: { agentId: string; documentId: string; positions: number[] }): Promise<Memory[]>;
}
