// Bytes of the local D1 databases by table, for bench:capacity: Miniflare keeps each D1 database as
// a SQLite file, and SQLite's `dbstat` table (compiled into Node 22's node:sqlite) lists every page
// of every b-tree. Indexes and FTS5 shadow tables are counted under the table they serve, so a row
// of `memories` costs what its indexes and full-text entries cost too. Read while workerd holds the
// file: in WAL mode a reader sees the committed pages, WAL included, without a checkpoint.
import { readdirSync, statSync } from "node:fs";
import { join, sep } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** Bytes in use by table, summed over every D1 database file found. */
export type TableBytes = Map<string, number>;

export interface DatabaseSnapshot {
  tables: TableBytes;
  /** page_count x page_size of each file (free pages included), summed. */
  fileBytes: number;
  /** How many D1 database files there were (more than one when agents are spread over several). */
  databases: number;
}

/** The D1 SQLite files under a Miniflare temporary directory (its `d1/` plugin folder). */
export function findD1Files(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      // metadata.sqlite is Miniflare's own bookkeeping of the objects, not a database.
      else if (
        entry.name.endsWith(".sqlite") &&
        entry.name !== "metadata.sqlite" &&
        path.split(sep).includes("d1")
      )
        found.push(path);
    }
  };
  walk(root);
  return found.sort();
}

/**
 * Bytes of the objects stored in local R2 (the turn inspector may keep prompt text there): the
 * blob files under Miniflare's `r2/` folders, without the SQLite files that index them.
 */
export function r2ObjectBytes(root: string): number {
  let bytes = 0;
  const walk = (dir: string, inR2: boolean) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, inR2 || entry.name === "r2");
      else if (inR2 && !/\.sqlite(-wal|-shm)?$/.test(entry.name)) bytes += statSync(path).size;
    }
  };
  walk(root, false);
  return bytes;
}

export function snapshotDatabases(files: string[]): DatabaseSnapshot {
  const tables: TableBytes = new Map();
  let fileBytes = 0;
  for (const file of files) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const owner = ownersOf(db);
      const rows = db
        .prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name")
        .all() as Array<{ name: string; bytes: number }>;
      for (const row of rows) {
        const table = owner.get(row.name) ?? row.name;
        tables.set(table, (tables.get(table) ?? 0) + Number(row.bytes));
      }
      const pages = db.prepare("PRAGMA page_count").get() as { page_count: number };
      const size = db.prepare("PRAGMA page_size").get() as { page_size: number };
      fileBytes += Number(pages.page_count) * Number(size.page_size);
    } finally {
      db.close();
    }
  }
  return { tables, fileBytes, databases: files.length };
}

/** Bytes each table gained from `before` to `after` (tables that did not change are left out). */
export function growth(before: TableBytes, after: TableBytes): TableBytes {
  const grown: TableBytes = new Map();
  for (const [table, bytes] of after) {
    const delta = bytes - (before.get(table) ?? 0);
    if (delta !== 0) grown.set(table, delta);
  }
  for (const [table, bytes] of before) if (!after.has(table)) grown.set(table, -bytes);
  return grown;
}

/**
 * Which table each b-tree belongs to: an index to its table (sqlite_autoindex_* included), an FTS5
 * shadow table (`<name>_data`, `_idx`, `_content`, `_docsize`, `_config`) to its virtual table.
 */
function ownersOf(db: DatabaseSync): Map<string, string> {
  const schema = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema").all() as Array<{
    type: string;
    name: string;
    tbl_name: string;
    sql: string | null;
  }>;
  const virtual = schema
    .filter((row) => row.type === "table" && /^CREATE VIRTUAL TABLE/i.test(row.sql ?? ""))
    .map((row) => row.name);
  const owner = new Map<string, string>();
  for (const row of schema) {
    if (row.type === "index") owner.set(row.name, row.tbl_name);
    const shadowOf = virtual.find((name) => row.name.startsWith(`${name}_`));
    if (row.type === "table" && shadowOf) owner.set(row.name, shadowOf);
  }
  return owner;
}
