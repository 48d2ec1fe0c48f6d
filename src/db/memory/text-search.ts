// The full-text leg of hybrid retrieval: SQLite FTS5 (porter stemming) over memory text, ranked by
// BM25. The query is reduced to its content words and OR-ed, each quoted, so user text can never be
// read as FTS5 syntax (a stray `"` or `NEAR(` is just a word). The agent is a rowid range (each
// agent's rows are keyed `num << 40 | seq`, migration 0009), which FTS5 seeks to directly; the
// other filters (type, room, user) are tokens of the index's `scope` column. So FTS5 narrows and
// ranks inside the index and only the best `limit` rows are joined with `memories`: at 100k
// memories of one agent this is what keeps a query in milliseconds.
import { and, asc, eq, inArray, sql, type SQL } from "drizzle-orm";
import {
  integer,
  SQLiteAsyncDialect,
  sqliteTable,
  text as textColumn,
} from "drizzle-orm/sqlite-core";
import { queryTerms } from "../../runtime/retrieval/query-terms.ts";
import { compiled, type Compiled } from "./compiled.ts";
import type { Db } from "../db.ts";
import { nearestMessage, type MemoryFilter } from "./memory-repo.ts";
import { agentNumbers, memories } from "../schema.ts";

/**
 * The FTS5 table of migrations/0002 as drizzle sees it, for typed joins. Declared here, outside
 * schema.ts, so drizzle-kit never tries to create it as an ordinary table.
 */
const memoriesFts = sqliteTable("memories_fts", {
  rowid: integer("rowid").notNull(),
  text: textColumn("text"),
  scope: textColumn("scope"),
});

export interface TextSearchQuery extends MemoryFilter {
  text: string;
  limit: number;
  /** Also match facts marked shared (any user), when filtering by user. */
  includeShared?: boolean;
  /** Memory ids left out before the best `limit` are kept (one JSON parameter, however many). */
  excludeIds?: string[];
}

/** The FTS5 expression for free text (its content words, OR-ed), or null when it has none. */
export function ftsQuery(text: string): string | null {
  const terms = queryTerms(text);
  if (terms.length === 0) return null;
  return terms.map((term) => `"${term.replace(/"/g, '""')}"`).join(" OR ");
}

/**
 * One `scope` token, as migration 0009's triggers write it: a kind letter, the value's UTF-8 bytes
 * in lowercase hex, and `x` (so the porter stemmer, which strips no final x, leaves it whole).
 */
export function scopeToken(kind: "t" | "r" | "u", value: string): string {
  let hex = "";
  for (const byte of new TextEncoder().encode(value)) hex += byte.toString(16).padStart(2, "0");
  return `${kind}${hex}x`;
}
const SHARED_TOKEN = "sharedx";

/** Low bits of an FTS rowid: the memory's seq; above them, its agent's number. */
const SEQ_BITS = 40;
const SEQ_MASK = 2 ** SEQ_BITS - 1;

/** The full MATCH expression: the filter's scope tokens (if any) AND-ed with the text's words. */
export function scopedFtsQuery(query: TextSearchQuery): string | null {
  const words = ftsQuery(query.text);
  if (!words) return null;
  const scope: string[] = [];
  if (query.roomId !== undefined) scope.push(scopeToken("r", query.roomId));
  if (query.userId !== undefined) {
    const user = scopeToken("u", query.userId);
    scope.push(query.includeShared ? `(${user} OR ${SHARED_TOKEN})` : user);
  }
  if (query.types && query.types.length > 0)
    scope.push(`(${query.types.map((type) => scopeToken("t", type)).join(" OR ")})`);
  return scope.length === 0
    ? `text : (${words})`
    : `scope : (${scope.join(" AND ")}) AND text : (${words})`;
}

/**
 * The matching memories' ids, best first by BM25 over the text column (the scope column weighs
 * nothing). Hybrid search reads the rows of only the few hits that can still make its results.
 */
export async function rankText(db: Db, query: TextSearchQuery): Promise<Array<{ id: string }>> {
  const match = scopedFtsQuery(query);
  if (!match) return [];
  const matched = textMatches(db, query, match, shapeOf(query), literal);
  const ranked = matched.ranked.as("ranked");
  return db
    .select({ id: memories.id })
    .from(ranked)
    .innerJoin(memories, eq(memories.seq, ranked.seq))
    .where(and(...matched.conditions))
    .orderBy(asc(ranked.score));
}

const dialect = new SQLiteAsyncDialect();
const MEMORY_COLUMNS =
  "seq, id, type, agent_id, room_id, user_id, parent_id, content, metadata, created_at, embedded_at";

/**
 * rankText's ranking as one statement, bound, that returns the hits' whole rows, best first, and
 * the neighbouring messages (as adjacentMessagesQueries finds them) of the best `seeds` hits.
 * Hybrid search sends it in its first D1 round trip, so a search whose results come from these
 * rows needs no second one. Rows: `seed_id` null for a hit (then `score`), else the hit whose
 * neighbour it is. The ranking runs once (materialized), however often the statement refers to it.
 * Built by drizzle once per isolate for each shape of filter (which of room, user, shared, types
 * and exclusions it has), its values then only bound. The hits are joined to their rows with
 * CROSS JOIN, which holds SQLite to the ranking as the outer loop (one key look-up per hit): given
 * a room and types, it otherwise drove the join from the room's index, reading every message of
 * the room, so a turn's recall grew with the room's history.
 */
