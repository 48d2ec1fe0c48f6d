// The runtime's MemoryStore over D1 with drizzle. Writes that belong together go in one
// `db.batch()` (atomic on D1; `db.transaction()` is not supported there). Every write is
// idempotent by key (a memory's is its agent and id) so a replayed turn never duplicates a message.
import { and, asc, desc, eq, gt, lt, sql } from "drizzle-orm";
import type { Db } from "./db.ts";
import type { InboundMessage, Memory, MemoryStore } from "../runtime/types.ts";
import { upsertMemory } from "./memory-repo.ts";
import { fromMemoryRow, toMemoryRow } from "./rows.ts";
import { memories, participants, relationships, rooms, users } from "./schema.ts";

export function createD1MemoryStore(db: Db): MemoryStore {
  return {
    async saveInbound({ memory, userName, source }: InboundMessage): Promise<void> {
      const at = memory.createdAt;
      const userId = memory.userId;
      const roomId = memory.roomId;
      if (!userId || !roomId) throw new TypeError("an inbound message needs a user and a room");
      await db.batch([
        db
          .insert(users)
          .values({ id: userId, name: userName ?? null, source, createdAt: at, updatedAt: at })
          .onConflictDoUpdate({
            target: users.id,
            set: { name: sql`coalesce(excluded.name, ${users.name})`, updatedAt: at },
          }),
        db
          .insert(rooms)
          .values({ agentId: memory.agentId, id: roomId, source, createdAt: at, updatedAt: at })
          .onConflictDoUpdate({ target: [rooms.agentId, rooms.id], set: { updatedAt: at } }),
        db
          .insert(participants)
          .values({ agentId: memory.agentId, roomId, userId, firstSeenAt: at, lastSeenAt: at })
          .onConflictDoUpdate({
            target: [participants.agentId, participants.roomId, participants.userId],
            set: { lastSeenAt: at },
          }),
        db.insert(memories).values(toMemoryRow(memory)).onConflictDoNothing(),
      ]);
    },

    async saveMemory(memory: Memory): Promise<void> {
      await db.insert(memories).values(toMemoryRow(memory)).onConflictDoNothing();
    },

    recentMessages: (query) => selectRoomMessages(db, query),

    async recordInteraction({ agentId, userId, turnId, at }): Promise<number> {
      const [counted] = await db
        .insert(relationships)
        .values({ agentId, userId, interactionCount: 1, lastInteraction: at, lastTurnId: turnId })
        .onConflictDoUpdate({
          target: [relationships.agentId, relationships.userId],
          set: {
            interactionCount: sql`${relationships.interactionCount} + 1`,
            lastInteraction: at,
            lastTurnId: turnId,
          },
          // A replayed turn (after eviction) must not count twice.
          setWhere: sql`${relationships.lastTurnId} IS NOT ${turnId}`,
        })
        .returning({ count: relationships.interactionCount });
      if (counted) return counted.count;
      // A replay changed nothing, so nothing was returned: read the count it left.
      const [row] = await db
        .select({ count: relationships.interactionCount })
        .from(relationships)
        .where(and(eq(relationships.agentId, agentId), eq(relationships.userId, userId)));
      return row?.count ?? 0;
    },

    upsertMemory: (memory) => upsertMemory(db, memory),

    async roomMessagesAfter({ agentId, roomId, afterMs, limit }) {
      const rows = await db
        .select()
        .from(memories)
        .where(
          and(
            eq(memories.agentId, agentId),
            eq(memories.roomId, roomId),
            eq(memories.type, "message"),
            gt(memories.createdAt, afterMs),
          ),
        )
        .orderBy(asc(memories.createdAt), asc(memories.seq))
        .limit(limit);
      return rows.map(fromMemoryRow);
    },

    async latestSummary({ agentId, roomId }) {
      const row = await db
        .select()
        .from(memories)
        .where(
          and(
            eq(memories.agentId, agentId),
            eq(memories.roomId, roomId),
            eq(memories.type, "summary"),
          ),
        )
        .orderBy(desc(memories.createdAt))
        .limit(1)
        .get();
      return row ? fromMemoryRow(row) : null;
    },
  };
}

/** A room's messages, newest first: the one query behind prompts, the history tool and the API. */
export async function selectRoomMessages(
  db: Db,
  {
    agentId,
    roomId,
    limit,
    beforeMs,
  }: { agentId: string; roomId: string; limit: number; beforeMs?: number },
): Promise<Memory[]> {
  const conditions = [
    eq(memories.agentId, agentId),
    eq(memories.roomId, roomId),
    eq(memories.type, "message"),
  ];
  if (beforeMs !== undefined) conditions.push(lt(memories.createdAt, beforeMs));
  const rows = await db
    .select()
    .from(memories)
    .where(and(...conditions))
    // seq breaks ties between rows written in the same millisecond, in insertion order.
    .orderBy(desc(memories.createdAt), desc(memories.seq))
    .limit(limit);
  return rows.map(fromMemoryRow);
}
