// One embedding call per turn (issue 56): a turn's stored message takes the vector its query got
// (the embedder remembers recent texts, src/runtime/retrieval/recent-vectors.ts); what nobody waits
// for (the reply) is handed to the embedder to ride along with the next call and stays pending
// until then; a full pass embeds whatever is still waiting. The local embedder, which costs no
// call, embeds everything at once.
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { createEmbeddingPipeline } from "../../../src/db/memory/embedding-pipeline.ts";
import { createHybridSearch } from "../../../src/db/memory/hybrid-search.ts";
import { createLocalVectorIndex } from "../../../src/db/memory/local-vector-index.ts";
import { insertMemories, pendingEmbeddings } from "../../../src/db/memory/memory-repo.ts";
import { createHashEmbedder, hashEmbed } from "../../../src/runtime/retrieval/hash-embedder.ts";
import { withRecentVectors } from "../../../src/runtime/retrieval/recent-vectors.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import type { Embedder } from "../../../src/runtime/ports/vectors.ts";

const DIMENSIONS = 384;
let counter = 0;

function apiEmbedder(): Embedder & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    id: "openai:counting",
    kind: "openai",
    dimensions: DIMENSIONS,
    maxBatch: 100,
    calls,
    async embed(texts) {
      calls.push(texts);
      return texts.map((text) => hashEmbed(text, DIMENSIONS));
    },
  };
}

async function room(inner: Embedder) {
  const agentId = `reuse-${Date.now().toString(36)}-${++counter}`;
  await env.DB.prepare(
    "INSERT INTO agents (id, name, format, character, created_at, updated_at) VALUES (?, 'R', 'v1', '{\"name\":\"R\"}', 0, 0)",
  )
    .bind(agentId)
    .run();
  const db = drizzle(env.DB);
  const index = createLocalVectorIndex(db);
  const embedder = withRecentVectors(inner);
  const pipeline = createEmbeddingPipeline({ db, embedder, index, now: () => Date.now() });
  const search = createHybridSearch({ db, index, embedder });
  let at = Date.now();
  const message = (id: string, role: "user" | "agent", text: string): Memory => ({
    id,
    type: "message",
    agentId,
    roomId: "lake",
    userId: role === "user" ? "ana" : null,
    content: { text, role, ...(role === "user" ? { userName: "Ana" } : {}) },
    metadata: {},
    createdAt: at++,
  });
  /** A turn as the room runs it: the query's vector, the two messages stored, the pass after. */
  const turn = async (n: number, said: string) => {
    expect(await search.embedQuery(said)).not.toBeNull();
    await insertMemories(db, [
      message(`t${n}:in`, "user", said),
      message(`t${n}:out`, "agent", `Reply ${n}: noted.`),
    ]);
    return pipeline.embedPending({ agentId, roomId: "lake", knownOnly: true });
  };
  const pending = async () =>
    (await pendingEmbeddings(db, { agentId, roomId: "lake", limit: 100 })).map((m) => m.id);
  return { agentId, pipeline, turn, pending };
}

describe("one embedding call per turn", () => {
  it("gives the stored message its query's vector, and the reply a ride on the next turn's query", async () => {
    const inner = apiEmbedder();
    const { agentId, pipeline, turn, pending } = await room(inner);

    expect(await turn(1, "We took the red kayak out on the lake.")).toEqual({
      embedded: 1,
      pending: true,
      deferred: 1,
    });
    expect(await pending()).toEqual(["t1:out"]);
    expect(inner.calls).toEqual([["We took the red kayak out on the lake."]]);

    // The next query's call carries the waiting reply; after the turn nothing needs a call.
    expect(await turn(2, "The wind picked up near the island.")).toEqual({
      embedded: 2,
      pending: true,
      deferred: 1,
    });
    expect(inner.calls).toEqual([
      ["We took the red kayak out on the lake."],
      ["The wind picked up near the island.", "Reply 1: noted."],
    ]);
    expect(await pending()).toEqual(["t2:out"]);

    // A quiet room's pass embeds what still waits, in one call.
    expect(await pipeline.embedPending({ agentId, roomId: "lake" })).toEqual({
      embedded: 1,
      pending: false,
    });
    expect(inner.calls).toHaveLength(3);
    expect(inner.calls[2]).toEqual(["Reply 2: noted."]);
    expect(await pending()).toEqual([]);
  });

  it("embeds everything at once with the local embedder, which costs no call", async () => {
    const { turn, pending } = await room(createHashEmbedder({ dimensions: DIMENSIONS }));
    expect(await turn(1, "We took the red kayak out on the lake.")).toEqual({
      embedded: 2,
      pending: false,
    });
    expect(await pending()).toEqual([]);
  });
});
