// Reads that start together share one D1 round trip. A turn's providers read long-term memory at
// once (the person's facts, knowledge, older messages of the room), each search with a statement
// or two of its own; a batcher made for that turn collects the statements handed to it until the
// current task and its microtasks are done, sends them as one D1 batch and gives each caller its
// own results. One batcher serves one turn (one request's work) and is then dropped: it is never
// shared between requests, which Workers forbid from finishing each other's I/O. Should the batch
// fail, each caller's statements are sent again on their own, so one failing statement fails only
// its own caller.
import type { Db } from "./db.ts";
import { batchRawRows, type RawRow } from "./memory-repo.ts";

/** A statement built with drizzle, or one already bound (compiled.ts). */
export type RawQuery = { toSQL(): { sql: string; params: unknown[] } } | D1PreparedStatement;

/** Runs statements in one D1 batch and returns each one's rows (batchRawRows' shape). */
export type RowReader = (queries: RawQuery[]) => Promise<RawRow[][]>;

interface Waiting {
  queries: RawQuery[];
  resolve: (rows: RawRow[][]) => void;
  reject: (error: unknown) => void;
}

/** Each call its own batch. */
export function directReader(db: Db): RowReader {
  return (queries) => batchRawRows(db, queries);
}

/** Calls made before the current task ends are sent as one batch (see the top of this file). */
export function createReadBatcher(db: Db): RowReader {
  let waiting: Waiting[] = [];
  const flush = async () => {
    const taken = waiting;
    waiting = [];
    if (taken.length === 1) {
      const [only] = taken;
      await batchRawRows(db, only!.queries).then(only!.resolve, only!.reject);
      return;
    }
    try {
      const results = await batchRawRows(
        db,
        taken.flatMap((entry) => entry.queries),
      );
      let at = 0;
      for (const entry of taken) {
        entry.resolve(results.slice(at, at + entry.queries.length));
        at += entry.queries.length;
      }
    } catch {
      // One caller's statement may have failed the whole batch: each caller on its own.
      await Promise.all(
        taken.map((entry) => batchRawRows(db, entry.queries).then(entry.resolve, entry.reject)),
      );
    }
  };
  return (queries) => {
    if (queries.length === 0) return Promise.resolve([]);
    return new Promise<RawRow[][]>((resolve, reject) => {
      waiting.push({ queries, resolve, reject });
      // A timer of 0 runs once this task's microtasks are done: the reads started together are in.
      if (waiting.length === 1) setTimeout(() => void flush(), 0);
    });
  };
}
