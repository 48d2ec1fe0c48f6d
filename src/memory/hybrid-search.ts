// Hybrid retrieval over D1 and the vector index: the FTS5 leg and the vector leg run at once and
// are fused by reciprocal rank (src/runtime/fusion.ts). A memory not embedded yet is still found by
// its text; a vector index that fails or no longer fits the embedder degrades the search to text
// alone (logged) instead of failing the turn. Message hits bring their neighbouring messages.
// Both legs yield ids; rows are read afterwards, in one D1 batch: every hit's row, and the
// neighbours of the best few. Everything is scoped to one agent.
import { and, desc, eq, inArray, or, sql } from "drizzle-orm";
import { dedupeByText, fuseRankings, type FusedHit } from "../runtime/fusion.ts";
import type {
  Embedder,
  Memory,
  MemoryRetriever,
  RetrievalQuery,
  RetrievedMemory,
  SearchTimings,
  VectorIndex,
  VectorMatch,
} from "../runtime/types.ts";
import type { Db } from "./db.ts";
import {
  adjacentFromRows,
  adjacentMessagesQueries,
  batchRawRows,
  memoriesByIdsQueries,
  memoryRowOf,
  withEmbedded,
} from "./memory-repo.ts";
import { fromMemoryRow } from "./rows.ts";
import { memories } from "./schema.ts";
import { rankText } from "./text-search.ts";
import { log as logLine } from "../log.ts";

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
  const log = options.log ?? ((entry) => logLine.warn(String(entry.msg), entry));

  const embedQuery = async (text: string): Promise<Float32Array | null> => {
    if (!index || !embedder || !text.trim()) return null;
    try {
      const [vector] = await embedder.embed([text]);
      return vector ?? null;
    } catch (error) {
      log({
        level: "warn",
        msg: "query_embedding_failed",
        embedder: embedder.id,
        error: errorText(error),
      });
      return null;
    }
  };

  const vectorLeg = async (
    query: RetrievalQuery,
    vector: Float32Array | null,
    topK: number,
  ): Promise<VectorMatch[]> => {
    if (!index || !vector) return [];
    try {
      // The index cannot leave ids out: it is asked for that many more, and they are dropped here.
      const excluded = new Set(query.excludeIds ?? []);
      const base = {
        agentId: query.agentId,
        vector,
        topK: Math.min(MAX_VECTOR_CANDIDATES, topK + excluded.size),
        types: query.types,
        roomId: query.roomId,
      };
      // "This user's, or shared": the vector index filters by equality only, so shared facts are
      // checked when the rows are read back (see below); here the user filter is left to that.
      const matches = await index.query(
        query.userId === undefined || query.includeShared
          ? base
          : { ...base, userId: query.userId },
      );
      return excluded.size === 0
        ? matches
        : matches.filter((match) => !excluded.has(match.id)).slice(0, topK);
    } catch (error) {
      log({
        level: "warn",
        msg: "vector_search_failed",
        index: index.kind,
        agentId: query.agentId,
        error: errorText(error),
      });
      return [];
    }
  };

  return {
    embedQuery,

    async search(query, vector, timings) {
      const candidates = Math.min(
        MAX_VECTOR_CANDIDATES,
        Math.max(MIN_CANDIDATES, query.limit * CANDIDATE_FACTOR),
      );
      const queryVector =
        vector === undefined ? await timed(timings, "embed", () => embedQuery(query.text)) : vector;
      // The vector leg goes first: its D1 read is tiny, and the ranking after it is CPU in this
      // isolate, which then overlaps the full-text query running in D1 instead of following it.
      // Both legs give ids only; the hits' rows are read below, in one batch.
      const [vectorHits, textHits] = await Promise.all([
        timed(timings, "vector", () => vectorLeg(query, queryVector, candidates)),
        timed(timings, "text", async () => {
          await nextTask();
          return rankText(db, { ...query, limit: candidates });
        }),
      ]);
      return timed(timings, "load", () =>
        assemble(db, index, query, textHits, vectorHits, options.vectorWeight ?? 1),
      );
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
              and(
                eq(memories.type, "fact"),
                sql`json_extract(${memories.metadata}, '$.shared') = 1`,
              ),
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

type Loaded = Memory & { embedded: boolean };

/** Neighbourhoods read at first, beyond `limit`: a few hits turn out stale or filtered out. */
const FIRST_READ_MARGIN = 5;

/**
 * Turns the two legs' ids into results in one D1 batch as a rule: it reads the rows of every fused
 * hit (at most both legs' candidates, by primary key) and the neighbouring messages of the best
 * `limit` + a few. A vector hit's row also says whether its memory still exists with a vector: one
 * whose memory is gone (Vectorize lags deletes; the local index's cache learns of them here) or is
 * not embedded any more (rewritten since, its old vector not replaced yet) is no vector match at
 * all, so the fusion is redone without it. Another batch is read only when a hit that makes the
 * first `limit` results needs neighbours not read yet; the results are what reading every hit's
 * row and neighbours would give.
 */
async function assemble(
  db: Db,
  index: VectorIndex | null,
  query: RetrievalQuery,
  textHits: Array<{ id: string }>,
  vectorHits: VectorMatch[],
  vectorWeight: number,
): Promise<RetrievedMemory[]> {
  const rows = new Map<string, Loaded>();
  const around = new Map<string, Loaded[]>();
  let vectorState: Map<string, boolean> | null = vectorHits.length === 0 ? new Map() : null;
  const fuse = () =>
    fuseRankings(
      textHits,
      vectorHits.filter((hit) => vectorState === null || vectorState.get(hit.id) === true),
      { textWeight: 1, vectorWeight },
    );
  let fused = fuse();
  let want = {
    rows: fused.map((hit) => hit.id),
    around: fused.slice(0, query.limit + FIRST_READ_MARGIN).map((hit) => hit.id),
  };
  for (;;) {
    const rowQueries = memoriesByIdsQueries(db, query.agentId, want.rows);
    const aroundQueries = adjacentMessagesQueries(db, query.agentId, want.around);
    if (rowQueries.length + aroundQueries.length > 0) {
      const results = await batchRawRows(db, [...rowQueries, ...aroundQueries]);
      for (const raw of results.slice(0, rowQueries.length).flat()) {
        const row = memoryRowOf(raw);
        rows.set(row.id, withEmbedded(row));
      }
      for (const id of want.rows) if (!rows.has(id)) rows.set(id, GONE);
      const aroundRows = results
        .slice(rowQueries.length)
        .flat()
        .map((raw) => ({ seedId: raw.seed_id as string, memory: memoryRowOf(raw) }));
      const found = adjacentFromRows(query.agentId, aroundRows);
      for (const id of want.around) around.set(id, found.get(id) ?? []);
    }
    if (vectorState === null) {
      // Every vector hit is a fused hit, so the first batch read its row (or found it gone).
      vectorState = new Map();
      const gone: string[] = [];
      for (const hit of vectorHits) {
        const row = rows.get(hit.id);
        if (row === undefined || row === GONE) gone.push(hit.id);
        else vectorState.set(hit.id, row.embedded);
      }
      if (gone.length > 0) index?.forget?.(query.agentId, gone);
      fused = fuse();
    }
    const outcome = settle(fused, rows, around, query);
    if ("results" in outcome) return outcome.results;
    want = outcome.need;
  }
}

/** A fused hit whose row was asked for and not found (deleted since it was ranked). */
const GONE = { id: "" } as Loaded;

/**
 * The results, if the rows read so far decide them; else the rows and neighbourhoods still needed.
 * Results come from the fused hits up to the first one not read yet; the hits after it score no
 * more than it, so once the `limit`-th result beats that score nothing unread can change the list.
 */
function settle(
  fused: FusedHit[],
  rows: Map<string, Loaded>,
  around: Map<string, Loaded[]>,
  query: RetrievalQuery,
): { results: RetrievedMemory[] } | { need: { rows: string[]; around: string[] } } {
  const results: RetrievedMemory[] = [];
  let next = fused.length;
  for (let i = 0; i < fused.length; i++) {
    const hit = fused[i]!;
    const found = rows.get(hit.id);
    if (!found) {
      next = i;
      break;
    }
    // Gone, or outside the filter (shared facts, a lagging index's metadata).
    if (
      found === GONE ||
      !matchesFilter(found, query) ||
      !passesThreshold(query, hit, found.embedded)
    )
      continue;
    const { embedded, ...memory } = found;
    results.push({
      memory,
      score: hit.score,
      similarity: hit.similarity,
      matchedBy: hit.matchedBy,
      embedded,
    });
  }
  const unread = fused.slice(next);
  const readMore = (count: number) => ({
    need: { rows: unread.slice(0, count).map((hit) => hit.id), around: [] as string[] },
  });
  if (unread.length > 0 && results.length < query.limit) return readMore(query.limit);
  const seeds = neighbourSeeds(query, results);
  const missing = seeds.filter((seed) => !around.has(seed.memory.id)).map((seed) => seed.memory.id);
  if (missing.length > 0) return { need: { rows: [], around: missing } };
  const expanded = withNeighbours(query, results, seeds, around, unread);
  const final = dedupeByText(expanded, (r) => r.memory.content.text).slice(0, query.limit);
  if (
    unread.length > 0 &&
    (final.length < query.limit || final[query.limit - 1]!.score <= unread[0]!.score)
  )
    return readMore(query.limit);
  return { results: final };
}

/**
 * Neighbour expansion for messages: the message just before and just after a hit in its room
 * joins the results with NEIGHBOUR_DECAY of the hit's score (or keeps its own, if higher). In a
 * conversation the words of a question are often in the turn that raises the topic, and the
 * answer in the reply to it ("What did you adopt?" / "A puppy!"). Only hits whose neighbours could
 * still make the first `limit` are expanded (which, de-duplication aside, gives what expanding
 * every hit would); neighbours are not expanded in turn.
 */
function neighbourSeeds(query: RetrievalQuery, results: RetrievedMemory[]): RetrievedMemory[] {
  if (query.types && query.types.length > 0 && !query.types.includes("message")) return [];
  const cutoff = results.length >= query.limit ? results[query.limit - 1]!.score : 0;
  return results.filter(
    (hit) =>
      hit.memory.type === "message" &&
      hit.memory.roomId !== null &&
      hit.score * NEIGHBOUR_DECAY > cutoff,
  );
}

function withNeighbours(
  query: RetrievalQuery,
  results: RetrievedMemory[],
  seeds: RetrievedMemory[],
  around: Map<string, Loaded[]>,
  later: FusedHit[],
): RetrievedMemory[] {
  if (seeds.length === 0) return results;
  const byId = new Map(results.map((hit) => [hit.memory.id, hit]));
  // A neighbour that is itself a fused hit past the ones read: a result of its own, placed (for
  // equal scores) where reading every row would have put it, after the read results.
  const laterIndex = new Map(later.map((hit, i) => [hit.id, i]));
  const promoted = new Map<string, number>();
  const added = new Map<string, RetrievedMemory>();
  for (const seed of seeds) {
    const score = seed.score * NEIGHBOUR_DECAY;
    for (const neighbour of around.get(seed.memory.id) ?? []) {
      const { embedded, ...memory } = neighbour;
      if (!matchesFilter(memory, query)) continue;
      const id = memory.id;
      let known = byId.get(id) ?? added.get(id);
      const i = laterIndex.get(id);
      if (!known && i !== undefined && passesThreshold(query, later[i]!, embedded)) {
        const hit = later[i]!;
        known = {
          memory,
          score: hit.score,
          similarity: hit.similarity,
          matchedBy: hit.matchedBy,
          embedded,
        };
        promoted.set(id, i);
        byId.set(id, known);
      }
      const upgraded = !known
        ? { memory, score, similarity: null, matchedBy: ["neighbour" as const], embedded }
        : known.score < score
          ? { ...known, score, matchedBy: [...known.matchedBy, "neighbour" as const] }
          : known;
      if (byId.has(id)) byId.set(id, upgraded);
      else added.set(id, upgraded);
    }
  }
  const read = [...byId.values()].filter((hit) => !promoted.has(hit.memory.id));
  const fromLater = [...promoted.keys()]
    .sort((a, b) => promoted.get(a)! - promoted.get(b)!)
    .map((id) => byId.get(id)!);
  // Stable: equal scores keep the fused order.
  return [...read, ...fromLater, ...added.values()].sort((a, b) => b.score - a.score);
}

/** The similarity threshold: a vector match must reach it; a text-only match passes unless embedded. */
function passesThreshold(query: RetrievalQuery, hit: FusedHit, embedded: boolean): boolean {
  if (query.threshold === undefined) return true;
  return hit.similarity !== null ? hit.similarity >= query.threshold : !embedded;
}

/** Re-checks a memory against the query's filter (vector indexes may lag, and shared facts are checked here). */
function matchesFilter(memory: Memory, query: RetrievalQuery): boolean {
  if (memory.agentId !== query.agentId) return false;
  if (query.excludeIds?.includes(memory.id)) return false;
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
async function timed<T>(
  timings: SearchTimings | undefined,
  leg: keyof SearchTimings,
  work: () => Promise<T>,
): Promise<T> {
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
