// Hybrid retrieval over D1 and the vector index: the FTS5 leg and the vector leg run at once and
// are fused by reciprocal rank (src/runtime/fusion.ts). A memory not embedded yet is still found by
// its text; a vector index that fails or no longer fits the embedder degrades the search to text
// alone (logged) instead of failing the turn. Everything is scoped to one agent.
import { and, desc, eq, inArray, or, sql } from "drizzle-orm";
import { dedupeByText, fuseRankings } from "../runtime/fusion.ts";
import type { Embedder, Memory, MemoryRetriever, RetrievalQuery, RetrievedMemory, VectorIndex, VectorMatch } from "../runtime/types.ts";
import type { Db } from "./d1-memory-store.ts";
import { memoriesByIds } from "./memory-repo.ts";
import { fromMemoryRow } from "./rows.ts";
import { memories } from "./schema.ts";
import { searchText } from "./text-search.ts";

/** Each leg fetches this many times the wanted results, so fusion has something to choose from. */
const CANDIDATE_FACTOR = 3;
const MIN_CANDIDATES = 30;
/** Vectorize's topK ceiling without values or metadata. */
const MAX_VECTOR_CANDIDATES = 100;

export interface HybridSearchOptions {
  db: Db;
  /** null: text search only. */
  index: VectorIndex | null;
  embedder: Embedder | null;
  /** Weight of the vector ranking against the full-text one (1) in the fusion. */
  vectorWeight?: number;
  log?: (entry: Record<string, unknown>) => void;
}

export function createHybridSearch(options: HybridSearchOptions): MemoryRetriever {
  const { db, index, embedder } = options;
  const log = options.log ?? ((entry) => console.warn(JSON.stringify(entry)));

  const embedQuery = async (text: string): Promise<Float32Array | null> => {
    if (!index || !embedder || !text.trim()) return null;
    try {
      const [vector] = await embedder.embed([text]);
      return vector ?? null;
    } catch (error) {
      log({ level: "warn", msg: "query_embedding_failed", embedder: embedder.id, error: errorText(error) });
      return null;
    }
  };

  const vectorLeg = async (query: RetrievalQuery, vector: Float32Array | null, topK: number): Promise<VectorMatch[]> => {
    if (!index || !vector) return [];
    try {
      const base = { agentId: query.agentId, vector, topK, types: query.types, roomId: query.roomId };
      if (query.userId === undefined) return await index.query(base);
      // "This user's, or shared": the vector index filters by equality only, so shared facts are
      // checked when the rows are read back (see below); here the user filter is left to that.
      return await index.query(query.includeShared ? base : { ...base, userId: query.userId });
    } catch (error) {
      log({ level: "warn", msg: "vector_search_failed", index: index.kind, agentId: query.agentId, error: errorText(error) });
      return [];
    }
  };

  return {
    embedQuery,

    async search(query, vector) {
      const candidates = Math.min(MAX_VECTOR_CANDIDATES, Math.max(MIN_CANDIDATES, query.limit * CANDIDATE_FACTOR));
      const queryVector = vector === undefined ? await embedQuery(query.text) : vector;
      const [textHits, vectorHits] = await Promise.all([
        searchText(db, { ...query, limit: candidates }),
        vectorLeg(query, queryVector, candidates),
      ]);
      const fused = fuseRankings(
        textHits.map((hit) => ({ id: hit.memory.id })),
        vectorHits,
        { textWeight: 1, vectorWeight: options.vectorWeight ?? 1 },
      );
      const loaded = new Map<string, { memory: Memory; embedded: boolean }>(textHits.map((hit) => [hit.memory.id, hit]));
      const missing = fused.slice(0, candidates).map((hit) => hit.id).filter((id) => !loaded.has(id));
      for (const row of await memoriesByIds(db, query.agentId, missing)) {
        const { embedded, ...memory } = row;
        loaded.set(row.id, { memory, embedded });
      }
      const results: RetrievedMemory[] = [];
      for (const hit of fused) {
        const found = loaded.get(hit.id);
        // Gone since it was indexed (Vectorize lags deletes), or outside the filter.
        if (!found || !matchesFilter(found.memory, query)) continue;
        if (query.threshold !== undefined) {
          if (hit.similarity !== null ? hit.similarity < query.threshold : found.embedded) continue;
        }
        results.push({ memory: found.memory, score: hit.score, similarity: hit.similarity, matchedBy: hit.matchedBy, embedded: found.embedded });
      }
      return dedupeByText(results, (r) => r.memory.content.text).slice(0, query.limit);
    },

    async aboutUser({ agentId, userId, limit }) {
      const rows = await db
        .select()
        .from(memories)
        .where(
          and(
            eq(memories.agentId, agentId),
            or(
              and(eq(memories.userId, userId), inArray(memories.type, ["fact", "description"])),
              and(eq(memories.type, "fact"), sql`json_extract(${memories.metadata}, '$.shared') = 1`),
            ),
          ),
        )
        .orderBy(desc(memories.createdAt))
        .limit(limit);
      return rows.map(fromMemoryRow);
    },

    async fragments({ agentId, documentId, positions }) {
      if (positions.length === 0) return [];
      const rows = await db
        .select()
        .from(memories)
        .where(
          and(
            eq(memories.agentId, agentId),
            eq(memories.parentId, documentId),
            eq(memories.type, "fragment"),
            inArray(sql`json_extract(${memories.metadata}, '$.position')`, positions),
          ),
        );
      return rows.map(fromMemoryRow);
    },
  };
}

/** Re-checks a memory against the query's filter (vector indexes may lag, and shared facts are checked here). */
function matchesFilter(memory: Memory, query: RetrievalQuery): boolean {
  if (memory.agentId !== query.agentId) return false;
  if (query.types && query.types.length > 0 && !query.types.includes(memory.type)) return false;
  if (query.roomId !== undefined && memory.roomId !== query.roomId) return false;
  if (query.userId !== undefined && memory.userId !== query.userId) {
    return !!query.includeShared && memory.type === "fact" && memory.metadata.shared === true;
  }
  return true;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
