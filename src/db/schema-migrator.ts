// Applies the bundled migrations D1 has not applied yet, each in one atomic batch with its row in
// `d1_migrations` (the table and format `wrangler d1 migrations apply` uses, so either may run and
// the other finds nothing to do). A failing migration rolls back whole and stops the run: the
// database stays at the last version that applied, and the error says which one failed.
import type { BundledMigration } from "./migrations-bundle.ts";

export const MIGRATIONS_TABLE = "d1_migrations";

export interface SchemaState {
  /** The newest migration applied (its file name), or null for an empty database. */
  version: string | null;
  /** The newest migration this code knows. */
  latest: string | null;
  /** Applied by this run, in order. */
  applied: string[];
  /** Known migrations still not applied (after a failure: the failed one and those after it). */
  pending: string[];
  /** Why the run stopped early; null when the schema is current. */
  error: { migration: string; message: string } | null;
  /** Each memory database's own run (src/db/shards.ts); absent or empty without any. */
  databases?: MemoryDatabaseSchema[];
}

export interface MemoryDatabaseSchema {
  name: string;
  version: string | null;
  error: { migration: string; message: string } | null;
}

/** The catalog and every memory database are at this code's migrations. */
export function schemaCurrent(state: SchemaState): boolean {
  return state.error === null && (state.databases ?? []).every((each) => each.error === null);
}

export async function applyPendingMigrations(
  db: D1Database,
  migrations: readonly BundledMigration[],
): Promise<SchemaState> {
  await db
    .prepare(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT UNIQUE,
        applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
      )`,
    )
    .run();
  const done = new Set(
    (await db.prepare(`SELECT name FROM ${MIGRATIONS_TABLE}`).all<{ name: string }>()).results.map(
      (row) => row.name,
    ),
  );
  const latest = migrations.at(-1)?.name ?? null;
  const applied: string[] = [];
  const todo = migrations.filter((migration) => !done.has(migration.name));
  for (const [index, migration] of todo.entries()) {
    try {
      const statements = migration.queries.map((query) => db.prepare(query));
      statements.push(
        db.prepare(`INSERT INTO ${MIGRATIONS_TABLE} (name) VALUES (?)`).bind(migration.name),
      );
      await db.batch(statements);
      applied.push(migration.name);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return {
        version: newestApplied(migrations, done, applied),
        latest,
        applied,
        pending: todo.slice(index).map((m) => m.name),
        error: { migration: migration.name, message: message.slice(0, 500) },
      };
    }
  }
  return {
    version: newestApplied(migrations, done, applied),
    latest,
    applied,
    pending: [],
    error: null,
  };
}

function newestApplied(
  migrations: readonly BundledMigration[],
  done: Set<string>,
  applied: string[],
): string | null {
  const all = new Set([...done, ...applied]);
  return [...migrations].reverse().find((migration) => all.has(migration.name))?.name ?? null;
}
