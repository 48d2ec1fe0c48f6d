// The room's in-memory history (src/objects/conversation/history-cache.ts) answers the summary evaluator's reads
// (messages since the last summary, and that summary) without the store when it holds them, and
// always with what the store itself would answer. The cache is pure (no platform), tested here beside the room object it serves.
import { describe, expect, it } from "vitest";
import { createRoomHistoryStore } from "../../../src/objects/conversation/history-cache.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import { FakeMemoryStore } from "../../helpers/fakes.ts";

const agentId = "a";
const roomId = "r";

function message(i: number, createdAt = 1_000 + i * 10): Memory {
  return {
    id: `m${i}`,
    type: "message",
    agentId,
    roomId,
    userId: "u",
    content: { text: `message ${i}` },
    metadata: {},
    createdAt,
  };
}

function summary(id: string, toMs: number): Memory {
  return {
    id,
    type: "summary",
    agentId,
    roomId,
    userId: null,
    content: { text: `summary up to ${toMs}` },
    metadata: { toMs },
    createdAt: toMs,
  };
}

/** The fake store, counting the reads that reach it. */
function countingStore() {
  const store = new FakeMemoryStore();
  const reads = { after: 0, summary: 0 };
  const after = store.roomMessagesAfter.bind(store);
  const latest = store.latestSummary.bind(store);
  store.roomMessagesAfter = (query) => {
    reads.after += 1;
    return after(query);
  };
  store.latestSummary = (query) => {
    reads.summary += 1;
    return latest(query);
  };
  return { store, reads };
}

describe("room history cache", () => {
  it("answers messages since a summary and the newest summary as the store would, without it once warm", async () => {
    const { store, reads } = countingStore();
    // 30 messages already in the store, some sharing a millisecond (ties keep insertion order).
    for (let i = 0; i < 30; i++) await store.saveMemory(message(i, 1_000 + Math.floor(i / 2) * 10));
    const history = createRoomHistoryStore(store, { settled: async () => {} });
    const room = history.inChain;

    // Cold: nothing is cached, so the summary read reaches the store; then the history loads,
    // and the summary is read once more and kept.
    expect(await room.latestSummary({ agentId, roomId })).toBeNull();
    expect(reads.summary).toBe(1);
    await room.recentMessages({ agentId, roomId, limit: 50 });
    expect(await room.latestSummary({ agentId, roomId })).toBeNull();
    expect(await room.latestSummary({ agentId, roomId })).toBeNull();
    expect(reads.summary).toBe(2);
    // The room has fewer than 50 messages: the cache holds all of them.
    const readsBefore = { ...reads };
    for (const afterMs of [-1, 1_000, 1_055, 1_140, 5_000]) {
      for (const limit of [1, 7, 61]) {
        const query = { agentId, roomId, afterMs, limit };
        expect(await room.roomMessagesAfter(query)).toEqual(await store.roomMessagesAfter(query));
      }
    }
    // Only the comparisons above went to the store (15 of them).
    expect(reads.after - readsBefore.after).toBe(15);

    // Turns add messages, and the evaluator writes a summary: both known without reading.
    for (let i = 30; i < 40; i++) await room.saveMemory(message(i));
    await room.upsertMemory(summary("s1", 1_100));
    const summaryReads = reads.summary;
    expect(await room.latestSummary({ agentId, roomId })).toMatchObject({ id: "s1" });
    expect(reads.summary).toBe(summaryReads);
    // A summary sorted before the newest one does not replace it.
    await room.upsertMemory(summary("s0", 1_050));
    expect((await room.latestSummary({ agentId, roomId }))?.id).toBe(
      (await store.latestSummary({ agentId, roomId }))?.id,
    );
  });

  it("reads the store when the cache does not reach back far enough, and after a reset", async () => {
    const { store, reads } = countingStore();
    for (let i = 0; i < 80; i++) await store.saveMemory(message(i));
    const history = createRoomHistoryStore(store, { settled: async () => {} });
    const room = history.inChain;
    // The newest 50 are cached (messages 30..79, from 1,300 ms).
    await room.recentMessages({ agentId, roomId, limit: 50 });
    const covered = { agentId, roomId, afterMs: 1_400, limit: 61 };
    const before = reads.after;
    expect(await room.roomMessagesAfter(covered)).toEqual(await store.roomMessagesAfter(covered));
    expect(reads.after - before).toBe(1); // the comparison's own read only
    // Messages from before the cache's oldest: only the store knows them all.
    const older = { agentId, roomId, afterMs: 1_000, limit: 61 };
    const expected = await store.roomMessagesAfter(older);
    const atStore = reads.after;
    expect(await room.roomMessagesAfter(older)).toEqual(expected);
    expect(reads.after - atStore).toBe(1);

    // The memory API changed the room: the next summary read goes to the store again.
    await room.latestSummary({ agentId, roomId });
    await store.saveMemory(summary("from-api", 1_500));
    history.reset();
    await room.recentMessages({ agentId, roomId, limit: 50 });
    expect((await room.latestSummary({ agentId, roomId }))?.id).toBe("from-api");
  });
});
