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

const roomKey = (agentId: string, roomId: string) => `${agentId}\u0000${roomId}`;

/** What the room holds of its own messages, newest first, and of its newest summary. */
class RecentMessages {
  /** The room whose messages are held (agent and room id); null: none yet. */
  private key: string | null = null;
  /** Newest first. */
  private cached: Memory[] = [];
  /** True when `cached` holds every message the room has (fewer than were asked for came back). */
  private complete = false;
  /** The room's newest summary once read (null: it has none); undefined: not known. */
  private summary: Memory | null | undefined;

  add(memory: Memory): void {
    this.noteSummary(memory);
    if (memory.type !== "message" || !memory.roomId || !this.holds(memory.agentId, memory.roomId))
      return;
    if (this.cached.some((m) => m.id === memory.id)) return;
    this.cached = [memory, ...this.cached].sort((a, b) => b.createdAt - a.createdAt);
    if (this.cached.length > ROOM_HISTORY_CAPACITY) {
      this.cached = this.cached.slice(0, ROOM_HISTORY_CAPACITY);
      this.complete = false;
    }
  }

  /** A summary this room writes is its newest (summaries sort by the last message they cover). */
  noteSummary(memory: Memory): void {
    if (memory.type !== "summary" || !memory.roomId) return;
    if (!this.holds(memory.agentId, memory.roomId) || this.summary === undefined) return;
    if (this.summary === null || memory.createdAt >= this.summary.createdAt) this.summary = memory;
  }

  /** The newest `limit` messages of the room, newest first, when they are all held; else null. */
  recent(query: { agentId: string; roomId: string; limit: number }): Memory[] | null {
    if (!this.holds(query.agentId, query.roomId)) return null;
    return this.complete || this.cached.length >= query.limit
      ? this.cached.slice(0, query.limit)
      : null;
  }

  /** The newest messages as read from D1 (`limit` asked for): the room's history from now on. */
  fill(agentId: string, roomId: string, rows: Memory[], limit: number): void {
    if (!this.holds(agentId, roomId)) this.summary = undefined;
    this.key = roomKey(agentId, roomId);
    this.cached = rows;
    this.complete = rows.length < limit;
  }

  /**
   * The room's messages after `afterMs`, oldest first, when it holds all of them: it holds every
   * message of the room, or its oldest is no newer than `afterMs` (the cache is the newest
   * messages, so everything after its oldest is in it). Else null.
   */
  after(agentId: string, roomId: string, afterMs: number, limit: number): Memory[] | null {
    if (!this.holds(agentId, roomId)) return null;
    const oldest = this.cached[this.cached.length - 1];
    if (!this.complete && (oldest === undefined || oldest.createdAt > afterMs)) return null;
    return this.cached
      .filter((m) => m.createdAt > afterMs)
      .reverse()
      .slice(0, limit);
  }

  /** The room's newest summary (null: none) when known; undefined: not known. */
  latestSummary(agentId: string, roomId: string): Memory | null | undefined {
    return this.holds(agentId, roomId) ? this.summary : undefined;
  }

  /** What D1 said of the room's newest summary, kept while the room's messages are held. */
  learnSummary(agentId: string, roomId: string, found: Memory | null): void {
    if (this.holds(agentId, roomId)) this.summary = found;
  }

  reset(): void {
    this.key = null;
    this.cached = [];
    this.complete = false;
    this.summary = undefined;
  }

  private holds(agentId: string, roomId: string): boolean {
    return this.key === roomKey(agentId, roomId);
  }
}

export function createRoomHistoryStore(
  store: MemoryStore,
  options: { settled: () => Promise<void> },
): RoomHistoryStore {
  const held = new RecentMessages();
  const build = (settled: () => Promise<void>): MemoryStore => ({
    async saveInbound(message: InboundMessage) {
      await store.saveInbound(message);
      held.add(message.memory);
    },
    async saveMemory(memory) {
      await store.saveMemory(memory);
      held.add(memory);
    },
    async recentMessages(query) {
      const known = query.beforeMs === undefined ? held.recent(query) : null;
      if (known) return known;
      await settled();
      const rows = await store.recentMessages(query);
      if (query.beforeMs === undefined && query.limit <= ROOM_HISTORY_CAPACITY)
        held.fill(query.agentId, query.roomId, rows, query.limit);
      return rows;
    },
    recordInteraction: (input) => store.recordInteraction(input),
    async upsertMemory(memory) {
      await store.upsertMemory(memory);
      held.noteSummary(memory);
    },
    async saveTogether(input) {
      await store.saveTogether(input);
      for (const memory of input.add) held.add(memory);
      for (const memory of input.replace) held.noteSummary(memory);
    },
    async roomMessagesAfter(query) {
      const known = held.after(query.agentId, query.roomId, query.afterMs, query.limit);
      if (known) return known;
      await settled();
      return store.roomMessagesAfter(query);
    },
    async latestSummary(query) {
      const known = held.latestSummary(query.agentId, query.roomId);
      if (known !== undefined) return known;
      const found = await store.latestSummary(query);
      held.learnSummary(query.agentId, query.roomId, found);
      return found;
    },
  });

  return {
    ...build(options.settled),
    inChain: build(() => Promise.resolve()),
    remember: (memory) => held.add(memory),
    reset: () => held.reset(),
  };
}
