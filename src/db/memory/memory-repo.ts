// Data access for long-term memory: typed inserts, filtered listing with a stable cursor, deletes
// that report which rooms lost messages, the embedding queue's reads and writes, and statistics.
// Every query is scoped to one agent, and a memory id means something only within its agent
// (unique per agent, migration 0013). D1 caps bound parameters at 100 per statement, so bulk
// writes are chunked and sent as one atomic `db.batch()`.
import {
  and,
  count,
  desc,
  eq,
  inArray,
  isNull,
  lt,
  ne,
  or,
  sql,
  type SQL,
  type SQLWrapper,
} from "drizzle-orm";
import { ValidationError } from "../../runtime/util/errors.ts";
import { alias } from "drizzle-orm/sqlite-core";
import type { Memory, MemoryType } from "../../runtime/ports/memory.ts";
import { compiled } from "./compiled.ts";
import type { Db } from "../db.ts";
import { fromMemoryRow, MEMORY_ROWS_PER_INSERT, toMemoryRow } from "./rows.ts";
import { memories } from "../schema.ts";

const IDS_PER_QUERY = 90;

export interface MemoryFilter {
  agentId: string;
  roomId?: string;
  userId?: string;
  types?: MemoryType[];
  /** These memories only (at most IDS_PER_QUERY). */
  ids?: string[];
}

export interface MemoryPage {
  memories: Array<Memory & { embedded: boolean }>;
  nextCursor: string | null;
}

export function filterConditions(filter: MemoryFilter): SQL[] {
  const conditions: SQL[] = [eq(memories.agentId, filter.agentId)];
  if (filter.roomId !== undefined) conditions.push(eq(memories.roomId, filter.roomId));
  if (filter.userId !== undefined) conditions.push(eq(memories.userId, filter.userId));
  if (filter.types && filter.types.length > 0)
    conditions.push(inArray(memories.type, filter.types));
  if (filter.ids !== undefined) conditions.push(inArray(memories.id, filter.ids));
  return conditions;
}

/**
 * Inserts memories; an id the agent already has is left as it is (idempotent replays). Ids are
 * unique per agent only, so another agent's memory never stands in the way.
 */
export async function insertMemories(db: Db, items: Memory[]): Promise<void> {
  if (items.length === 0) return;
  const statements = [];
  for (let i = 0; i < items.length; i += MEMORY_ROWS_PER_INSERT) {
    statements.push(
      db
        .insert(memories)
        .values(items.slice(i, i + MEMORY_ROWS_PER_INSERT).map(toMemoryRow))
        .onConflictDoNothing(),
    );
  }
  const [first, ...rest] = statements;
  await db.batch([first!, ...rest]);
}

/**
 * What an insert does when the agent already has a memory of that id: take the new row's values,
 * and lose the vector until re-embedded.
 */
export const REPLACE_ON_CONFLICT = {
  target: [memories.agentId, memories.id],
  set: {
    type: sql`excluded.type`,
    roomId: sql`excluded.room_id`,
    userId: sql`excluded.user_id`,
    parentId: sql`excluded.parent_id`,
    content: sql`excluded.content`,
    metadata: sql`excluded.metadata`,
    createdAt: sql`excluded.created_at`,
    embeddedAt: null,
  },
};

/**
 * Insert-or-replace statements for memories whose ids the runtime owns (lore, knowledge): unsent,
 * for a caller that batches them with others. The replaced row loses its vector until re-embedded.
 */
export function overwriteMemoriesStatements(db: Db, items: Memory[]) {
  const statements = [];
  for (let i = 0; i < items.length; i += MEMORY_ROWS_PER_INSERT) {
    statements.push(
      db
        .insert(memories)
        .values(items.slice(i, i + MEMORY_ROWS_PER_INSERT).map(toMemoryRow))
        .onConflictDoUpdate(REPLACE_ON_CONFLICT),
    );
  }
  return statements;
}

export async function listMemories(
  db: Db,
  filter: MemoryFilter,
  limit: number,
  cursor?: string,
): Promise<MemoryPage> {
  const conditions = filterConditions(filter);
  const after = cursor ? decodeCursor(cursor) : null;
  if (after) {
    conditions.push(
      or(
        lt(memories.createdAt, after.createdAt),
        and(eq(memories.createdAt, after.createdAt), lt(memories.seq, after.seq)),
      )!,
    );
  }
  const rows = await db
    .select()
    .from(memories)
    .where(and(...conditions))
    .orderBy(desc(memories.createdAt), desc(memories.seq))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    memories: page.map((row) => ({ ...fromMemoryRow(row), embedded: row.embeddedAt !== null })),
    nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.seq) : null,
  };
}

