// Hybrid retrieval over D1 and the vector index: the FTS5 leg and the vector leg run at once and
// are fused by reciprocal rank (src/runtime/fusion.ts). A memory not embedded yet is still found by
// its text; a vector index that fails or no longer fits the embedder degrades the search to text
// alone (logged) instead of failing the turn. Message hits bring their neighbouring messages.
// Everything is scoped to one agent.
import { and, desc, eq, inArray, or, sql } from "drizzle-orm";
import { dedupeByText, fuseRankings } from "../runtime/fusion.ts";
import type { Embedder, Memory, MemoryRetriever, RetrievalQuery, RetrievedMemory, SearchTimings, VectorIndex, VectorMatch } from "../runtime/types.ts";
import type { Db } from "./d1-memory-store.ts";
import { adjacentMessages, memoriesByIds } from "./memory-repo.ts";
import { fromMemoryRow } from "./rows.ts";
import { memories } from "./schema.ts";
import { searchText } from "./text-search.ts";

/** Each leg fetches this many times the wanted results, so fusion has something to choose from. */
const CANDIDATE_FACTOR = 3;
const MIN_CANDIDATES = 30;
/** Vectorize's topK ceiling without values or metadata. */
const MAX_VECTOR_CANDIDATES = 100;
/**
 * A neighbouring message's share of its hit's fused score. On LoCoMo (5 conversations) 0.9 lifts
 * recall@10 from 63 to 70; much lower and neighbours never reach the first 10 (fused scores of
 * nearby ranks differ by a few percent), 1 puts them level with their hit and crowds out hits.
 */
export const NEIGHBOUR_DECAY = 0.9;

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

    async search(query, vector, timings) {
      const candidates = Math.min(MAX_VECTOR_CANDIDATES, Math.max(MIN_CANDIDATES, query.limit * CANDIDATE_FACTOR));
      const queryVector = vector === undefined ? await timed(timings, "embed", () => embedQuery(query.text)) : vector;
      // The vector leg goes first: its D1 read is tiny, and the ranking after it is CPU in this
      // isolate, which then overlaps the full-text query running in D1 instead of following it.
      // Its hits' memories are read as soon as it has them, not after the full-text leg: a hit
      // whose memory is gone (Vectorize lags deletes; the local index's cache learns of them
      // here) or is not embedded any more (rewritten since, its old vector not replaced yet) is
      // no vector match at all.
      const vectorLegWithRows = async () => {
        const hits = await timed(timings, "vector", () => vectorLeg(query, queryVector, candidates));
        const rows = await timed(timings, "load", () => memoriesByIds(db, query.agentId, hits.map((hit) => hit.id)));
        return { hits, rows };
      };
      const [{ hits: vectorHits, rows }, textHits] = await Promise.all([
        vectorLegWithRows(),
        timed(timings, "text", async () => {
          await nextTask();
          return searchText(db, { ...query, limit: candidates });
        }),
      ]);
      const loaded = new Map<string, { memory: Memory; embedded: boolean }>(textHits.map((hit) => [hit.memory.id, hit]));
      for (const row of rows) {
        const { embedded, ...memory } = row;
        if (!loaded.has(row.id)) loaded.set(row.id, { memory, embedded });
      }
      const gone = vectorHits.map((hit) => hit.id).filter((id) => !loaded.has(id));
      if (gone.length > 0) index?.forget?.(query.agentId, gone);
      const fused = fuseRankings(
        textHits.map((hit) => ({ id: hit.memory.id })),
        vectorHits.filter((hit) => loaded.get(hit.id)?.embedded === true),
        { textWeight: 1, vectorWeight: options.vectorWeight ?? 1 },
      );
      const results: RetrievedMemory[] = [];
      for (const hit of fused) {
        const found = loaded.get(hit.id);
        // Outside the filter (shared facts, a lagging index's metadata).
        if (!found || !matchesFilter(found.memory, query)) continue;
        if (query.threshold !== undefined) {
          if (hit.similarity !== null ? hit.similarity < query.threshold : found.embedded) continue;
        }
        results.push({ memory: found.memory, score: hit.score, similarity: hit.similarity, matchedBy: hit.matchedBy, embedded: found.embedded });
      }
      const expanded = await timed(timings, "neighbours", () => withNeighbours(db, query, results));
      return dedupeByText(expanded, (r) => r.memory.content.text).slice(0, query.limit);
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

/**
 * Neighbour expansion for messages: the message just before and just after a hit in its room
 * joins the results with NEIGHBOUR_DECAY of the hit's score (or keeps its own, if higher). In a
 * conversation the words of a question are often in the turn that raises the topic, and the
 * answer in the reply to it ("What did you adopt?" / "A puppy!"). Only hits whose neighbours could
 * still make the first `limit` are expanded (which, de-duplication aside, gives what expanding
 * every hit would); neighbours are not expanded in turn.
 */
async function withNeighbours(db: Db, query: RetrievalQuery, results: RetrievedMemory[]): Promise<RetrievedMemory[]> {
  if (query.types && query.types.length > 0 && !query.types.includes("message")) return results;
  const cutoff = results.length >= query.limit ? results[query.limit - 1]!.score : 0;
  const seeds = results.filter((hit) => hit.memory.type === "message" && hit.memory.roomId !== null && hit.score * NEIGHBOUR_DECAY > cutoff);
  if (seeds.length === 0) return results;
  const around = await adjacentMessages(db, query.agentId, seeds.map((hit) => hit.memory.id));
  const byId = new Map(results.map((hit) => [hit.memory.id, hit]));
  for (const seed of seeds) {
    const score = seed.score * NEIGHBOUR_DECAY;
    for (const neighbour of around.get(seed.memory.id) ?? []) {
      const { embedded, ...memory } = neighbour;
      if (!matchesFilter(memory, query)) continue;
      const known = byId.get(memory.id);
      if (!known) byId.set(memory.id, { memory, score, similarity: null, matchedBy: ["neighbour"], embedded });
      else if (known.score < score) byId.set(memory.id, { ...known, score, matchedBy: [...known.matchedBy, "neighbour"] });
    }
  }
  // Stable: equal scores keep the fused order.
  return [...byId.values()].sort((a, b) => b.score - a.score);
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

/** Resolves after the work already queued (promise callbacks included) has run. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** Runs `work`, adding its wall time to `timings[leg]` when timings are wanted. */
async function timed<T>(timings: SearchTimings | undefined, leg: keyof SearchTimings, work: () => Promise<T>): Promise<T> {
  if (!timings) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    timings[leg] = (timings[leg] ?? 0) + performance.now() - started;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
