// What the worker has stored, as one comparable value: every D1 table (found in sqlite_master, so
// tables added later are covered) with its row count and a digest of all its rows, and the R2
// bucket's listing. The fuzz test compares snapshots taken around a request to prove that a
// refused request wrote nothing, not even half of a batch.
import { env } from "cloudflare:workers";

export interface StorageSnapshot {
  /** Per table: `<rows>:<digest of every row>`. */
  tables: Record<string, string>;
  /** Per R2 object: `<size>:<etag>`. */
  media: Record<string, string>;
}

export interface StorageSnapshotter {
  readonly tables: readonly string[];
  take(): Promise<StorageSnapshot>;
}

/** Tables that are D1's or SQLite's own bookkeeping, not the worker's data. */
const INTERNAL_TABLE = /^(sqlite_|_cf_|d1_migrations$)/;

export async function createStorageSnapshotter(): Promise<StorageSnapshotter> {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
  ).all<{ name: string }>();
  const tables = results.map((row) => row.name).filter((name) => !INTERNAL_TABLE.test(name));
  const statements = await Promise.all(
    tables.map(async (table) => {
      const columns = await env.DB.prepare("SELECT name FROM pragma_table_info(?1)")
        .bind(table)
        .all<{ name: string }>();
      // quote() renders any value (blobs included) as SQL text, so one string covers a row.
      const row = columns.results.map((column) => `quote(${ident(column.name)})`).join(", ");
      return env.DB.prepare(
        `SELECT count(*) AS n, (SELECT group_concat(r, char(10)) FROM (SELECT json_array(${row}) AS r FROM ${ident(table)} ORDER BY r)) AS rows FROM ${ident(table)}`,
      );
    }),
  );

  return {
    tables,
    async take() {
      const [counts, media] = await Promise.all([
        env.DB.batch<{ n: number; rows: string | null }>(statements),
        listMedia(),
      ]);
      const snapshot: StorageSnapshot = { tables: {}, media };
      counts.forEach((result, i) => {
        const row = result.results[0];
        snapshot.tables[tables[i]!] = `${row?.n ?? 0}:${digest(row?.rows ?? "")}`;
      });
      return snapshot;
    },
  };
}

/** What differs between two snapshots, e.g. `memories: 3:… -> 4:…`; empty when nothing does. */
export function storageChanges(before: StorageSnapshot, after: StorageSnapshot): string[] {
  const changes: string[] = [];
  for (const [table, value] of Object.entries(after.tables)) {
    if (before.tables[table] !== value)
      changes.push(`${table}: ${before.tables[table]} -> ${value}`);
  }
  const keys = new Set([...Object.keys(before.media), ...Object.keys(after.media)]);
  for (const key of keys) {
    if (before.media[key] !== after.media[key])
      changes.push(
        `R2 ${key}: ${before.media[key] ?? "absent"} -> ${after.media[key] ?? "absent"}`,
      );
  }
  return changes;
}

async function listMedia(): Promise<Record<string, string>> {
  const objects: Record<string, string> = {};
  let cursor: string | undefined;
  do {
    const page = await env.MEDIA.list({ cursor });
    for (const object of page.objects) objects[object.key] = `${object.size}:${object.etag}`;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return objects;
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** FNV-1a over the rows' text: short enough to print, and any changed row changes it. */
function digest(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}