/** Memories by id, in no particular order; ids of other agents are never returned. */
export async function memoriesByIds(
  db: Db,
  agentId: string,
  ids: string[],
): Promise<Array<Memory & { embedded: boolean }>> {
  const results = await Promise.all(memoriesByIdsQueries(db, agentId, ids));
  return results.flat().map(withEmbedded);
}

/** memoriesByIds as unsent statements (one per 90 ids), for a caller that batches them with others. */
export function memoriesByIdsQueries(db: Db, agentId: string, ids: string[]) {
  return chunked(ids).map((chunk) =>
    db
      .select()
      .from(memories)
      .where(and(inArray(memories.id, chunk), eq(memories.agentId, agentId))),
  );
}

/** The ids of a compiled statement's list, as one JSON array (read back with json_each). */
const idList = (column: SQLWrapper) =>
  sql`${column} IN (SELECT value FROM json_each(${sql.placeholder("ids")}))`;

/** An agent's memories by id (a JSON array of ids): memoriesByIdsQueries, compiled once. */
const rowsByIds = compiled((db) =>
  db
    .select()
    .from(memories)
    .where(and(idList(memories.id), eq(memories.agentId, sql.placeholder("agentId")))),
);

/** adjacentMessagesQueries' statement for a JSON array of seed ids, compiled once. */
const neighboursByIds = compiled((db) => {
  const seed = alias(memories, "seed");
  return db
    .select({ seedId: sql<string>`${seed.id}`.as("seed_id"), memory: memories })
    .from(seed)
    .innerJoin(
      memories,
      sql`${memories.seq} IN (${nearestMessage("seed", true)}, ${nearestMessage("seed", false)})`,
    )
    .where(and(idList(seed.id), eq(seed.agentId, sql.placeholder("agentId"))));
});

/**
 * The rows of `ids` (as memoriesByIdsQueries) and the neighbouring messages of `around` (as
 * adjacentMessagesQueries) as bound statements of a fixed shape, built once per isolate: at most
 * one each, empty lists leave theirs out. For batchRawRows.
 */
export function rowsAndNeighbourStatements(
  db: Db,
  agentId: string,
  ids: string[],
  around: string[],
): { rows: D1PreparedStatement[]; around: D1PreparedStatement[] } {
  return {
    rows: ids.length > 0 ? [rowsByIds.bind(db, { agentId, ids: JSON.stringify(ids) })] : [],
    around:
      around.length > 0 ? [neighboursByIds.bind(db, { agentId, ids: JSON.stringify(around) })] : [],
  };
}

/** A row as D1 hands it over: an object keyed by column name. */
export type RawRow = Record<string, unknown>;

/**
 * Runs statements built with drizzle in one D1 batch and returns each one's rows as D1 gives them,
 * without drizzle's row mapping, which checks every cell's column type again (with `is()`) and was
 * the largest share of the worker's time spent on a turn's reads. For the reads of many memory
 * rows (hybrid search's hits and neighbours); `memoryRowOf` maps those rows.
 */
export async function batchRawRows(
  db: Db,
  queries: Array<{ toSQL(): { sql: string; params: unknown[] } } | D1PreparedStatement>,
): Promise<RawRow[][]> {
  if (queries.length === 0) return [];
  const client = db.$client;
  const statements = queries.map((query) => {
    // Already bound (a compiled statement), or built with drizzle.
    if (!("toSQL" in query)) return query;
    const { sql: text, params } = query.toSQL();
    return client.prepare(text).bind(...params);
  });
  const results = await client.batch<RawRow>(statements);
  return results.map((result) => result.results);
}

/** A `memories` row read by batchRawRows (its columns by their SQL names). */
export function memoryRowOf(raw: RawRow): typeof memories.$inferSelect {
  return {
    seq: raw.seq as number,
    id: raw.id as string,
    type: raw.type as (typeof memories.$inferSelect)["type"],
    agentId: raw.agent_id as string,
    roomId: (raw.room_id ?? null) as string | null,
    userId: (raw.user_id ?? null) as string | null,
    parentId: (raw.parent_id ?? null) as string | null,
    content: raw.content as string,
    metadata: raw.metadata as string,
    createdAt: raw.created_at as number,
    embeddedAt: (raw.embedded_at ?? null) as number | null,
  };
}

