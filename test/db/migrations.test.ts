// Migration 0013 (memory ids per agent) against data written under the schema before it: an empty
// database gets migrations 0000-0012, rows are written the way that version wrote them (memories,
// the local vector index, the Vectorize deletion outbox and, through its triggers, the FTS5
// index), then 0013 is applied as `wrangler d1 migrations apply` would, in one batch. Nothing may
// be lost, seq values and FTS rowids must not move, and the memories must stay searchable.
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, describe, expect, it } from "vitest";
import { createHybridSearch } from "../../src/db/memory/hybrid-search.ts";
import {
  createLocalVectorIndex,
  resetLocalVectorCache,
} from "../../src/db/memory/local-vector-index.ts";
import { rankText } from "../../src/db/memory/text-search.ts";
import { createHashEmbedder } from "../../src/runtime/retrieval/hash-embedder.ts";

const db = env.TEST_MIGRATION_DB!;
const all = env.TEST_MIGRATIONS!;
const upTo0013 = all.findIndex((m) => m.name.startsWith("0013_"));
const embedder = createHashEmbedder({ dimensions: 384 });

interface Snapshot {
  memories: Record<string, unknown>[];
  vectors: Record<string, unknown>[];
  fts: Record<string, unknown>[];
}

async function rows(sql: string, ...params: unknown[]): Promise<Record<string, unknown>[]> {
  return (
    await db
      .prepare(sql)
      .bind(...params)
      .all<Record<string, unknown>>()
  ).results;
}

async function snapshot(): Promise<Snapshot> {
  return {
    memories: await rows(
      "SELECT seq, id, agent_id, type, room_id, user_id, parent_id, content, metadata, created_at, embedded_at FROM memories ORDER BY seq",
    ),
    vectors: await rows(
      "SELECT seq, memory_id, agent_id, type, room_id, user_id, dimensions, hex(vector) AS vector, hex(code) AS code, hex(bits) AS bits FROM memory_vectors ORDER BY seq",
    ),
    fts: await rows("SELECT rowid, text, scope FROM memories_fts ORDER BY rowid"),
  };
}

let before: Snapshot;
// Agent ids of this file only: the local index's per-isolate cache is keyed by agent id.
const local = "mig-local-agent";
const remote = "mig-vectorize-agent";