export function rankTextWithRows(
  db: Db,
  query: TextSearchQuery,
  seeds: number,
): D1PreparedStatement | null {
  const match = scopedFtsQuery(query);
  if (!match) return null;
  const shape = shapeOf(query);
  const values = {
    match,
    agentId: query.agentId,
    roomId: query.roomId,
    userId: query.userId,
    types: JSON.stringify(query.types ?? []),
    excludeIds: JSON.stringify(query.excludeIds ?? []),
    limit: query.limit,
    seeds,
  };
  // A filter by ids (not one hybrid search makes) is built for this query alone.
  if (query.ids !== undefined) {
    const { sql: text, params } = dialect.sqlToQuery(
      withRows(db, query, match, seeds, shape, literal),
    );
    return db.$client.prepare(text).bind(...params);
  }
  const key = Object.values(shape).map(Number).join("");
  let statement = rankedWithRows.get(key);
  if (!statement) {
    statement = compiled((db) => ({
      toSQL: () => dialect.sqlToQuery(withRows(db, query, null, seeds, shape, placeholder)),
    }));
    rankedWithRows.set(key, statement);
  }
  return statement.bind(db, values);
}

/** rankTextWithRows' compiled statements, by the shape of their filter (32 at most). */
const rankedWithRows = new Map<string, Compiled>();

/** The filters a statement has, whatever their values. */
interface Shape {
  roomId: boolean;
  userId: boolean;
  includeShared: boolean;
  types: boolean;
  excludeIds: boolean;
}

/** A value where it goes in a statement: itself, or a placeholder of that name. */
type Slot = (name: string, value: unknown) => unknown;
const literal: Slot = (_name, value) => value;
const placeholder: Slot = (name) => sql.placeholder(name);

function withRows(
  db: Db,
  query: TextSearchQuery,
  match: string | null,
  seeds: number,
  shape: Shape,
  v: Slot,
): SQL {
  const matched = textMatches(db, query, match, shape, v);
  return sql`WITH ranked AS MATERIALIZED ${matched.ranked},
    hits AS MATERIALIZED (
      SELECT ${memories}.*, ranked.score AS score FROM ranked
      CROSS JOIN ${memories} ON ${memories.seq} = ranked.hit_seq
      WHERE ${and(...matched.conditions)}),
    seeds AS (SELECT seq, id, agent_id, room_id, created_at FROM hits ORDER BY score LIMIT ${v("seeds", seeds)})
    SELECT NULL AS seed_id, score, ${sql.raw(MEMORY_COLUMNS)} FROM hits
    UNION ALL
    SELECT s.id, NULL, ${sql.raw(
      MEMORY_COLUMNS.split(", ")
        .map((column) => `n.${column}`)
        .join(", "),
    )}
    FROM seeds AS s JOIN memories AS n ON n.seq IN (${nearestMessage("s", true)}, ${nearestMessage("s", false)})`;
}

/**
 * The FTS5 ranking (best `limit` rows of the agent's range) and the filter to check its rows
 * against, each value where `v` puts it (for rankTextWithRows' compiled statements, placeholders).
 */
function textMatches(db: Db, query: TextSearchQuery, match: string | null, shape: Shape, v: Slot) {
  const agentId = v("agentId", query.agentId);
  // The same filters again in SQL: cheap on at most `limit` rows, and a guard should the index and
  // the table ever disagree.
  const conditions: SQL[] = [sql`${memories.agentId} = ${agentId}`];
  if (shape.roomId) conditions.push(sql`${memories.roomId} = ${v("roomId", query.roomId)}`);
  if (shape.types)
    conditions.push(
      sql`${memories.type} IN (SELECT value FROM json_each(${v("types", JSON.stringify(query.types))}))`,
    );
  if (query.ids !== undefined) conditions.push(inArray(memories.id, query.ids));
  if (shape.userId) {
    const userId = v("userId", query.userId);
    conditions.push(
      shape.includeShared
        ? sql`(${memories.userId} = ${userId} OR json_extract(${memories.metadata}, '$.shared') = 1)`
        : sql`${memories.userId} = ${userId}`,
    );
  }
  // The agent's range, its first rowid computed in SQL from its number (no number: no match).
  const first = sql`((SELECT ${agentNumbers.num} FROM ${agentNumbers} WHERE ${agentNumbers.agentId} = ${agentId}) << ${sql.raw(String(SEQ_BITS))})`;
  const mask = sql.raw(String(SEQ_MASK));
  // Left out inside the ranking, so they take none of its `limit` places: their seqs, looked up
  // once by the agent's unique (agent_id, id) index.
  const excluded = shape.excludeIds
    ? sql` AND (${memoriesFts.rowid} & ${mask}) NOT IN (SELECT ${memories.seq} FROM ${memories} WHERE ${memories.agentId} = ${agentId} AND ${memories.id} IN (SELECT value FROM json_each(${v("excludeIds", JSON.stringify(query.excludeIds))})))`
    : sql``;
  const ranked = db
    .select({
      seq: sql<number>`${memoriesFts.rowid} & ${mask}`.as("hit_seq"),
      score: sql<number>`bm25(memories_fts, 1.0, 0.0)`.as("score"),
    })
    .from(memoriesFts)
    .where(
      sql`memories_fts MATCH ${v("match", match)} AND ${memoriesFts.rowid} BETWEEN ${first} AND ${first} + ${mask}${excluded}`,
    )
    .orderBy(sql`score`)
    .limit(v("limit", query.limit) as number);
  return { ranked, conditions };
}

/** The shape of a query's filter. */
function shapeOf(query: TextSearchQuery): Shape {
  return {
    roomId: query.roomId !== undefined,
    userId: query.userId !== undefined,
    includeShared: query.includeShared === true,
    types: (query.types?.length ?? 0) > 0,
    excludeIds: (query.excludeIds?.length ?? 0) > 0,
  };
}
