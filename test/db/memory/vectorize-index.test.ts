// Long-term memory over Vectorize, which has no local simulator: the embedding pipeline, hybrid
// search and the deletion sweeper against a fake index that keeps ids unique across the whole
// index as Vectorize does. Memory ids are unique per agent only (migration 0013), so the same id
// in two agents must be two vectors, found and deleted each for its own agent; vectors stored
// under the old global ids are deleted by `init` (one agent) and the sweep (all).
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { createEmbeddingPipeline } from "../../../src/db/memory/embedding-pipeline.ts";
import { createHybridSearch } from "../../../src/db/memory/hybrid-search.ts";
import {
  deleteMemories,
  insertMemories,
  memoriesByIds,
} from "../../../src/db/memory/memory-repo.ts";
import { createVectorizeIndex, vectorizeId } from "../../../src/db/memory/vectorize-index.ts";
import { createHashEmbedder } from "../../../src/runtime/retrieval/hash-embedder.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import { fakeVectorize } from "../../helpers/fake-vectorize.ts";

const DIMENSIONS = 384;

let agentCounter = 0;
async function agent(): Promise<string> {
  const id = `vz-${Date.now().toString(36)}-${++agentCounter}`;
  await env.DB.prepare(
    "INSERT INTO agents (id, name, format, character, created_at, updated_at) VALUES (?, 'V', 'v1', '{\"name\":\"V\"}', 0, 0)",
  )
    .bind(id)
    .run();
  return id;
}

function fact(agentId: string, id: string, text: string): Memory {
  return {
    id,
    type: "fact",
    agentId,
    roomId: null,
    userId: "sam",
    content: { text },
    metadata: {},
    createdAt: Date.now(),
  };
}

function stack() {
  const db = drizzle(env.DB);
  const fake = fakeVectorize({ dimensions: DIMENSIONS });
  const index = createVectorizeIndex(fake.binding);
  const embedder = createHashEmbedder({ dimensions: DIMENSIONS });
  const pipeline = createEmbeddingPipeline({
    db,
    embedder,
    index,
    now: () => Date.now(),
    deleteLegacyVectors: (ids) => index.deleteLegacy(ids),
  });
  const search = createHybridSearch({ db, index, embedder });
  return { db, fake, pipeline, search };
}

describe("memory over Vectorize: ids per agent", () => {
  it("embeds the same memory id of two agents as two vectors, finds each agent's own, and deletes only the deleted one's", async () => {
    const { db, fake, pipeline, search } = stack();
    const [alpha, beta] = [await agent(), await agent()];
    const memories = [
      fact(alpha, "note-1", "Sam keeps goats on the hill"),
      fact(beta, "note-1", "Sam keeps bees in the orchard"),
    ];
    await insertMemories(db, memories);
    expect(await pipeline.embed(memories)).toBe(2);
    expect([...fake.vectors.keys()].sort()).toEqual(
      [await vectorizeId(alpha, "note-1"), await vectorizeId(beta, "note-1")].sort(),
    );

    const goats = await search.search({ agentId: alpha, text: "goats", limit: 5 });
    expect(
      goats.map((hit) => [
        hit.memory.agentId,
        hit.memory.content.text,
        hit.matchedBy.includes("vector"),
      ]),
    ).toEqual([[alpha, "Sam keeps goats on the hill", true]]);
    const bees = await search.search({ agentId: alpha, text: "bees orchard", limit: 5 });
    expect(
      bees.every(
        (hit) => hit.memory.agentId === alpha && !hit.memory.content.text.includes("bees"),
      ),
    ).toBe(true);

    await deleteMemories(db, { agentId: alpha, ids: ["note-1"] });
    expect(await pipeline.sweepDeletions()).toBe(1);
    expect([...fake.vectors.keys()]).toEqual([await vectorizeId(beta, "note-1")]);
    expect(
      (await memoriesByIds(db, beta, ["note-1"])).map((m) => [m.content.text, m.embedded]),
    ).toEqual([["Sam keeps bees in the orchard", true]]);
    expect(
      (await search.search({ agentId: beta, text: "bees", limit: 5 })).map((hit) => hit.matchedBy),
    ).toEqual([["text", "vector"]]);
  });

  it("deletes the vectors stored under pre-0013 ids: one agent's on init, everyone's on the sweep, and again harmlessly", async () => {
    const { fake, pipeline } = stack();
    const [alpha, beta] = [await agent(), await agent()];
    for (const [vectorId, agentId] of [
      [`${alpha}-old`, alpha],
      [`${beta}-old`, beta],
    ] as const) {
      fake.vectors.set(vectorId, {
        values: Array.from({ length: DIMENSIONS }, () => 1),
        namespace: agentId,
        metadata: { type: "fact" },
      });
      await env.DB.prepare("INSERT INTO legacy_vector_ids (vector_id, agent_id) VALUES (?, ?)")
        .bind(vectorId, agentId)
        .run();
    }
    const legacyRows = async () =>
      (
        await env.DB.prepare(
          "SELECT vector_id FROM legacy_vector_ids WHERE agent_id IN (?, ?) ORDER BY vector_id",
        )
          .bind(alpha, beta)
          .all<{ vector_id: string }>()
      ).results.map((r) => r.vector_id);

    // `npm run memory -- init --agent alpha` calls POST /memories/embed, which runs this.
    await pipeline.embedPending({ agentId: alpha });
    expect(fake.vectors.has(`${alpha}-old`)).toBe(false);
    expect(fake.vectors.has(`${beta}-old`)).toBe(true);
    expect(await legacyRows()).toEqual([`${beta}-old`]);
    await pipeline.embedPending({ agentId: alpha });

    await pipeline.sweepDeletions();
    expect(fake.vectors.has(`${beta}-old`)).toBe(false);
    expect(await legacyRows()).toEqual([]);
  });
});
