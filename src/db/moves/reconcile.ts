// One page of a move: a key range of one table, read from the agent's old database and its new
// one, made equal in the new one (rows upserted where they differ or are missing, deleted where
// the old one no longer has them), in one atomic batch. The same pass copies (the new database is
// empty), catches up (the agent kept answering meanwhile), and verifies (nothing left to change,
// and each side's rows hashed page by page into a chain: equal counts and equal chains).
import { fromHex, sha256Hex, toHex } from "../../runtime/util/hashing.ts";
import {
  columnsOf,
  conflictColumns,
  type MovedTable,
  scopeSql,
  type TableColumns,
} from "./moved-tables.ts";

/** D1 binds at most 100 parameters per statement. */
const MAX_PARAMS = 100;

export type Key = (string | number | null)[];

export interface PageOutcome {
  /** Where the next page starts; null when the table is done. */
  next: Key | null;
  sourceRows: number;
  targetRows: number;
  /** Rows written or deleted in the new database to make the range equal. */
  changed: number;
  /** Hashes of the page's rows as each side held them (before any change). */
  sourceHash: string;
  targetHash: string;
}

export interface PageRequest {
  source: D1Database;
  target: D1Database;
  table: MovedTable;
  agentId: string;
  after: Key | null;
  limit: number;
  /** When false only reads and hashes (a verification that must find nothing to change). */
  write: boolean;
}

const columnCache = new WeakMap<object, Map<string, Promise<TableColumns>>>();

export async function reconcilePage(request: PageRequest): Promise<PageOutcome> {
  const { source, target, table, agentId, after, limit } = request;
  const columns = await cachedColumns(source, table);
  const keys = table.key.join(", ");
  const list = columns.names.map(quote).join(", ");
  const afterSql = after ? ` AND (${keys}) > (${placeholders(after.length, 2)})` : "";
  const sourceRows = await rowsOf(
    source,
    `SELECT ${list} FROM ${quote(table.name)} WHERE ${scopeSql(table)}${afterSql} ORDER BY ${keys} LIMIT ${limit}`,
    [agentId, ...(after ?? [])],
    columns,
  );
  const last = sourceRows.length === limit ? keyOf(sourceRows.at(-1)!, table, columns) : null;
  const upperSql = last
    ? ` AND (${keys}) <= (${placeholders(last.length, 2 + (after?.length ?? 0))})`
    : "";
  const targetRows = await rowsOf(
    target,
    `SELECT ${list} FROM ${quote(table.name)} WHERE ${scopeSql(table)}${afterSql}${upperSql} ORDER BY ${keys}`,
    [agentId, ...(after ?? []), ...(last ?? [])],
    columns,
  );
  const wanted = new Map(
    sourceRows.map((row) => [JSON.stringify(keyOf(row, table, columns)), row]),
  );
  const held = new Map(targetRows.map((row) => [JSON.stringify(keyOf(row, table, columns)), row]));
  const differing = sourceRows.filter((row) => {
    const there = held.get(JSON.stringify(keyOf(row, table, columns)));
    return !there || JSON.stringify(there) !== JSON.stringify(row);
  });
  const upserts = await withParents(target, table, columns, agentId, differing);
  const stale =
    table.scope === "agent"
      ? targetRows.filter((row) => !wanted.has(JSON.stringify(keyOf(row, table, columns))))
      : [];
  if (request.write && upserts.length + stale.length > 0) {
    const statements = [
      ...upsertStatements(target, table, columns, upserts),
      ...deleteStatements(target, table, columns, agentId, stale),
    ];
    await target.batch(statements);
  }
  return {
    next: sourceRows.length === limit ? keyOf(sourceRows.at(-1)!, table, columns) : null,
    sourceRows: sourceRows.length,
    targetRows: targetRows.length,
    // A row held back for its parent counts as a change: the pass is not clean until it lands.
    changed: differing.length + stale.length,
    sourceHash: await hashRows(sourceRows),
    targetHash: await hashRows(targetRows),
  };
}

