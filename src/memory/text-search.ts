// The full-text leg of hybrid retrieval: SQLite FTS5 (porter stemming) over memory text, ranked by
// BM25 and filtered to one agent. The query is reduced to its content words and OR-ed, each quoted,
// so user text can never be read as FTS5 syntax (a stray `"` or `NEAR(` is just a word).
import { and, eq, sql, type SQL } from "drizzle-orm";
import { integer, sqliteTable, text as textColumn } from "drizzle-orm/sqlite-core";
import { queryTerms } from "../runtime/query-terms.ts";
import type { Memory } from "../runtime/types.ts";
import type { Db } from "./d1-memory-store.ts";
import { filterConditions, type MemoryFilter } from "./memory-repo.ts";
import { fromMemoryRow } from "./rows.ts";
import { memories } from "./schema.ts";

/**
 * The FTS5 table of migrations/0002 as drizzle sees it, for typed joins. Declared here, outside
 * schema.ts, so drizzle-kit never tries to create it as an ordinary table.
 */
const memoriesFts = sqliteTable("memories_fts", { rowid: integer("rowid").notNull(), text: textColumn("text") });

export interface TextSearchQuery extends MemoryFilter {
  text: string;
  limit: number;
  /** Also match facts marked shared (any user), when filtering by user. */
  includeShared?: boolean;
}

/** The FTS5 MATCH expression for free text, or null when it has no searchable word. */
export function ftsQuery(text: string): string | null {
  const terms = queryTerms(text);
  if (terms.length === 0) return null;
  return terms.map((term) => `"${term.replace(/"/g, '""')}"`).join(" OR ");
}

/** Best first. Each memory comes with its BM25 rank (lower is better, as SQLite reports it). */
export async function searchText(db: Db, query: TextSearchQuery): Promise<Array<{ memory: Memory; embedded: boolean }>> {
  const match = ftsQuery(query.text);
  if (!match) return [];
  const { userId, ...rest } = query;
  const conditions: SQL[] = filterConditions(rest);
  if (userId !== undefined) {
    conditions.push(
      query.includeShared
        ? sql`(${memories.userId} = ${userId} OR json_extract(${memories.metadata}, '$.shared') = 1)`
        : sql`${memories.userId} = ${userId}`,
    );
  }
  const rows = await db
    .select()
    .from(memories)
    .innerJoin(memoriesFts, eq(memoriesFts.rowid, memories.seq))
    .where(and(sql`memories_fts MATCH ${match}`, ...conditions))
    .orderBy(sql`bm25(memories_fts)`)
    .limit(query.limit);
  return rows.map((row) => ({ memory: fromMemoryRow(row.memories), embedded: row.memories.embeddedAt !== null }));
}
