// A room's recent messages, kept in the room object's memory. The room is the only writer of its
// messages and runs its turns one at a time, so after one load from D1 it can serve every later
// turn's history itself, saving a D1 round trip per turn. D1 reads first wait for the room's
// pending reply writes (`settled`), so a read never misses a reply the room has already given.
// The same cache answers the summary evaluator (the messages since the last summary, and that
// summary) without D1 when it holds them. The memory API, which can add or delete a room's
// messages and summaries, tells the room to drop this cache.
import type { InboundMessage, Memory, MemoryStore } from "../../runtime/ports/memory.ts";

/** More than the runtime's history fetch limit, so a warm cache answers every turn. */
export const ROOM_HISTORY_CAPACITY = 100;

export interface RoomHistoryStore extends MemoryStore {
  /** Adds a message the room has produced but not yet written to D1 (a reply being persisted). */
  remember(memory: Memory): void;
  /** Drops the cache: the room's messages were changed from outside (the memory API). */
  reset(): void;
  /**
   * The same store for work that runs inside the room's after-reply chain (evaluators): it must
   * not wait for that chain to settle, since it is part of it.
   */
  readonly inChain: MemoryStore;
}

export function createRoomHistoryStore(
  store: MemoryStore,
  options: { settled: () => Promise<void> },
): RoomHistoryStore {
  let key: string | null = null;
  /** Newest first. */
  let cached: Memory[] = [];
  /** True when `cached` holds every message the room has (fewer than were asked for came back). */
  let complete = false;
  /** The room's newest summary once read (null: it has none); undefined: not known. */
  let summary: Memory | null | undefined;

  const roomKey = (agentId: string, roomId: string) => `${agentId}\u0000${roomId}`;
  const add = (memory: Memory) => {
    noteSummary(memory);
    if (
      memory.type !== "message" ||
      !memory.roomId ||
      key !== roomKey(memory.agentId, memory.roomId)
    )
      return;
    if (cached.some((m) => m.id === memory.id)) return;
    cached = [memory, ...cached].sort((a, b) => b.createdAt - a.createdAt);
    if (cached.length > ROOM_HISTORY_CAPACITY) {
      cached = cached.slice(0, ROOM_HISTORY_CAPACITY);
      complete = false;
    }
  };

  /** A summary this room writes is its newest (summaries sort by the last message they cover). */
  const noteSummary = (memory: Memory) => {
    if (memory.type !== "summary" || !memory.roomId) return;
    if (key !== roomKey(memory.agentId, memory.roomId) || summary === undefined) return;
    if (summary === null || memory.createdAt >= summary.createdAt) summary = memory;
  };

  /**
   * The room's messages after `afterMs`, oldest first, from the cache when it holds all of them:
   * it holds every message of the room, or its oldest is no newer than `afterMs` (the cache is the
   * newest messages, so everything after its oldest is in it). Else null.
   */
  const cachedAfter = (agentId: string, roomId: string, afterMs: number, limit: number) => {
    if (key !== roomKey(agentId, roomId)) return null;
    const oldest = cached[cached.length - 1];
    if (!complete && (oldest === undefined || oldest.createdAt > afterMs)) return null;
    return cached
      .filter((m) => m.createdAt > afterMs)
      .reverse()
      .slice(0, limit);
  };

  const build = (settled: () => Promise<void>): MemoryStore => ({
    async saveInbound(message: InboundMessage) {
      await store.saveInbound(message);
      add(message.memory);
    },
    async saveMemory(memory) {
      await store.saveMemory(memory);
      add(memory);
    },
    async recentMessages(query) {
      const wanted = roomKey(query.agentId, query.roomId);
      if (
        query.beforeMs === undefined &&
        key === wanted &&
        (complete || cached.length >= query.limit)
      ) {
        return cached.slice(0, query.limit);
      }
      await settled();
      const rows = await store.recentMessages(query);
      if (query.beforeMs === undefined && query.limit <= ROOM_HISTORY_CAPACITY) {
        if (key !== wanted) summary = undefined;
        key = wanted;
        cached = rows;
        complete = rows.length < query.limit;
      }
      return rows;
    },
    recordInteraction: (input) => store.recordInteraction(input),
    async upsertMemory(memory) {
      await store.upsertMemory(memory);
      noteSummary(memory);
    },
    async roomMessagesAfter(query) {
      const known = cachedAfter(query.agentId, query.roomId, query.afterMs, query.limit);
      if (known) return known;
      await settled();
      return store.roomMessagesAfter(query);
    },
    async latestSummary(query) {
      const wanted = roomKey(query.agentId, query.roomId);
      if (key === wanted && summary !== undefined) return summary;
      const found = await store.latestSummary(query);
      if (key === wanted) summary = found;
      return found;
    },
  });

  return {
    ...build(options.settled),
    inChain: build(() => Promise.resolve()),
    remember: add,
    reset() {
      key = null;
      cached = [];
      complete = false;
      summary = undefined;
    },
  };
}
