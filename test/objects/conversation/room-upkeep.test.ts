// A room's embedding passes after its turns (src/objects/conversation/room-upkeep.ts): right after
// a turn only the vectors at hand are written (knownOnly); what was left to ride along with the
// next query gets a call of its own once the room is quiet, and a turn sooner postpones that. The
// upkeep is platform-free (its scheduling is handed in), so this runs in plain Node.
import { describe, expect, it } from "vitest";
import { RoomUpkeep } from "../../../src/objects/conversation/room-upkeep.ts";
import type { EmbeddingPipeline } from "../../../src/db/memory/embedding-pipeline.ts";

type Pass = Parameters<EmbeddingPipeline["embedPending"]>[0];

function upkeep(answer: (pass: Pass) => Awaited<ReturnType<EmbeddingPipeline["embedPending"]>>) {
  const passes: Pass[] = [];
  const queued: string[] = [];
  const room = new RoomUpkeep({
    room: "a:lake",
    delivery: { pending: async () => undefined } as never,
    db: async () => {
      throw new Error("no database in this test");
    },
    embeddings: async () => ({
      embedPending: async (pass: Pass) => {
        passes.push(pass);
        return answer(pass);
      },
    }),
    forgetHistory: async () => undefined,
    queue: async (callback) => {
      queued.push(callback);
    },
    expireAt: async () => undefined,
    wake: async () => undefined,
    embedFlushMs: 40,
  });
  return { room, passes, queued };
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a room's embedding passes", () => {
  it("writes the vectors at hand after a turn, and embeds the rest once the room is quiet", async () => {
    const { room, passes, queued } = upkeep((pass) =>
      pass.knownOnly
        ? { embedded: 1, pending: true, deferred: 1 }
        : { embedded: 1, pending: false },
    );
    room.evaluated("a", "lake");
    await settle(10);
    expect(passes).toEqual([{ agentId: "a", roomId: "lake", knownOnly: true }]);
    await settle(60);
    expect(passes).toEqual([
      { agentId: "a", roomId: "lake", knownOnly: true },
      { agentId: "a", roomId: "lake" },
    ]);
    expect(queued).toEqual([]);
  });

  it("postpones the quiet room's pass when another turn comes first", async () => {
    const { room, passes } = upkeep((pass) =>
      pass.knownOnly
        ? { embedded: 2, pending: true, deferred: 1 }
        : { embedded: 1, pending: false },
    );
    room.evaluated("a", "lake");
    await settle(25);
    room.evaluated("a", "lake");
    await settle(25);
    // 50 ms after the first turn, 25 after the second: no call of its own yet.
    expect(passes.filter((pass) => !pass.knownOnly)).toHaveLength(0);
    await settle(40);
    expect(passes.map((pass) => pass.knownOnly ?? false)).toEqual([true, true, false]);
  });

  it("leaves a durable queue item when more waits than one pass takes, and no timer", async () => {
    const { room, passes, queued } = upkeep(() => ({ embedded: 100, pending: true }));
    room.evaluated("a", "lake");
    await settle(70);
    expect(passes).toHaveLength(1);
    expect(queued).toEqual(["embedPending"]);
  });
});
