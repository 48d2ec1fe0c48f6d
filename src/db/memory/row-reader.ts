// How hybrid search reads rows: a function that runs statements in one D1 batch and returns each
// one's rows. Searches that start together (a turn's providers') share one round trip through the
// room's binding (shared-trips.ts), not through anything here.
import type { Db } from "../db.ts";
import { batchRawRows, type RawRow } from "./memory-repo.ts";

/** A statement built with drizzle, or one already bound (compiled.ts). */
export type RawQuery = { toSQL(): { sql: string; params: unknown[] } } | D1PreparedStatement;

/** Runs statements in one D1 batch and returns each one's rows (batchRawRows' shape). */
export type RowReader = (queries: RawQuery[]) => Promise<RawRow[][]>;

/** Each call its own batch. */
export function directReader(db: Db): RowReader {
  return (queries) => batchRawRows(db, queries);
}