export function withEmbedded(row: typeof memories.$inferSelect): Memory & { embedded: boolean } {
  return { ...fromMemoryRow(row), embedded: row.embeddedAt !== null };
}

/**
 * The messages right before and after each given message in its room (by time, then insertion
 * order), keyed by the given message's id; messages only, never another room's or agent's.
 * One statement per 90 messages; each neighbour is one step on the room index. Hybrid search
 * uses it for neighbour expansion: in a conversation the answer to a question is often the turn
 * after the one that names the topic.
 */
export async function adjacentMessages(
  db: Db,
  agentId: string,
  ids: string[],
): Promise<Map<string, Array<Memory & { embedded: boolean }>>> {
  return adjacentFromRows(
    agentId,
    (await Promise.all(adjacentMessagesQueries(db, agentId, ids))).flat(),
  );
}

/** adjacentMessages as unsent statements; adjacentFromRows reads their rows. */
export function adjacentMessagesQueries(db: Db, agentId: string, ids: string[]) {
  const seed = alias(memories, "seed");
  return chunked(ids).map((chunk) =>
    db
      // seed_id, not id: D1's batch hands rows back as objects, and a second `id` column would
      // overwrite the first and shift every value after it (drizzle maps batched rows by position).
      .select({ seedId: sql<string>`${seed.id}`.as("seed_id"), memory: memories })
      .from(seed)
      .innerJoin(
        memories,
        sql`${memories.seq} IN (${nearestMessage("seed", true)}, ${nearestMessage("seed", false)})`,
      )
      .where(and(inArray(seed.id, chunk), eq(seed.agentId, agentId))),
  );
}

/**
 * The rowid of the nearest message of the seed's room before (or after) it, by time then insertion
 * order, as a subquery over the row the enclosing statement names `seed`.
 */
export function nearestMessage(seed: string, before: boolean): SQL {
  const [op, direction] = before ? ["<", "DESC"] : [">", "ASC"];
  return sql.raw(`(SELECT n.seq FROM memories AS n
    WHERE n.agent_id = ${seed}.agent_id AND n.room_id = ${seed}.room_id AND n.type = 'message'
      AND (n.created_at, n.seq) ${op} (${seed}.created_at, ${seed}.seq)
    ORDER BY n.created_at ${direction}, n.seq ${direction} LIMIT 1)`);
}

export function adjacentFromRows(
  agentId: string,
  rows: Array<{ seedId: string; memory: typeof memories.$inferSelect }>,
): Map<string, Array<Memory & { embedded: boolean }>> {
  const around = new Map<string, Array<Memory & { embedded: boolean }>>();
  for (const { seedId, memory: row } of rows) {
    if (row.agentId !== agentId) continue;
    const list = around.get(seedId) ?? [];
    list.push(withEmbedded(row));
    around.set(seedId, list);
  }
  return around;
}

function chunked(ids: string[]): string[][] {
  const chunks: string[][] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) chunks.push(ids.slice(i, i + IDS_PER_QUERY));
  return chunks;
}

/**
 * Deletes what the filter matches, with the fragments of any document among it, and says how
 * many, and which rooms lost messages or summaries (their rooms must drop what they cache). Vectors follow: the
 * local index by foreign key, Vectorize through the deletion outbox a trigger fills.
 */
export async function deleteMemories(
  db: Db,
  filter: MemoryFilter,
  olderThan?: number,
): Promise<{ deleted: number; rooms: string[] }> {
  const conditions = filterConditions(filter);
  if (olderThan !== undefined) conditions.push(lt(memories.createdAt, olderThan));
  const where = and(...conditions);
  // A fragment without its document would still be found and quoted as knowledge. Only fragments
  // have a parent, so the parent index finds them (a type condition here made SQLite walk every
  // fragment of the agent on each delete instead).
  const documents = db
    .select({ id: memories.id })
    .from(memories)
    .where(and(where, eq(memories.type, "document")));
  const fragments = and(
    eq(memories.agentId, filter.agentId),
    inArray(memories.parentId, documents),
  );
  const [rooms, deleted] = await db.batch([
    db
      .selectDistinct({ roomId: memories.roomId })
      .from(memories)
      .where(and(where, inArray(memories.type, ["message", "summary"]))),
    db.delete(memories).where(or(where, fragments)).returning({ id: memories.id }),
  ]);
  return {
    deleted: deleted.length,
    rooms: rooms.map((r) => r.roomId).filter((id): id is string => id !== null),
  };
}

