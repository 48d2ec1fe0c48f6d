// What an agent keeps in D1, for GET /agents/:id/storage: rows and approximate bytes per kind
// (each memory type, local-index vectors, inspector records in the agent's database; usage records
// in the catalog), and what it wrote in the last WRITE_RATE_DAYS. Bytes are estimated from the
// stored text and blobs plus a fixed per-row figure for keys and index entries (SQLite keeps no
// per-row size); the database's true size is database-size.ts's. Reads every row of the agent:
// an operator's look, not something to poll.
import type { Db } from "../db.ts";

/** The write rate is averaged over this many days. */
export const WRITE_RATE_DAYS = 7;
const DAY_MS = 86_400_000;

/**
 * Per-row bytes beyond the measured columns: the row's header and integers, and an entry in each
 * index. A memory has seven indexes and its text again in the full-text index (counted apart).
 */
const ROW_OVERHEAD_BYTES = { memory: 400, vector: 120, usage: 450, inspection: 120 } as const;

export interface KindSize {
  /** A memory type (message, fact, ...), or `vector`, `usage_record`, `inspection`. */
  kind: string;
  rows: number;
  bytes: number;
  /** Bytes of rows written in the last WRITE_RATE_DAYS. */
  recentBytes: number;
}

interface SizeRow {
  kind: string;
  rows: number;
  bytes: number | null;
  recent: number | null;
}

const bytesOf = (column: string) => `coalesce(length(CAST(${column} AS BLOB)), 0)`;

/** A memory's text twice (the row and memories_fts), its other columns once. */
const MEMORY_BYTES = `(2 * ${bytesOf("m.content")} + ${bytesOf("m.metadata")} + ${bytesOf("m.id")}
  + ${bytesOf("m.room_id")} + ${bytesOf("m.user_id")} + ${bytesOf("m.parent_id")}
  + ${ROW_OVERHEAD_BYTES.memory})`;
const VECTOR_BYTES = `(${bytesOf("v.vector")} + ${bytesOf("v.code")} + ${bytesOf("v.bits")}
  + ${bytesOf("v.memory_id")} + ${ROW_OVERHEAD_BYTES.vector})`;
const INSPECTION_BYTES = `(${bytesOf("i.detail")} + ${bytesOf("i.turn_id")}
  + ${bytesOf("i.room_id")} + ${bytesOf("i.user_id")} + ${ROW_OVERHEAD_BYTES.inspection})`;
const USAGE_BYTES = `(${bytesOf("u.id")} + ${bytesOf("u.tools")} + ${bytesOf("u.room_id")}
  + ${bytesOf("u.user_id")} + ${bytesOf("u.guild_id")} + ${bytesOf("u.source")}
  + ${bytesOf("u.model")} + ${bytesOf("u.error")} + ${ROW_OVERHEAD_BYTES.usage})`;

const recent = (bytes: string, createdAt: string) =>
  `sum(CASE WHEN ${createdAt} >= ?2 THEN ${bytes} ELSE 0 END)`;

const MEMORIES = `SELECT m.type AS kind, count(*) AS rows, sum(${MEMORY_BYTES}) AS bytes,
  ${recent(MEMORY_BYTES, "m.created_at")} AS recent
  FROM memories m WHERE m.agent_id = ?1 GROUP BY m.type`;
// A vector is as recent as its memory (vectors carry no time of their own).
const VECTORS = `SELECT 'vector' AS kind, count(*) AS rows, sum(${VECTOR_BYTES}) AS bytes,
  ${recent(VECTOR_BYTES, "m.created_at")} AS recent
  FROM memory_vectors v LEFT JOIN memories m ON m.agent_id = v.agent_id AND m.id = v.memory_id
  WHERE v.agent_id = ?1`;
const INSPECTIONS = `SELECT 'inspection' AS kind, count(*) AS rows, sum(${INSPECTION_BYTES}) AS bytes,
  ${recent(INSPECTION_BYTES, "i.created_at")} AS recent
  FROM turn_inspections i WHERE i.agent_id = ?1`;
const USAGE = `SELECT 'usage_record' AS kind, count(*) AS rows, sum(${USAGE_BYTES}) AS bytes,
  ${recent(USAGE_BYTES, "u.created_at")} AS recent
  FROM usage_records u WHERE u.agent_id = ?1`;

/**
 * The agent's rows by kind: `data` is the database holding its memories (the catalog when there
 * are no memory databases), `catalog` the one holding usage records.
 */
export async function agentStorage(
  data: Db,
  catalog: Db,
  agentId: string,
  now: number,
): Promise<KindSize[]> {
  const since = now - WRITE_RATE_DAYS * DAY_MS;
  const client = data.$client;
  const [memoryRows, vectorRows, inspectionRows] = await client.batch<SizeRow>(
    [MEMORIES, VECTORS, INSPECTIONS].map((sql) => client.prepare(sql).bind(agentId, since)),
  );
  const usage = await catalog.$client.prepare(USAGE).bind(agentId, since).first<SizeRow>();
  const rows = [
    ...(memoryRows?.results ?? []),
    ...(vectorRows?.results ?? []),
    ...(inspectionRows?.results ?? []),
    ...(usage ? [usage] : []),
  ];
  return rows.map((row) => ({
    kind: row.kind,
    rows: Number(row.rows),
    bytes: Number(row.bytes ?? 0),
    recentBytes: Number(row.recent ?? 0),
  }));
}
