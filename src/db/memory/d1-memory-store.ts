// The runtime's MemoryStore over D1 with drizzle. Writes that belong together go in one
// `db.batch()` (atomic on D1; `db.transaction()` is not supported there). Every write is
// idempotent by key (a memory's is its agent and id) so a replayed turn never duplicates a message.
import { and, asc, desc, eq, gt, lt, sql } from "drizzle-orm";
import type { Db } from "../db.ts";
import type { InboundMessage, Memory, MemoryStore } from "../../runtime/ports/memory.ts";
import { compiled } from "./compiled.ts";
import { REPLACE_ON_CONFLICT } from "./memory-repo.ts";
import { fromMemoryRow, toMemoryRow } from "./rows.ts";
import { memories, participants, relationships, rooms, users } from "../schema.ts";

const placeholder = (name: string) => sql.placeholder(name);
/** A placeholder where drizzle wants SQL (an update's `set`). */
const value = (name: string) => sql`${sql.placeholder(name)}`;

/** A memory, as toMemoryRow gives it; a replayed write (same agent and id) changes nothing. */
const insertMemory = compiled((db) =>
  db.insert(memories).values(memoryPlaceholders()).onConflictDoNothing(),
);

/**
 * A memory that replaces whatever the agent holds under the same id (a user's profile, a room's
 * summary): the whole row, type included, so a memory written earlier under an id the runtime
 * derives (by the API, as another type) can neither block nor disguise it. The replaced row loses
 * its vector until re-embedded.
 */
const replaceMemory = compiled((db) =>
  db.insert(memories).values(memoryPlaceholders()).onConflictDoUpdate(REPLACE_ON_CONFLICT),
);

/** A memory row's columns as placeholders named like toMemoryRow's fields. */
function memoryPlaceholders() {
  return {
    id: placeholder("id"),
    type: placeholder("type"),
    agentId: placeholder("agentId"),
    roomId: placeholder("roomId"),
    userId: placeholder("userId"),
    parentId: placeholder("parentId"),
    content: placeholder("content"),
    metadata: placeholder("metadata"),
    createdAt: placeholder("createdAt"),
  };
}

const upsertUser = compiled((db) =>
  db
    .insert(users)
    .values({
      id: placeholder("userId"),
      name: placeholder("name"),
      source: placeholder("source"),
      createdAt: placeholder("at"),
      updatedAt: placeholder("at"),
    })
    .onConflictDoUpdate({
      target: users.id,
      set: { name: sql`coalesce(excluded.name, ${users.name})`, updatedAt: value("at") },
    }),
);

const upsertRoom = compiled((db) =>
  db
    .insert(rooms)
    .values({
      agentId: placeholder("agentId"),
      id: placeholder("roomId"),
      source: placeholder("source"),
      createdAt: placeholder("at"),
      updatedAt: placeholder("at"),
    })
    .onConflictDoUpdate({ target: [rooms.agentId, rooms.id], set: { updatedAt: value("at") } }),
);

const upsertParticipant = compiled((db) =>
  db
    .insert(participants)
    .values({
      agentId: placeholder("agentId"),
      roomId: placeholder("roomId"),
      userId: placeholder("userId"),
      firstSeenAt: placeholder("at"),
      lastSeenAt: placeholder("at"),
    })
    .onConflictDoUpdate({
      target: [participants.agentId, participants.roomId, participants.userId],
      set: { lastSeenAt: value("at") },
    }),
);

/** One more interaction, unless this turn was counted already (a replay after eviction). */
const countInteraction = compiled((db) =>
  db
    .insert(relationships)
    .values({
      agentId: placeholder("agentId"),
      userId: placeholder("userId"),
      interactionCount: 1,
      lastInteraction: placeholder("at"),
      lastTurnId: placeholder("turnId"),
    })
    .onConflictDoUpdate({
      target: [relationships.agentId, relationships.userId],
      set: {
        interactionCount: sql`${relationships.interactionCount} + 1`,
        lastInteraction: value("at"),
        lastTurnId: value("turnId"),
      },
      setWhere: sql`${relationships.lastTurnId} IS NOT ${placeholder("turnId")}`,
    })
    .returning({ count: relationships.interactionCount }),
);

export function createD1MemoryStore(db: Db): MemoryStore {
  return {
    async saveInbound({ memory, userName, source }: InboundMessage): Promise<void> {
      const at = memory.createdAt;
      const userId = memory.userId;
      const roomId = memory.roomId;
      if (!userId || !roomId) throw new TypeError("an inbound message needs a user and a room");
      const keys = { agentId: memory.agentId, roomId, userId, source, at };
      await db.$client.batch([
        upsertUser.bind(db, { ...keys, name: userName ?? null }),
        upsertRoom.bind(db, keys),
        upsertParticipant.bind(db, keys),
        insertMemory.bind(db, toMemoryRow(memory)),
      ]);
    },

    async saveMemory(memory: Memory): Promise<void> {
      await insertMemory.bind(db, toMemoryRow(memory)).run();
    },

    recentMessages: (query) => selectRoomMessages(db, query),

    async recordInteraction({ agentId, userId, turnId, at }): Promise<number> {
      const counted = await countInteraction
        .bind(db, { agentId, userId, turnId, at })
        .first<{ interaction_count: number }>();
      if (counted) return counted.interaction_count;
      // A replay changed nothing, so nothing was returned: read the count it left.
      const [row] = await db
        .select({ count: relationships.interactionCount })
        .from(relationships)
        .where(and(eq(relationships.agentId, agentId), eq(relationships.userId, userId)));
      return row?.count ?? 0;
    },

    async upsertMemory(memory) {
      await replaceMemory.bind(db, toMemoryRow(memory)).run();
    },

    async saveTogether({ add, replace }) {
      const statements = [
        ...add.map((memory) => insertMemory.bind(db, toMemoryRow(memory))),
        ...replace.map((memory) => replaceMemory.bind(db, toMemoryRow(memory))),
      ];
      if (statements.length > 0) await db.$client.batch(statements);
    },

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
