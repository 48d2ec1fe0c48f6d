// The outboxes of vectors to delete from Vectorize, which cannot join with D1: deleted memories'
// vectors (written by the delete trigger of migrations/0013, keyed per agent) and the vectors
// written under the old, global memory ids before that migration (listed once by it). The
// embedding pipeline's sweeper drains both.
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db.ts";
import { legacyVectorIds, memories, vectorDeletions } from "../schema.ts";

const IDS_PER_QUERY = 90;

export interface VectorDeletion {
  agentId: string;
  memoryId: string;
}

/** Vectors whose memories are gone, for the Vectorize sweeper. Ids the agent wrote again are skipped. */
export async function takeVectorDeletions(db: Db, limit: number): Promise<VectorDeletion[]> {
  return db
    .select({ agentId: vectorDeletions.agentId, memoryId: vectorDeletions.memoryId })
    .from(vectorDeletions)
    .where(
      sql`NOT EXISTS (SELECT 1 FROM ${memories} WHERE ${memories.agentId} = ${vectorDeletions.agentId} AND ${memories.id} = ${vectorDeletions.memoryId})`,
    )
    .limit(limit);
}

export async function clearVectorDeletions(db: Db, rows: VectorDeletion[]): Promise<void> {
  for (const [agentId, ids] of byAgent(rows)) {
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      await db
        .delete(vectorDeletions)
        .where(
          and(
            eq(vectorDeletions.agentId, agentId),
            inArray(vectorDeletions.memoryId, ids.slice(i, i + IDS_PER_QUERY)),
          ),
        );
    }
  }
}

/** Old-scheme Vectorize ids still to delete (migration 0013), of one agent or of any. */
export async function takeLegacyVectorIds(
  db: Db,
  query: { agentId?: string; limit: number },
): Promise<string[]> {
  const rows = await db
    .select({ vectorId: legacyVectorIds.vectorId })
    .from(legacyVectorIds)
    .where(query.agentId === undefined ? undefined : eq(legacyVectorIds.agentId, query.agentId))
    .limit(query.limit);
  return rows.map((row) => row.vectorId);
}

export async function clearLegacyVectorIds(db: Db, vectorIds: string[]): Promise<void> {
  for (let i = 0; i < vectorIds.length; i += IDS_PER_QUERY) {
    await db
      .delete(legacyVectorIds)
      .where(inArray(legacyVectorIds.vectorId, vectorIds.slice(i, i + IDS_PER_QUERY)));
  }
}

/** Memory ids grouped by their agent, in first-seen order. */
export function byAgent(rows: VectorDeletion[]): Map<string, string[]> {
  const grouped = new Map<string, string[]>();
  for (const row of rows) {
    const ids = grouped.get(row.agentId);
    if (ids) ids.push(row.memoryId);
    else grouped.set(row.agentId, [row.memoryId]);
  }
  return grouped;
}