beforeAll(async () => {
  expect(upTo0013).toBeGreaterThan(0);
  await applyD1Migrations(db, all.slice(0, upTo0013));
  expect(
    await rows("SELECT name FROM sqlite_master WHERE name = 'memories_id_unique'"),
  ).toHaveLength(1);

  for (const id of [local, remote]) {
    await db
      .prepare(
        "INSERT INTO agents (id, name, format, character, created_at, updated_at) VALUES (?, ?, 'v1', '{}', 1, 1)",
      )
      .bind(id, id)
      .run();
  }
  const memory = db.prepare(
    "INSERT INTO memories (id, type, agent_id, room_id, user_id, parent_id, content, metadata, created_at, embedded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  );
  const content = (text: string, userName?: string) =>
    JSON.stringify({ text, ...(userName ? { userName } : {}) });
  await db.batch([
    // An agent on the local index: its embedded memories have rows in memory_vectors.
    memory.bind(
      "m-1",
      "message",
      local,
      "deck",
      "ann",
      null,
      content("The ferry leaves at noon", "Ann"),
      "{}",
      1_000,
      2_000,
    ),
    memory.bind(
      "m-2",
      "fact",
      local,
      null,
      "ann",
      null,
      content("Ann owns a green canoe"),
      '{"shared":true}',
      1_001,
      2_000,
    ),
    memory.bind(
      "m-3",
      "lore",
      local,
      null,
      null,
      null,
      content("The harbour has two lighthouses"),
      "{}",
      1_002,
      null,
    ),
    // An agent on Vectorize: embedded, but no row in the local index.
    memory.bind(
      "v-1",
      "fact",
      remote,
      null,
      "bo",
      null,
      content("Bo repairs fishing nets"),
      "{}",
      1_003,
      2_000,
    ),
    memory.bind(
      "v-doc",
      "document",
      remote,
      null,
      null,
      null,
      content("Tide tables for the bay"),
      "{}",
      1_004,
      null,
    ),
    memory.bind(
      "v-gone",
      "fact",
      remote,
      null,
      "bo",
      null,
      content("Bo lost his hat"),
      "{}",
      1_005,
      2_000,
    ),
  ]);
  // A deleted embedded memory leaves a note in the outbox (0009's trigger).
  await db.prepare("DELETE FROM memories WHERE id = 'v-gone'").run();
  const index = createLocalVectorIndex(drizzle(db));
  await index.upsert(
    await Promise.all(
      [
        ["m-1", "The ferry leaves at noon", "message", "deck", "ann"],
        ["m-2", "Ann owns a green canoe", "fact", null, "ann"],
      ].map(async ([id, text, type, roomId, userId]) => ({
        id: id!,
        values: (await embedder.embed([text!]))[0]!,
        metadata: {
          agentId: local,
          type: type as "message" | "fact",
          roomId: roomId ?? null,
          userId: userId ?? null,
        },
      })),
    ),
  );
  before = await snapshot();
  expect(before.memories).toHaveLength(5);
  expect(before.vectors).toHaveLength(2);
  expect(before.fts).toHaveLength(5);
  expect(await rows("SELECT memory_id, agent_id FROM vector_deletions")).toEqual([
    { memory_id: "v-gone", agent_id: remote },
  ]);

  await applyD1Migrations(db, all);
});

describe("migration 0013: memory ids per agent", () => {
  it("keeps every memory, vector and text-index row as it was, seq values and rowids included", async () => {
    const after = await snapshot();
    expect(after.vectors).toEqual(before.vectors);
    expect(after.fts).toEqual(before.fts);
    // Only the Vectorize agent's embedded memory changes: it waits for a vector under the new ids.
    expect(after.memories).toEqual(
      before.memories.map((m) => (m.id === "v-1" ? { ...m, embedded_at: null } : m)),
    );
    expect(
      await rows(
        "SELECT name FROM sqlite_master WHERE name IN ('memories_id_unique', 'memories_agent_id_unique', 'memory_vectors_agent_memory_unique') ORDER BY name",
      ),
    ).toEqual([
      { name: "memories_agent_id_unique" },
      { name: "memory_vectors_agent_memory_unique" },
    ]);
    const triggers = await rows(
      "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
    );
    // The full-text index's, and from 0023 a move's fence on each table of an agent's data.
    const fenced = [
      "memories",
      "memory_vectors",
      "participants",
      "relationships",
      "rooms",
      "turn_inspections",
    ].flatMap((table) => [`${table}_fence_insert`, `${table}_fence_update`]);
    expect(triggers.map((t) => t.name)).toEqual(
      [
        "agents_number",
        "memories_fts_delete",
        "memories_fts_insert",
        "memories_fts_update",
        ...fenced,
      ].sort(),
    );
  });

  it("lists every vector that may exist under an old Vectorize id, and leaves the outbox to the new scheme", async () => {
    expect(
      await rows("SELECT vector_id, agent_id FROM legacy_vector_ids ORDER BY vector_id"),
    ).toEqual([
      { vector_id: "v-1", agent_id: remote },
      { vector_id: "v-gone", agent_id: remote },
    ]);
    expect(await rows("SELECT * FROM vector_deletions")).toEqual([]);
  });

  it("finds the migrated memories by text and by vector, each agent only its own", async () => {
    const d = drizzle(db);
    expect(
      (await rankText(d, { agentId: local, text: "canoe", limit: 5 })).map((hit) => hit.id),
    ).toEqual(["m-2"]);
    expect(
      (await rankText(d, { agentId: local, text: "ann", userId: "ann", limit: 5 }))
        .map((hit) => hit.id)
        .sort(),
    ).toEqual(["m-1", "m-2"]);
    expect(await rankText(d, { agentId: local, text: "nets", limit: 5 })).toEqual([]);
    resetLocalVectorCache();
    const search = createHybridSearch({ db: d, index: createLocalVectorIndex(d), embedder });
    const hits = await search.search({
      agentId: local,
      text: "when does the ferry leave",
      limit: 3,
    });
    expect(hits[0]).toMatchObject({
      memory: { id: "m-1", agentId: local },
      matchedBy: ["text", "vector"],
    });
  });

  it("then takes the same id in two agents, cascades a deleted memory to its vector and notes it per agent", async () => {
    await db
      .prepare(
        "INSERT INTO memories (id, type, agent_id, content, metadata, created_at) VALUES ('m-2', 'fact', ?, ?, '{}', 3_000)",
      )
      .bind(remote, JSON.stringify({ text: "Bo also owns a canoe" }))
      .run();
    expect(
      (await rows("SELECT agent_id FROM memories WHERE id = 'm-2'")).map((r) => r.agent_id).sort(),
    ).toEqual([local, remote].sort());
    await db.prepare("DELETE FROM memories WHERE agent_id = ? AND id = 'm-2'").bind(local).run();
    expect(await rows("SELECT memory_id FROM memory_vectors WHERE agent_id = ?", local)).toEqual([
      { memory_id: "m-1" },
    ]);
    expect(await rows("SELECT agent_id, memory_id FROM vector_deletions")).toEqual([
      { agent_id: local, memory_id: "m-2" },
    ]);
    expect(
      (await rankText(drizzle(db), { agentId: remote, text: "canoe", limit: 5 })).map(
        (hit) => hit.id,
      ),
    ).toEqual(["m-2"]);
    expect(await rankText(drizzle(db), { agentId: local, text: "canoe", limit: 5 })).toEqual([]);
  });
});