/** pendingEmbeddings' statement, with and without a room: each compiled once. */
const pendingIn = (withRoom: boolean) =>
  compiled((db) =>
    db
      .select()
      .from(memories)
      .where(
        and(
          eq(memories.agentId, sql.placeholder("agentId")),
          isNull(memories.embeddedAt),
          ne(memories.type, "document"),
          withRoom ? eq(memories.roomId, sql.placeholder("roomId")) : undefined,
        ),
      )
      .orderBy(memories.seq)
      .limit(sql.placeholder("limit")),
  );
const pendingInRoom = pendingIn(true);
const pendingOfAgent = pendingIn(false);

/** Memories still waiting for a vector, oldest first (documents are never embedded). */
export async function pendingEmbeddings(
  db: Db,
  query: { agentId: string; roomId?: string; limit: number },
): Promise<Memory[]> {
  const statement =
    query.roomId !== undefined
      ? pendingInRoom.bind(db, { agentId: query.agentId, roomId: query.roomId, limit: query.limit })
      : pendingOfAgent.bind(db, { agentId: query.agentId, limit: query.limit });
  const { results } = await statement.all<RawRow>();
  return results.map((raw) => fromMemoryRow(memoryRowOf(raw)));
}

export async function markEmbedded(
  db: Db,
  agentId: string,
  ids: string[],
  at: number,
): Promise<void> {
  if (ids.length === 0) return;
  await db.$client.batch(markEmbeddedStatements(db, agentId, ids, at));
}

/** Marks an agent's memories (a JSON array of ids) embedded at a time: compiled once. */
const markEmbeddedByIds = compiled((db) =>
  db
    .update(memories)
    .set({ embeddedAt: sql`${sql.placeholder("at")}` })
    .where(and(idList(memories.id), eq(memories.agentId, sql.placeholder("agentId")))),
);

/** markEmbedded's statement, bound, for a caller that runs it in a batch of its own. */
export function markEmbeddedStatements(
  db: Db,
  agentId: string,
  ids: string[],
  at: number,
): D1PreparedStatement[] {
  if (ids.length === 0) return [];
  return [markEmbeddedByIds.bind(db, { agentId, ids: JSON.stringify(ids), at })];
}

export interface MemoryStats {
  total: number;
  byType: Record<MemoryType, number>;
  pendingEmbedding: number;
}

export async function memoryStats(db: Db, agentId: string): Promise<MemoryStats> {
  const [byType, pending] = await db.batch([
    db
      .select({ type: memories.type, n: count() })
      .from(memories)
      .where(eq(memories.agentId, agentId))
      .groupBy(memories.type),
    db
      .select({ n: count() })
      .from(memories)
      .where(
        and(
          eq(memories.agentId, agentId),
          isNull(memories.embeddedAt),
          ne(memories.type, "document"),
        ),
      ),
  ]);
  const counts: Record<MemoryType, number> = {
    message: 0,
    fact: 0,
    description: 0,
    lore: 0,
    document: 0,
    fragment: 0,
    summary: 0,
  };
  for (const row of byType) counts[row.type] = row.n;
  return {
    total: byType.reduce((sum, row) => sum + row.n, 0),
    byType: counts,
    pendingEmbedding: pending[0]?.n ?? 0,
  };
}

function encodeCursor(createdAt: number, seq: number): string {
  return btoa(`${createdAt}:${seq}`).replace(/=+$/, "");
}

function decodeCursor(cursor: string): { createdAt: number; seq: number } {
  try {
    const [createdAt, seq] = atob(cursor).split(":").map(Number);
    if (Number.isSafeInteger(createdAt) && Number.isSafeInteger(seq))
      return { createdAt: createdAt!, seq: seq! };
  } catch {
    // fall through to the error
  }
  throw new ValidationError(
    "cursor is not one this API returned (use nextCursor of the previous page)",
  );
}
