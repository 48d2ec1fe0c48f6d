// Hybrid retrieval over D1 and the vector index: the FTS5 leg and the vector leg run at once and
// are fused by rank and BM25 score (src/runtime/retrieval/fusion.ts), then re-ranked by what the
// rows say (rerank.ts: conversation, named speaker, named month). A memory not embedded yet is
// still found by its text; a vector index that fails or no longer fits the embedder degrades the
// search to text alone (logged) instead of failing the turn. Message hits bring their neighbours
// (the reply to a hit that asks something with most of its score: neighbours.ts).
// The full-text statement returns its hits' rows and their neighbours; a local vector index ranks
// what it holds at once, so those hits' rows are read in the same round trip as its catch-up.
// Rows the fusion needs beyond these are read after, in one more batch. Scoped to one agent.
import { and, eq, inArray, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { dedupeByText, fuseRankings, type FusedHit } from "../../runtime/retrieval/fusion.ts";
import { rerankHits, rerankResults } from "../../runtime/retrieval/rerank.ts";
import { MAX_NEIGHBOUR_SHARE, neighbourShare } from "../../runtime/retrieval/neighbours.ts";
import type { Memory } from "../../runtime/ports/memory.ts";
import type {
  MemoryRetriever,
  RetrievalQuery,
  RetrievedMemory,
  SearchTimings,
} from "../../runtime/ports/retrieval.ts";
import type {
  Embedder,
  VectorIndex,
  VectorMatch,
  VectorQuery,
} from "../../runtime/ports/vectors.ts";
import type { Db } from "../db.ts";
import { memoryRowOf } from "./memory-repo.ts";
import { compiled } from "./compiled.ts";
import { fromMemoryRow } from "./rows.ts";
import { memories } from "../schema.ts";
import { directReader, type RowReader } from "./row-reader.ts";
import { GONE, type Loaded, type Read, readRows, readText } from "./search-reads.ts";
import { log as logLine } from "../../log.ts";

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

/**
 * A person's facts and description, and facts marked shared, newest first: compiled once. Two
 * branches, each the newest `limit` of its own index (memories_user_idx, and the partial
 * memories_shared_facts_idx, whose condition is spelled here as in the schema), so the read costs
 * the same however much else the agent remembers. As one OR over the agent's rows SQLite could use
 * neither and read every memory of the agent; left to choose, it walks all of the agent's facts
 * (memories_type_idx) for the shared ones, hence INDEXED BY, which also fails loudly should the
 * index ever not fit. UNION drops a person's own shared fact's second copy.
 */
const aboutUserStatement = compiled(() => {
  const agent = sql.placeholder("agentId");
  const limit = sql.placeholder("limit");
  const newest = sql`ORDER BY ${memories.createdAt} DESC LIMIT ${limit}`;
  return {
    toSQL: () =>
      dialect.sqlToQuery(sql`SELECT * FROM (SELECT * FROM ${memories}
        WHERE ${memories.agentId} = ${agent} AND ${memories.userId} = ${sql.placeholder("userId")}
          AND ${memories.type} IN ('fact', 'description') ${newest})
      UNION
      SELECT * FROM (SELECT * FROM ${memories} INDEXED BY memories_shared_facts_idx
        WHERE ${memories.agentId} = ${agent}
          AND ${memories.type} = 'fact' AND json_extract(${memories.metadata}, '$.shared') = 1 ${newest})
      ORDER BY created_at DESC LIMIT ${limit}`),
  };
});
const dialect = new SQLiteAsyncDialect();

export function createHybridSearch(options: HybridSearchOptions): MemoryRetriever {
  const { db, index, embedder } = options;
  const log = options.log ?? ((entry) => logLine.warn(String(entry.msg), entry));

  const embedOnce = async (text: string): Promise<Float32Array | null> => {
    if (!index || !embedder) return null;
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
  // A repeated text costs no second call when the embedder remembers (recent-vectors.ts).
  const embedQuery = (text: string): Promise<Float32Array | null> =>
    text.trim() ? embedOnce(text) : Promise.resolve(null);

  /** The vector leg's query, with room for the ids it must leave out; null without one. */
  const vectorQueryOf = (
    query: RetrievalQuery,
    vector: Float32Array | null,
    topK: number,
  ): VectorQuery | null => {
    if (!index || !vector) return null;
    const base = {
      agentId: query.agentId,
      vector,
      topK: Math.min(MAX_VECTOR_CANDIDATES, topK + (query.excludeIds?.length ?? 0)),
      types: query.types,
      roomId: query.roomId,
    };
    // "This user's, or shared": the vector index filters by equality only, so shared facts are
    // checked when the rows are read back (see below); here the user filter is left to that.
    return query.userId === undefined || query.includeShared
      ? base
      : { ...base, userId: query.userId };
  };

  const failed = (query: RetrievalQuery, error: unknown): VectorMatch[] => {
    log({
      level: "warn",
      msg: "vector_search_failed",
      index: index?.kind,
      agentId: query.agentId,
      error: errorText(error),
    });
    return [];
  };

  /** The index's early ranking, when it has one (see VectorIndex.queryStaged). */
  const staged = (query: RetrievalQuery, vectorQuery: VectorQuery | null) => {
    if (!index?.queryStaged || !vectorQuery) return null;
    try {
      return index.queryStaged(vectorQuery);
    } catch (error) {
      failed(query, error);
      return null;
    }
  };

  const vectorLeg = async (
    query: RetrievalQuery,
    vectorQuery: VectorQuery | null,
    early: { final: Promise<VectorMatch[]> } | null,
    topK: number,
  ): Promise<VectorMatch[]> => {
    if (!index || !vectorQuery) return [];
    try {
      const matches = await (early ? early.final : index.query(vectorQuery));
      return withoutExcluded(query, matches).slice(0, topK);
    } catch (error) {
      return failed(query, error);
    }
  };

  /**
   * The retriever's methods over a reader. A turn's concurrent reads (its providers') share one
   * D1 round trip through the room's binding (shared-trips.ts).
   */
  const retrieverWith = (reader: RowReader): MemoryRetriever => ({
    embedQuery,

    async search(query, vector, timings) {
      const candidates = Math.min(
        MAX_VECTOR_CANDIDATES,
        Math.max(MIN_CANDIDATES, query.limit * CANDIDATE_FACTOR),
      );
      // One D1 round trip as a rule. The full-text statement goes first and returns its hits'
      // rows with their neighbours; while D1 runs it, a local index ranks the vectors it holds and
      // the rows of those hits are read alongside, as its catch-up read brings what is new.
      // Whatever the fusion then needs and these reads missed is read after (assemble).
      // The full-text statement does not wait for the query's vector: should the vector come
      // later than the D1 trip would go (an embedding API), its rows take a trip of their own
      // after it, and the text leg's trip has been made meanwhile; a turn that stops waiting for
      // its vector (its budget) then has its text leg read already. A vector at hand (a kept
      // one, the local embedder's) comes before the trip leaves, and rides in it.
      const read = timed(timings, "text", () =>
        readText(db, reader, { ...query, limit: candidates }, query.limit + FIRST_READ_MARGIN),
      );
      // Settled below; until then a failure of the read must not count as unhandled.
      read.catch(() => undefined);
      const queryVector = await (vector === undefined
        ? timed(timings, "embed", () => embedQuery(query.text))
        : vector);
      const vectorQuery = vectorQueryOf(query, queryVector, candidates);
      const early = staged(query, vectorQuery);
      // As many as the vector leg keeps (it asks the index for more, to make up for exclusions).
      const earlyIds = early
        ? withoutExcluded(query, early.early)
            .slice(0, candidates)
            .map((match) => match.id)
        : [];
      const [vectorHits, text, prefetched] = await Promise.all([
        timed(timings, "vector", () => vectorLeg(query, vectorQuery, early, candidates)),
        read,
        readRows(
          db,
          reader,
          query.agentId,
          earlyIds,
          earlyIds.slice(0, query.limit + FIRST_READ_MARGIN),
        ),
      ]);
      for (const [id, row] of prefetched.rows) text.rows.set(id, row);
      for (const [id, list] of prefetched.around) text.around.set(id, list);
      return timed(timings, "load", () =>
        assemble(db, reader, index, query, text, vectorHits, options.vectorWeight ?? 1),
      );
    },

    async aboutUser({ agentId, userId, limit }) {
      const [rows = []] = await reader([aboutUserStatement.bind(db, { agentId, userId, limit })]);
      return rows.map((raw) => fromMemoryRow(memoryRowOf(raw)));
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
  });
  return retrieverWith(directReader(db));
}

/** Neighbourhoods read at first, beyond `limit`: a few hits turn out stale or filtered out. */
const FIRST_READ_MARGIN = 5;

function withoutExcluded(query: RetrievalQuery, matches: VectorMatch[]): VectorMatch[] {
  if (!query.excludeIds || query.excludeIds.length === 0) return matches;
  const excluded = new Set(query.excludeIds);
  return matches.filter((match) => !excluded.has(match.id));
}

/**
 * Turns the two legs into results, reading in one more D1 batch only what the first round trip
 * did not: the rows of fused hits not read yet, and the neighbouring messages of the best `limit`
 * + a few. A vector hit's row also says whether its memory still exists with a vector: one whose
 * memory is gone (Vectorize lags deletes; the local index's cache learns of them here) or is not
 * embedded any more (rewritten since, its old vector not replaced yet) is no vector match at all,
 * so the fusion is redone without it. Another batch is read only when a hit that makes the first
 * `limit` results needs neighbours not read yet; the results are what reading every hit's row and
 * neighbours would give.
 */
async function assemble(
  db: Db,
  reader: RowReader,
  index: VectorIndex | null,
  query: RetrievalQuery,
  text: Read & { hits: Array<{ id: string; score: number }> },
  vectorHits: VectorMatch[],
  vectorWeight: number,
): Promise<RetrievedMemory[]> {
  const { rows, around } = text;
  const textHits = text.hits;
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
  // The first `want.around` is a guess at what settle() will need.
  let speculative = true;
  for (;;) {
    const missingRows = want.rows.filter((id) => !rows.has(id));
    // Neighbourhoods beyond what settle() asks for ride along only with a read that happens anyway.
    const missingAround =
      missingRows.length > 0 || !speculative ? want.around.filter((id) => !around.has(id)) : [];
    const more = await readRows(db, reader, query.agentId, missingRows, missingAround);
    for (const [id, row] of more.rows) rows.set(id, row);
    for (const [id, list] of more.around) around.set(id, list);
    if (vectorState === null) {
      // Every vector hit is a fused hit, so its row has been read by now (or found gone).
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
    speculative = false;
  }
}

/**
 * The results, once every fused hit's row has been read (assemble's first batch reads them all);
 * else the rows and neighbourhoods still needed. Re-ranking weighs each hit by the others of its
 * conversation (rerank.ts), so no result is decided on a partial read.
 */
function settle(
  fused: FusedHit[],
  rows: Map<string, Loaded>,
  around: Map<string, Loaded[]>,
  query: RetrievalQuery,
): { results: RetrievedMemory[] } | { need: { rows: string[]; around: string[] } } {
  const unread = fused.filter((hit) => !rows.has(hit.id)).map((hit) => hit.id);
  if (unread.length > 0) return { need: { rows: unread, around: [] } };
  const results: RetrievedMemory[] = [];
  for (const hit of fused) {
    const found = rows.get(hit.id)!;
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
  const ranked = rerankHits(results);
  const seeds = neighbourSeeds(query, ranked);
  const missing = seeds.filter((seed) => !around.has(seed.memory.id)).map((seed) => seed.memory.id);
  if (missing.length > 0) return { need: { rows: [], around: missing } };
  const expanded = rerankResults(withNeighbours(query, ranked, seeds, around), query.text);
  return {
    results: dedupeByText(expanded, (r) => r.memory.content.text).slice(0, query.limit),
  };
}

/**
 * Neighbour expansion for messages: the message just before and just after a hit in its room
 * joins the results with a share of the hit's score (or keeps its own, if higher): most of it for
 * the reply to a hit that asks something, less for any other (neighbours.ts). Only hits whose
 * neighbours could still make the first `limit` are expanded (which, de-duplication aside, gives
 * what expanding every hit would); neighbours are not expanded in turn.
 */
function neighbourSeeds(query: RetrievalQuery, results: RetrievedMemory[]): RetrievedMemory[] {
  if (query.types && query.types.length > 0 && !query.types.includes("message")) return [];
  const cutoff = results.length >= query.limit ? results[query.limit - 1]!.score : 0;
  return results.filter(
    (hit) =>
      hit.memory.type === "message" &&
      hit.memory.roomId !== null &&
      hit.score * MAX_NEIGHBOUR_SHARE > cutoff,
  );
}

function withNeighbours(
  query: RetrievalQuery,
  results: RetrievedMemory[],
  seeds: RetrievedMemory[],
  around: Map<string, Loaded[]>,
): RetrievedMemory[] {
  if (seeds.length === 0) return results;
  const byId = new Map(results.map((hit) => [hit.memory.id, hit]));
  const added = new Map<string, RetrievedMemory>();
  for (const seed of seeds) {
    for (const neighbour of around.get(seed.memory.id) ?? []) {
      const score = seed.score * neighbourShare(seed.memory, neighbour);
      const { embedded, ...memory } = neighbour;
      if (!matchesFilter(memory, query)) continue;
      const id = memory.id;
      const known = byId.get(id) ?? added.get(id);
      const upgraded = !known
        ? { memory, score, similarity: null, matchedBy: ["neighbour" as const], embedded }
        : known.score < score
          ? { ...known, score, matchedBy: [...known.matchedBy, "neighbour" as const] }
          : known;
      if (byId.has(id)) byId.set(id, upgraded);
      else added.set(id, upgraded);
    }
  }
  // Stable: equal scores keep the fused order.
  return [...byId.values(), ...added.values()].sort((a, b) => b.score - a.score);
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
