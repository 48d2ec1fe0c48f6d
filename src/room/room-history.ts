// A room's recent messages, kept in the room object's memory. The room is the only writer of its
// messages and runs its turns one at a time, so after one load from D1 it can serve every later
// turn's history itself, saving a D1 round trip per turn. D1 reads first wait for the room's
// pending reply writes (`settled`), so a read never misses a reply the room has already given.
// Nothing else writes a room's messages today; a future writer (e.g. a memory API that deletes
// messages) must make the room drop this cache.
import type { InboundMessage, Memory, MemoryStore } from "../runtime/types.ts";

/** More than the runtime's history fetch limit, so a warm cache answers every turn. */
export const ROOM_HISTORY_CAPACITY = 100;

export interface RoomHistoryStore extends MemoryStore {
  /** Adds a message the room has produced but not yet written to D1 (a reply being persisted). */
  remember(memory: Memory): void;
}

export function createRoomHistoryStore(store: MemoryStore, options: { settled: () => Promise<void> }): RoomHistoryStore {
  let key: string | null = null;
  /** Newest first. */
  let cached: Memory[] = [];
  /** True when `cached` holds every message the room has (fewer than were asked for came back). */
  let complete = false;

  const roomKey = (agentId: string, roomId: string) => `${agentId}\u0000${roomId}`;
  const add = (memory: Memory) => {
    if (memory.type !== "message" || !memory.roomId || key !== roomKey(memory.agentId, memory.roomId)) return;
    if (cached.some((m) => m.id === memory.id)) return;
    cached = [memory, ...cached].sort((a, b) => b.createdAt - a.createdAt);
    if (cached.length > ROOM_HISTORY_CAPACITY) {
      cached = cached.slice(0, ROOM_HISTORY_CAPACITY);
      complete = false;
    }
  };

  return {
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
      if (query.beforeMs === undefined && key === wanted && (complete || cached.length >= query.limit)) {
        return cached.slice(0, query.limit);
      }
      await options.settled();
      const rows = await store.recentMessages(query);
      if (query.beforeMs === undefined && query.limit <= ROOM_HISTORY_CAPACITY) {
        key = wanted;
        cached = rows;
        complete = rows.length < query.limit;
      }
      return rows;
    },
    recordInteraction: (input) => store.recordInteraction(input),
    remember: add,
  };
}