/** The rows whose parent the new database already holds (see MovedTable.parent). */
async function withParents(
  target: D1Database,
  table: MovedTable,
  columns: TableColumns,
  agentId: string,
  rows: Row[],
): Promise<Row[]> {
  const parent = table.parent;
  if (!parent || rows.length === 0) return rows;
  const index = columns.names.indexOf(parent.column);
  const wanted = [...new Set(rows.map((row) => row[index] as string))];
  const present = new Set<string>();
  const byAgent = parent.table === "memories";
  for (let i = 0; i < wanted.length; i += MAX_PARAMS - 1) {
    const chunk = wanted.slice(i, i + MAX_PARAMS - 1);
    const marks = chunk.map(() => "?").join(", ");
    const query = byAgent
      ? `SELECT id FROM memories WHERE agent_id = ? AND id IN (${marks})`
      : `SELECT id FROM users WHERE id IN (${marks})`;
    const { results } = await target
      .prepare(query)
      .bind(...(byAgent ? [agentId, ...chunk] : chunk))
      .all<{ id: string }>();
    for (const row of results) present.add(row.id);
  }
  return rows.filter((row) => present.has(row[index] as string));
}

/** Chains a page's hash onto what came before it: equal chains, equal pages in the same order. */
export function chain(previous: string, page: string): Promise<string> {
  return sha256Hex(previous + page);
}

function cachedColumns(db: D1Database, table: MovedTable): Promise<TableColumns> {
  const perDb = columnCache.get(db) ?? new Map<string, Promise<TableColumns>>();
  columnCache.set(db, perDb);
  const columns = perDb.get(table.name) ?? columnsOf(db, table);
  perDb.set(table.name, columns);
  return columns;
}

type Row = unknown[];

async function rowsOf(
  db: D1Database,
  query: string,
  params: unknown[],
  columns: TableColumns,
): Promise<Row[]> {
  const raw = await db
    .prepare(query)
    .bind(...params)
    .raw();
  // Blobs come back as byte arrays or buffers: one plain form (hex), so both sides compare and
  // hash alike, and a 2 KB vector is one string rather than 2,048 numbers to compare.
  return raw.map((row) =>
    row.map((value, i) =>
      columns.blobs.has(columns.names[i]!) && value !== null ? hexOf(value) : value,
    ),
  );
}

function keyOf(row: Row, table: MovedTable, columns: TableColumns): Key {
  return table.key.map((name) => row[columns.names.indexOf(name)] as string | number | null);
}

function upsertStatements(
  db: D1Database,
  table: MovedTable,
  columns: TableColumns,
  rows: Row[],
): D1PreparedStatement[] {
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / columns.names.length));
  const conflict = conflictColumns(table);
  const updates = columns.names
    .filter((name) => !conflict.includes(name))
    .map((name) => `${quote(name)} = excluded.${quote(name)}`);
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    const values = chunk.map(() => `(${columns.names.map(() => "?").join(", ")})`).join(", ");
    const onConflict = updates.length > 0 ? `DO UPDATE SET ${updates.join(", ")}` : "DO NOTHING";
    statements.push(
      db
        .prepare(
          `INSERT INTO ${quote(table.name)} (${columns.names.map(quote).join(", ")}) VALUES ${values} ON CONFLICT (${conflict.join(", ")}) ${onConflict}`,
        )
        .bind(
          ...chunk.flatMap((row) =>
            row.map((value, j) =>
              columns.blobs.has(columns.names[j]!) && typeof value === "string"
                ? fromHex(value)
                : value,
            ),
          ),
        ),
    );
  }
  return statements;
}

function deleteStatements(
  db: D1Database,
  table: MovedTable,
  columns: TableColumns,
  agentId: string,
  rows: Row[],
): D1PreparedStatement[] {
  const width = table.key.length;
  const perStatement = Math.max(1, Math.floor((MAX_PARAMS - 1) / width));
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    const tuples = chunk.map(() => `(${Array(width).fill("?").join(", ")})`).join(", ");
    statements.push(
      db
        .prepare(
          `DELETE FROM ${quote(table.name)} WHERE agent_id = ? AND (${table.key.join(", ")}) IN (VALUES ${tuples})`,
        )
        .bind(agentId, ...chunk.flatMap((row) => keyOf(row, table, columns))),
    );
  }
  return statements;
}

function hashRows(rows: Row[]): Promise<string> {
  return sha256Hex(JSON.stringify(rows));
}

function hexOf(value: unknown): string {
  return toHex(
    value instanceof ArrayBuffer
      ? new Uint8Array(value)
      : ArrayBuffer.isView(value)
        ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
        : Uint8Array.from(value as number[]),
  );
}

function placeholders(count: number, first: number): string {
  return Array.from({ length: count }, (_, i) => `?${first + i}`).join(", ");
}

function quote(name: string): string {
  return `"${name}"`;
}
