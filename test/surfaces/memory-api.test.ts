// The memory API end to end through the worker, with the offline default stack (local hashed
// embedder, local vector index in D1, FTS5): storing, listing, hybrid search, thresholds, the
// full-text fallback for memories without a vector, dimension mismatches, knowledge chunking and
// replacement, deletions that leave no orphan vector, agent isolation, and retention.
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { createD1MemoryStore } from "../../src/db/memory/d1-memory-store.ts";
import { runMemoryMaintenance } from "../../src/db/memory/maintenance.ts";
import { forgetRoomHistory } from "../../src/objects/conversation/room-client.ts";
import { resetLocalVectorCache } from "../../src/db/memory/local-vector-index.ts";
import {
  adjacentFromRows,
  adjacentMessages,
  adjacentMessagesQueries,
  batchRawRows,
  memoriesByIds,
  memoriesByIdsQueries,
  memoryRowOf,
} from "../../src/db/memory/memory-repo.ts";
import { memories } from "../../src/db/schema.ts";
import { agentData } from "../../src/db/stores/index.ts";
import { rankText } from "../../src/db/memory/text-search.ts";
import { informativeness, RERANK_WEIGHTS } from "../../src/runtime/retrieval/rerank.ts";
import { ANSWER_SHARE, NEIGHBOUR_SHARE } from "../../src/runtime/retrieval/neighbours.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";

interface MemoryView {
  id: string;
  type: string;
  text: string;
  userId: string | null;
  roomId: string | null;
  embedded: boolean;
  metadata: Record<string, unknown>;
  createdAt: number;
}
interface Scored extends MemoryView {
  score: number;
  similarity: number | null;
  matchedBy: string[];
}

async function store(agentId: string, memories: Record<string, unknown>[]) {
  const response = await api("POST", "/memories", {
    body: { memories: memories.map((m) => ({ agentId, ...m })) },
  });
  return {
    response,
    body: await json<{ memories: { id: string }[]; embedded: number; pending: number }>(response),
  };
}

async function similar(body: Record<string, unknown>) {
  const response = await api("POST", "/memories/similar", { body });
  expect(response.status).toBe(200);
  return (await json<{ memories: Scored[] }>(response)).memories;
}

async function count(sql: string, ...params: unknown[]): Promise<number> {
  const row = await env.DB.prepare(sql)
    .bind(...params)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

describe("memory API: storing and listing", () => {
  it("stores typed memories, embeds them inline, and lists them newest first with filters and a cursor", async () => {
    const agentId = await createTestAgent();
    const { response, body } = await store(agentId, [
      {
        type: "fact",
        userId: "alice",
        text: "Alice is training for the Berlin marathon",
        createdAt: 1_000,
      },
      { type: "fact", userId: "bob", text: "Bob keeps bees on his roof", createdAt: 2_000 },
      {
        type: "message",
        roomId: "general",
        userId: "alice",
        userName: "Alice",
        text: "Morning all",
        createdAt: 3_000,
      },
      { type: "lore", text: "Testa was built in a lighthouse", createdAt: 4_000 },
    ]);
    expect(response.status).toBe(201);
    expect(body).toMatchObject({ embedded: 4, pending: 0 });

    const all = await json<{ memories: MemoryView[]; nextCursor: string | null }>(
      await api("GET", `/memories?agentId=${agentId}&limit=2`),
    );
    expect(all.memories.map((m) => m.text)).toEqual([
      "Testa was built in a lighthouse",
      "Morning all",
    ]);
    expect(all.nextCursor).not.toBeNull();
    const next = await json<{ memories: MemoryView[]; nextCursor: string | null }>(
      await api("GET", `/memories?agentId=${agentId}&limit=2&cursor=${all.nextCursor}`),
    );
    expect(next.memories.map((m) => m.text)).toEqual([
      "Bob keeps bees on his roof",
      "Alice is training for the Berlin marathon",
    ]);
    expect(next.nextCursor).toBeNull();

    const alices = await json<{ memories: MemoryView[] }>(
      await api("GET", `/memories?agentId=${agentId}&userId=alice&type=fact`),
    );
    expect(alices.memories.map((m) => m.text)).toEqual([
      "Alice is training for the Berlin marathon",
    ]);
    expect(alices.memories[0]!.embedded).toBe(true);
  });

  it("refuses bad memories with the failing field named, and stores nothing", async () => {
    const agentId = await createTestAgent();
    const response = await api("POST", "/memories", {
      body: {
        memories: [
          { agentId, type: "fact", text: "ok fact", userId: "alice" },
          { agentId, type: "fact", text: "no user" },
        ],
      },
    });
    expect(response.status).toBe(400);
    const error = (await json<{ error: { code: string; message: string } }>(response)).error;
    expect(error.code).toBe("validation");
    expect(error.message).toContain("userId");
    expect(
      await count(
        "SELECT count(*) AS n FROM memories WHERE agent_id = ? AND type = 'fact'",
        agentId,
      ),
    ).toBe(0);

    const badCursor = await api("GET", `/memories?agentId=${agentId}&cursor=garbage`);
    expect(badCursor.status).toBe(400);
    const unknown = await api("POST", "/memories", {
      body: { memories: [{ agentId: "no-such-agent", type: "lore", text: "x" }] },
    });
    expect(unknown.status).toBe(404);
  });

  it("keeps the same id in two agents as two memories, each with its own vector, replayed and deleted only within its agent", async () => {
    const first = await createTestAgent();
    const second = await createTestAgent();
    expect(
      (
        await store(first, [
          { id: "shared-id-1", type: "lore", text: "The first keeper painted the lamp red" },
        ])
      ).response.status,
    ).toBe(201);
    expect(
      (
        await store(second, [
          { id: "shared-id-1", type: "lore", text: "The second keeper grew turnips" },
        ])
      ).response.status,
    ).toBe(201);
    // The same id again within an agent stores nothing new (a replay).
    expect(
      (await store(first, [{ id: "shared-id-1", type: "lore", text: "The first keeper again" }]))
        .response.status,
    ).toBe(201);
    const rows = await env.DB.prepare(
      "SELECT agent_id AS agentId, json_extract(content, '$.text') AS text FROM memories WHERE id = 'shared-id-1' ORDER BY agent_id",
    ).all<{ agentId: string; text: string }>();
    expect(rows.results.map((r) => [r.agentId, r.text]).sort()).toEqual(
      [
        [first, "The first keeper painted the lamp red"],
        [second, "The second keeper grew turnips"],
      ].sort(),
    );
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE memory_id = 'shared-id-1'"),
    ).toBe(2);
    expect(
      (await similar({ agentId: second, query: "turnips keeper" })).map((h) => [
        h.id,
        h.text,
        h.matchedBy.includes("vector"),
      ]),
    ).toEqual([["shared-id-1", "The second keeper grew turnips", true]]);

    expect(await json(await api("DELETE", `/memories?agentId=${first}&id=shared-id-1`))).toEqual({
      deleted: 1,
    });
    expect(
      await count(
        "SELECT count(*) AS n FROM memory_vectors WHERE memory_id = 'shared-id-1' AND agent_id = ?",
        second,
      ),
    ).toBe(1);
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE memory_id = 'shared-id-1'"),
    ).toBe(1);
    expect(
      (
        await json<{ memories: MemoryView[] }>(
          await api("GET", `/memories?agentId=${second}&id=shared-id-1`),
        )
      ).memories.map((m) => m.text),
    ).toEqual(["The second keeper grew turnips"]);
  });

  // Found by fuzzing (test/surfaces/fuzz.test.ts's requests, other seeds): 1,001 levels fit in 8 KiB, and
  // SQLite's JSON functions in the text index's trigger refused them, so the insert failed (500).
  it("refuses metadata nested too deeply with 400, storing nothing, and keeps 32 levels", async () => {
    const agentId = await createTestAgent();
    const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;
    const deep = await api("POST", "/memories", {
      body: `{"memories":[{"agentId":"${agentId}","type":"lore","text":"deep","metadata":${nested(1_001)}}]}`,
    });
    expect(deep.status).toBe(400);
    const error = (await json<{ error: { code: string; message: string } }>(deep)).error;
    expect(error).toMatchObject({
      code: "validation",
      message: expect.stringMatching(/memories\.0\.metadata: must not be nested/),
    });
    expect(
      await count(
        "SELECT count(*) AS n FROM memories WHERE agent_id = ? AND type = 'lore'",
        agentId,
      ),
    ).toBe(0);
    // Deeper still, with index-like keys, the size check's JSON.stringify overflowed the stack (500).
    const deeper = `${'{"0":'.repeat(5_000)}1${"}".repeat(5_000)}`;
    const overflow = await api("POST", "/memories", {
      body: `{"memories":[{"agentId":"${agentId}","type":"lore","text":"deeper","metadata":${deeper}}]}`,
    });
    expect(overflow.status).toBe(400);
    expect(
      await count(
        "SELECT count(*) AS n FROM memories WHERE agent_id = ? AND type = 'lore'",
        agentId,
      ),
    ).toBe(0);
    const fine = await api("POST", "/memories", {
      body: `{"memories":[{"agentId":"${agentId}","type":"lore","text":"fine","metadata":${nested(32)}}]}`,
    });
    expect(fine.status).toBe(201);
  });
});

describe("memory API: hybrid search", () => {
  it("finds a memory by stemmed words and by vector similarity, best first, with scores", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [
      { type: "fact", userId: "alice", text: "Alice runs marathons every spring" },
      { type: "fact", userId: "alice", text: "Alice's favourite food is ramen" },
      { type: "fact", userId: "bob", text: "Bob collects vintage synthesizers" },
    ]);
    const hits = await similar({ agentId, query: "who is running a marathon?" });
    expect(hits[0]!.text).toBe("Alice runs marathons every spring");
    expect(hits[0]!.matchedBy).toEqual(expect.arrayContaining(["text", "vector"]));
    expect(hits[0]!.similarity).toBeGreaterThan(0);
    expect(hits[0]!.score).toBeGreaterThan(hits[hits.length - 1]!.score - 1e-9);

    // A misspelling shares no FTS token, but character n-grams still bring it close.
    const fuzzy = await similar({ agentId, query: "synthesiser", type: "fact" });
    expect(fuzzy[0]!.text).toBe("Bob collects vintage synthesizers");
    expect(fuzzy[0]!.matchedBy).toEqual(["vector"]);
  });

  it("with embeddingBudgetMs, says whether the query's vector came in time, and answers as without it when it did", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [
      { type: "fact", userId: "alice", text: "Alice runs marathons every spring" },
      { type: "fact", userId: "bob", text: "Bob collects vintage synthesizers" },
    ]);
    const body = { agentId, query: "synthesiser", type: "fact" };
    const response = await api("POST", "/memories/similar", {
      body: { ...body, embeddingBudgetMs: 5_000 },
    });
    expect(response.status).toBe(200);
    const bounded = await json<{ memories: Scored[]; queryEmbedding: string }>(response);
    expect(bounded.queryEmbedding).toBe("embedded");
    expect(bounded.memories).toEqual(await similar(body));
    expect(bounded.memories[0]!.matchedBy).toEqual(["vector"]);
    for (const bad of [-1, 1.5, 10_001, "200"]) {
      const refused = await api("POST", "/memories/similar", {
        body: { ...body, embeddingBudgetMs: bad },
      });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("embeddingBudgetMs");
    }
  });

  it("still finds a memory that has no vector yet through full-text search", async () => {
    const agentId = await createTestAgent();
    const { body } = await store(agentId, [
      { type: "lore", text: "The lighthouse keeper sings sea shanties at dusk" },
    ]);
    const id = body.memories[0]!.id;
    // As if the embedding had not run yet: no vector, marked pending.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM memory_vectors WHERE memory_id = ?").bind(id),
      env.DB.prepare("UPDATE memories SET embedded_at = NULL WHERE id = ?").bind(id),
    ]);
    resetLocalVectorCache();
    const hits = await similar({ agentId, query: "shanties", threshold: 0.95 });
    expect(hits.map((h) => h.id)).toEqual([id]);
    expect(hits[0]).toMatchObject({ matchedBy: ["text"], similarity: null, embedded: false });

    const stats = await json<{ pendingEmbedding: number }>(
      await api("GET", `/memories/stats?agentId=${agentId}`),
    );
    expect(stats.pendingEmbedding).toBe(1);
    const backfill = await json<{ embedded: number; pending: boolean }>(
      await api("POST", "/memories/embed", { body: { agentId } }),
    );
    expect(backfill).toEqual({ embedded: 1, pending: false });
  });

  it("does not count a vector whose memory was rewritten (not embedded again yet) or deleted", async () => {
    const agentId = await createTestAgent();
    const { body } = await store(agentId, [
      { type: "fact", userId: "bob", text: "Bob collects vintage synthesizers" },
      { type: "fact", userId: "bob", text: "Bob restores old synthesizers for friends" },
    ]);
    const [collects, restores] = body.memories.map((m) => m.id);
    // A misspelling: only the vector leg finds these.
    const before = await similar({ agentId, query: "synthesiser", type: "fact" });
    expect(before.map((h) => h.id).sort()).toEqual([collects, restores].sort());
    // Rewritten: its old vector is still in the index (and this isolate's cache) until re-embedded.
    await env.DB.prepare("UPDATE memories SET embedded_at = NULL WHERE id = ?")
      .bind(collects)
      .run();
    // Deleted behind the index's back: the cache still holds its vector.
    await env.DB.prepare("DELETE FROM memories WHERE id = ?").bind(restores).run();
    expect(await similar({ agentId, query: "synthesiser", type: "fact" })).toEqual([]);
  });

  it("reads further down the ranking when the best hits repeat one text", async () => {
    const agentId = await createTestAgent();
    const repeated = Array.from({ length: 14 }, () => ({
      type: "lore",
      text: "The kayak crossed the bay",
    }));
    const others = Array.from({ length: 6 }, (_, i) => ({
      type: "lore",
      text: `Story ${i}: a long tale of a kayak, some rain, a lost map and a warm fire after dark`,
    }));
    await store(agentId, [...repeated, ...others]);
    const hits = await similar({ agentId, query: "kayak bay", limit: 5 });
    expect(hits.map((h) => h.text)).toEqual([
      "The kayak crossed the bay",
      ...hits.slice(1).map((h) => h.text),
    ]);
    expect(new Set(hits.map((h) => h.text)).size).toBe(5);
    expect(hits.slice(1).every((h) => h.text.startsWith("Story "))).toBe(true);
  });

  it("applies a similarity threshold to embedded memories", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [
      { type: "lore", text: "Testa repairs old radios" },
      { type: "lore", text: "Testa dislikes radios that hum and old repairs of tables" },
    ]);
    const loose = await similar({ agentId, query: "Testa repairs old radios", threshold: 0 });
    expect(loose).toHaveLength(2);
    const strict = await similar({ agentId, query: "Testa repairs old radios", threshold: 0.95 });
    expect(strict.map((h) => h.text)).toEqual(["Testa repairs old radios"]);
    expect(strict[0]!.similarity).toBeGreaterThanOrEqual(0.95);
  });

  it("never returns another agent's memories", async () => {
    const mine = await createTestAgent();
    const theirs = await createTestAgent();
    await store(theirs, [{ type: "lore", text: "The secret recipe uses saffron" }]);
    await store(mine, [{ type: "lore", text: "Nothing about spices here" }]);
    const hits = await similar({ agentId: mine, query: "secret recipe saffron", limit: 20 });
    expect(hits.every((h) => !h.text.includes("saffron"))).toBe(true);
    const listed = await json<{ memories: MemoryView[] }>(
      await api("GET", `/memories?agentId=${mine}`),
    );
    expect(listed.memories.map((m) => m.text)).toEqual(["Nothing about spices here"]);
  });
});

describe("memory API: neighbour expansion", () => {
  const says = (text: string) =>
    informativeness({ type: "message", content: { text } }, RERANK_WEIGHTS.length);
  // A conversation where the question's words are in one turn and the answer in the next.
  const conversation = (roomId: string, at: number) => [
    {
      type: "message",
      roomId,
      userId: "cara",
      userName: "Cara",
      text: "Guess what, we finally went to the animal shelter on Saturday",
      createdAt: at,
    },
    {
      type: "message",
      roomId,
      userId: "dev",
      userName: "Dev",
      text: "No way! And?",
      createdAt: at + 1_000,
    },
    {
      type: "message",
      roomId,
      userId: "cara",
      userName: "Cara",
      text: "We came home with a tiny grey kitten called Pebble",
      createdAt: at + 2_000,
    },
    {
      type: "message",
      roomId,
      userId: "dev",
      userName: "Dev",
      text: "Pebble is a perfect name",
      createdAt: at + 3_000,
    },
  ];

  it("adds the messages right before and after a hit in its room, marked as neighbours, ranked below it", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [
      ...conversation("porch", 10_000),
      // Same times, another room: never a neighbour of the porch messages.
      {
        type: "message",
        roomId: "kitchen",
        userId: "dev",
        userName: "Dev",
        text: "The kettle is broken again",
        createdAt: 11_000,
      },
    ]);
    const hits = await similar({
      agentId,
      query: "Did they go to the shelter?",
      type: "message",
      limit: 5,
    });
    expect(hits[0]).toMatchObject({
      text: "Guess what, we finally went to the animal shelter on Saturday",
      matchedBy: expect.arrayContaining(["text"]),
    });
    // The reply right after the hit comes next, with NEIGHBOUR_SHARE of its score (the hit asks
    // nothing; the reply's own score, as a weak vector match, is far lower), each then weighed by
    // how much it says (a short reply a little less).
    expect(hits[1]).toMatchObject({
      text: "No way! And?",
      matchedBy: expect.arrayContaining(["neighbour"]),
    });
    expect(hits[1]!.score).toBeCloseTo(
      (hits[0]!.score * NEIGHBOUR_SHARE * says("No way! And?")) / says(hits[0]!.text),
      3,
    );
    // Same time, another room: never anyone's neighbour.
    const kettle = hits.find((h) => h.text === "The kettle is broken again");
    expect(kettle?.matchedBy ?? []).not.toContain("neighbour");
    // Two turns from the hit: at best a neighbour of a neighbour, ranked below it.
    const kitten = hits.find(
      (h) => h.text === "We came home with a tiny grey kitten called Pebble",
    );
    expect(kitten?.score ?? 0).toBeLessThan(hits[1]!.score);
  });

  it("gives the reply to a hit that asks something more of its score than the line before it", async () => {
    const agentId = await createTestAgent();
    const line = (userId: string, text: string, createdAt: number) => ({
      type: "message",
      roomId: "porch",
      userId,
      userName: userId,
      text,
      createdAt,
    });
    await store(agentId, [
      line("cara", "Morning everyone, coffee is ready", 10_000),
      line("dev", "Which shelter did you adopt the kitten from?", 11_000),
      line("cara", "The one on Harbour Road, they were lovely", 12_000),
    ]);
    const hits = await similar({
      agentId,
      query: "which shelter adopted kitten",
      type: "message",
      limit: 5,
    });
    expect(hits[0]!.text).toBe("Which shelter did you adopt the kitten from?");
    const expected = (text: string, share: number) =>
      (hits[0]!.score * share * says(text)) / says(hits[0]!.text);
    const reply = hits.find((h) => h.text === "The one on Harbour Road, they were lovely");
    expect(reply?.matchedBy).toContain("neighbour");
    expect(reply!.score).toBeCloseTo(expected(reply!.text, ANSWER_SHARE), 3);
    const before = hits.find((h) => h.text === "Morning everyone, coffee is ready");
    expect(before?.matchedBy).toContain("neighbour");
    expect(before!.score).toBeCloseTo(expected(before!.text, NEIGHBOUR_SHARE), 3);
    expect(hits.map((h) => h.text)).toEqual([
      "Which shelter did you adopt the kitten from?",
      "The one on Harbour Road, they were lovely",
      "Morning everyone, coffee is ready",
    ]);
  });

  it("keeps to the query's filters and does not expand other types", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [
      ...conversation("porch", 10_000),
      { type: "lore", text: "The shelter down the road takes in cats" },
    ]);
    const cara = await similar({ agentId, query: "animal shelter", userId: "cara", limit: 10 });
    expect(cara.every((h) => h.userId === "cara")).toBe(true);
    expect(cara.some((h) => h.matchedBy.includes("neighbour"))).toBe(false);
    const lore = await similar({ agentId, query: "shelter", type: "lore", limit: 10 });
    expect(lore.map((h) => h.text)).toEqual(["The shelter down the road takes in cats"]);
  });

  it("looks rows and neighbours up by id within the agent only", async () => {
    const mine = await createTestAgent();
    const theirs = await createTestAgent();
    const ids = (await store(theirs, conversation("porch", 10_000))).body.memories.map((m) => m.id);
    const d = drizzle(env.DB);
    expect(await memoriesByIds(d, mine, ids)).toEqual([]);
    expect([...(await adjacentMessages(d, mine, ids.slice(1, 2))).values()].flat()).toEqual([]);
    const around = await adjacentMessages(d, theirs, ids.slice(1, 2));
    // The same statements sent in one D1 batch (as hybrid search sends them) read the same rows.
    const [rows, ...more] = [
      ...memoriesByIdsQueries(d, theirs, ids),
      ...adjacentMessagesQueries(d, theirs, ids.slice(1, 2)),
    ];
    const [byId, adjacent] = (await d.batch([rows!, ...more])) as [
      Array<typeof memories.$inferSelect>,
      Parameters<typeof adjacentFromRows>[1],
    ];
    expect(byId.map((row) => row.id).sort()).toEqual([...ids].sort());
    expect(adjacentFromRows(theirs, adjacent)).toEqual(around);
    // Read raw (as hybrid search reads them) and mapped by hand: the same rows, field for field.
    const [rawById, rawAdjacent] = await batchRawRows(d, [
      ...memoriesByIdsQueries(d, theirs, ids),
      ...adjacentMessagesQueries(d, theirs, ids.slice(1, 2)),
    ]);
    expect(rawById!.map(memoryRowOf)).toEqual(byId);
    expect(rawAdjacent!.map((raw) => ({ seedId: raw.seed_id, memory: memoryRowOf(raw) }))).toEqual(
      adjacent,
    );
    expect(
      around
        .get(ids[1]!)!
        .map((m) => m.id)
        .sort(),
    ).toEqual([ids[0], ids[2]].sort());
  });

  it("reports each leg's time in Server-Timing", async () => {
    const agentId = await createTestAgent();
    await store(agentId, conversation("porch", 10_000));
    const response = await api("POST", "/memories/similar", {
      body: { agentId, query: "shelter", limit: 5 },
    });
    expect(response.status).toBe(200);
    const timing = response.headers.get("server-timing") ?? "";
    for (const leg of ["embed", "text", "vector", "load", "search"])
      expect(timing).toMatch(new RegExp(`(^|, )${leg};dur=\\d+(\\.\\d)?(,|$)`));
  });
});

describe("full-text leg: filters inside the index", () => {
  const db = () => drizzle(env.DB);
  it("ranks within the agent, room, user and types, even when other agents hold many better matches", async () => {
    const mine = await createTestAgent();
    const theirs = await createTestAgent();
    // Forty strong matches elsewhere: a filter applied after a LIMIT would leave nothing for us.
    await store(
      theirs,
      Array.from({ length: 40 }, (_, i) => ({
        type: "lore",
        text: `kayak kayak kayak paddle river ${i}`,
      })),
    );
    const stored = await store(mine, [
      {
        type: "message",
        roomId: "salle-ete:1",
        userId: "zoe_b@guild",
        userName: "Zoë",
        text: "I bought a kayak",
      },
      {
        type: "message",
        roomId: "other-room",
        userId: "zoe_b@guild",
        userName: "Zoë",
        text: "The kayak leaks",
      },
      { type: "fact", userId: "zoe_b@guild", text: "Zoë paddles a kayak on weekends" },
      {
        type: "fact",
        userId: "max",
        text: "Max rents kayaks to tourists",
        metadata: { shared: true },
      },
      { type: "fact", userId: "max", text: "Max hides his kayak keys under a stone" },
    ]);
    expect(stored.response.status, JSON.stringify(stored.body)).toBe(201);
    const texts = async (query: Omit<Parameters<typeof rankText>[1], "text" | "limit">) => {
      const ids = (await rankText(db(), { text: "kayak", limit: 5, ...query })).map(
        (hit) => hit.id,
      );
      return (await memoriesByIds(db(), query.agentId, ids))
        .map((memory) => memory.content.text)
        .sort();
    };

    expect(await texts({ agentId: mine })).toHaveLength(5);
    expect(await texts({ agentId: mine, roomId: "salle-ete:1" })).toEqual(["I bought a kayak"]);
    expect(await texts({ agentId: mine, userId: "zoe_b@guild", types: ["fact"] })).toEqual([
      "Zoë paddles a kayak on weekends",
    ]);
    expect(
      await texts({ agentId: mine, userId: "zoe_b@guild", types: ["fact"], includeShared: true }),
    ).toEqual(["Max rents kayaks to tourists", "Zoë paddles a kayak on weekends"]);
    expect(await texts({ agentId: mine, types: ["message", "lore"] })).toEqual([
      "I bought a kayak",
      "The kayak leaks",
    ]);
    expect(await texts({ agentId: mine, userId: "zoe_b" })).toEqual([]);
  });

  it("follows a memory rewritten in place (a replaced profile)", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [
      {
        id: `${agentId}-profile-ann`,
        type: "description",
        userId: "ann",
        text: "Ann plays the cello",
      },
    ]);
    const d = db();
    await d
      .update(memories)
      .set({ content: JSON.stringify({ text: "Ann plays the trumpet" }) })
      .where(eq(memories.id, `${agentId}-profile-ann`));
    expect(await rankText(d, { agentId, userId: "ann", text: "cello", limit: 5 })).toEqual([]);
    expect(
      (await rankText(d, { agentId, userId: "ann", text: "trumpet", limit: 5 })).map(
        (hit) => hit.id,
      ),
    ).toEqual([`${agentId}-profile-ann`]);
  });

  it("leaves excluded ids out before keeping the best candidates, as hits and as neighbours", async () => {
    const agentId = await createTestAgent();
    // Forty strong matches the prompt already shows, then two weaker older ones with a neighbour.
    const shown = Array.from({ length: 40 }, (_, i) => ({
      id: `${agentId}-shown-${i}`,
      type: "message",
      roomId: "den",
      userId: "ivy",
      text: `kayak kayak kayak trip number ${i}`,
      createdAt: 100_000 + i * 1_000,
    }));
    await store(agentId, [
      {
        id: `${agentId}-old-1`,
        type: "message",
        roomId: "den",
        userId: "ivy",
        text: "We rented a kayak in Norway",
        createdAt: 10_000,
      },
      {
        id: `${agentId}-old-2`,
        type: "message",
        roomId: "den",
        userId: "ivy",
        text: "It was cold",
        createdAt: 11_000,
      },
      ...shown,
    ]);
    const excludeIds = shown.map((m) => m.id);
    // The text leg alone: every place of a small limit goes to what is not excluded.
    expect(
      (await rankText(db(), { agentId, text: "kayak", limit: 3, excludeIds })).map((h) => h.id),
    ).toEqual([`${agentId}-old-1`]);
    expect(await rankText(db(), { agentId, text: "kayak", limit: 3 })).toHaveLength(3);
    // The whole hybrid search: the old hit and its neighbour, none of the shown ones, even as the
    // neighbour of a hit (the first shown message follows "It was cold").
    const { retriever } = await agentData(env, agentId);
    const hits = await retriever.search({
      agentId,
      text: "kayak trip",
      types: ["message"],
      roomId: "den",
      limit: 3,
      excludeIds,
    });
    const ids = hits.map((hit) => hit.memory.id);
    expect(ids).toContain(`${agentId}-old-1`);
    expect(ids.filter((id) => excludeIds.includes(id))).toEqual([]);
    const unfiltered = await retriever.search({
      agentId,
      text: "kayak trip",
      types: ["message"],
      roomId: "den",
      limit: 3,
    });
    expect(unfiltered.every((hit) => excludeIds.includes(hit.memory.id))).toBe(true);
  });
});

describe("memory API: deletion and forgetting", () => {
  it("forgets everything about one user, vectors and text index included, and nothing else", async () => {
    const agentId = await createTestAgent();
    const { body } = await store(agentId, [
      { type: "fact", userId: "alice", text: "Alice lives in Lisbon" },
      { type: "description", userId: "alice", text: "Alice is a cheerful cellist" },
      { type: "message", roomId: "r1", userId: "alice", text: "I play the cello" },
      { type: "fact", userId: "bob", text: "Bob lives in Oslo" },
    ]);
    const aliceIds = body.memories.slice(0, 3).map((m) => m.id);
    const response = await api("DELETE", `/memories?agentId=${agentId}&userId=alice`);
    expect(await json(response)).toEqual({ deleted: 3 });
    const placeholders = aliceIds.map(() => "?").join(",");
    expect(
      await count(
        `SELECT count(*) AS n FROM memory_vectors WHERE memory_id IN (${placeholders})`,
        ...aliceIds,
      ),
    ).toBe(0);
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE agent_id = ?", agentId),
    ).toBe(1);
    expect(
      await count(
        "SELECT count(*) AS n FROM memories_fts WHERE memories_fts MATCH 'lisbon OR cellist OR cello'",
      ),
    ).toBe(0);
    const hits = await similar({ agentId, query: "Lisbon cello" });
    expect(hits.every((h) => h.userId !== "alice")).toBe(true);
  });

  it("forgets one wrong memory by id, with its vector, and never another agent's", async () => {
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    const { body } = await store(agentId, [
      { type: "fact", userId: "alice", text: "Alice is vegan" },
      { type: "fact", userId: "alice", text: "Alice bakes rye bread" },
    ]);
    const [wrong, right] = body.memories.map((m) => m.id);
    const theirs = (
      await store(other, [
        { type: "fact", userId: "alice", text: "Alice is vegan, says the other agent" },
      ])
    ).body.memories[0]!.id;

    const listed = await json<{ memories: MemoryView[] }>(
      await api("GET", `/memories?agentId=${agentId}&id=${wrong}`),
    );
    expect(listed.memories.map((m) => m.text)).toEqual(["Alice is vegan"]);
    // Another agent's id under this agent's name matches nothing.
    expect(await json(await api("DELETE", `/memories?agentId=${agentId}&id=${theirs}`))).toEqual({
      deleted: 0,
    });
    expect(await json(await api("DELETE", `/memories?agentId=${agentId}&id=${wrong}`))).toEqual({
      deleted: 1,
    });
    expect(await count("SELECT count(*) AS n FROM memory_vectors WHERE memory_id = ?", wrong)).toBe(
      0,
    );
    expect((await similar({ agentId, query: "vegan" })).map((h) => h.id)).toEqual([right]);
    expect(
      await count("SELECT count(*) AS n FROM memories WHERE id IN (?, ?)", right!, theirs),
    ).toBe(2);

    const tooMany = await api(
      "DELETE",
      `/memories?agentId=${agentId}&id=${Array.from({ length: 51 }, (_, i) => `m${i}`).join(",")}`,
    );
    expect(tooMany.status).toBe(400);
    expect(await count("SELECT count(*) AS n FROM memories WHERE agent_id = ?", agentId)).toBe(1);
  });

  it("deleting a knowledge document deletes its fragments, by id or by type", async () => {
    const agentId = await createTestAgent();
    const ingest = async (title: string, text: string) => {
      const response = await api("POST", `/agents/${agentId}/knowledge`, { body: { title, text } });
      expect(response.status).toBe(201);
    };
    await ingest("Tides", "The harbour's tides turn every six hours.");
    await ingest("Ferries", "The ferry leaves at nine.");
    const docs = await json<{ memories: MemoryView[] }>(
      await api("GET", `/memories?agentId=${agentId}&type=document`),
    );
    const tides = docs.memories.find((m) => m.text.includes("tides"))!;
    expect(await json(await api("DELETE", `/memories?agentId=${agentId}&id=${tides.id}`))).toEqual({
      deleted: 2,
    });
    expect((await similar({ agentId, query: "tides harbour" })).map((h) => h.text)).toEqual([
      "The ferry leaves at nine.",
    ]);
    expect(await json(await api("DELETE", `/memories?agentId=${agentId}&type=document`))).toEqual({
      deleted: 2,
    });
    expect(await count("SELECT count(*) AS n FROM memories WHERE agent_id = ?", agentId)).toBe(0);
  });

  it("refuses a filter it does not know instead of ignoring it (a typo must not widen a deletion)", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [{ type: "fact", userId: "bob", text: "Bob lives in Oslo" }]);
    const response = await api("DELETE", `/memories?agentId=${agentId}&usrId=alice`);
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain("usrId");
    expect(await count("SELECT count(*) AS n FROM memories WHERE agent_id = ?", agentId)).toBe(1);
    expect((await api("GET", `/memories?agentId=${agentId}&tpe=fact`)).status).toBe(400);
  });

  it("deleting an agent removes its memories' vectors", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [{ type: "lore", text: "Short-lived lore" }]);
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE agent_id = ?", agentId),
    ).toBe(1);
    expect((await api("DELETE", `/agents/${agentId}`)).status).toBe(204);
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE agent_id = ?", agentId),
    ).toBe(0);
    expect(await count("SELECT count(*) AS n FROM memories WHERE agent_id = ?", agentId)).toBe(0);
  });

  it("an agent deleted and created again under its id keeps its text-index range, without the old memories", async () => {
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    await store(agentId, [{ type: "lore", text: "The lighthouse keeper sang kvasirsongs" }]);
    await store(other, [{ type: "lore", text: "Another lighthouse, another keeper" }]);
    const number = await count("SELECT num AS n FROM agent_numbers WHERE agent_id = ?", agentId);
    expect((await api("DELETE", `/agents/${agentId}`)).status).toBe(204);
    expect(
      await count("SELECT count(*) AS n FROM memories_fts WHERE memories_fts MATCH 'kvasirsongs'"),
    ).toBe(0);
    expect(
      (await api("POST", "/agents", { body: { id: agentId, name: "Again", bio: ["Back."] } }))
        .status,
    ).toBe(201);
    expect(await count("SELECT num AS n FROM agent_numbers WHERE agent_id = ?", agentId)).toBe(
      number,
    );
    expect(await similar({ agentId, query: "lighthouse keeper kvasirsongs" })).toEqual([]);
    await store(agentId, [{ type: "lore", text: "A new lighthouse story" }]);
    const hits = await similar({ agentId, query: "lighthouse" });
    expect(hits.map((h) => h.text)).toEqual(["A new lighthouse story"]);
    expect((await similar({ agentId: other, query: "lighthouse" })).map((h) => h.text)).toEqual([
      "Another lighthouse, another keeper",
    ]);
  });
});

describe("memory API: embedding dimension checks", () => {
  it("refuses to write vectors of the wrong size, keeps the memories, and says so in /health", async () => {
    const agentId = await createTestAgent();
    await store(agentId, [{ type: "lore", text: "written while the index fits" }]);
    const real = await env.DB.prepare(
      "SELECT value FROM vector_index_meta WHERE key = 'dimensions'",
    ).first<{ value: string }>();
    expect(real?.value).toBeDefined();
    await env.DB.prepare(
      "UPDATE vector_index_meta SET value = '999' WHERE key = 'dimensions'",
    ).run();
    // Nothing rewrites the dimension, so an isolate that read it keeps it: as a fresh one, read again.
    resetLocalVectorCache();
    try {
      const { response, body } = await store(agentId, [
        { type: "lore", text: "written after the index changed" },
      ]);
      expect(response.status).toBe(201);
      expect(body).toMatchObject({ embedded: 0, pending: 1 });
      const health = await api("GET", "/health", { token: null });
      expect(health.status).toBe(503);
      expect(
        (await json<{ vectors: { status: string; dimensions: number } }>(health)).vectors,
      ).toMatchObject({ status: "dimension_mismatch", dimensions: 999 });
      const backfill = await api("POST", "/memories/embed", { body: { agentId } });
      expect(backfill.status).toBe(503);
      const error = (await json<{ error: { code: string; message: string } }>(backfill)).error;
      expect(error.code).toBe("dimension_mismatch");
      expect(error.message).toContain("999");
      // Still found by text while it waits.
      const hits = await similar({ agentId, query: "index changed" });
      expect(hits[0]).toMatchObject({ text: "written after the index changed", embedded: false });
    } finally {
      await env.DB.prepare("UPDATE vector_index_meta SET value = ? WHERE key = 'dimensions'")
        .bind(real!.value)
        .run();
      resetLocalVectorCache();
    }
  });
});

describe("knowledge", () => {
  const handbook = [
    "# Handbook",
    "Welcome to the lighthouse. This handbook explains how things work here.",
    "## Lamps",
    ...Array.from(
      { length: 30 },
      (_, i) =>
        `Lamp rule ${i + 1}: clean lens number ${i + 1} with the soft cloth before sunset, and log it.`,
    ),
    "## Boats",
    "The rowing boat is kept in the north shed. The motor boat needs a licence.",
  ].join("\n\n");

  it("chunks a markdown document by tokens with headings and overlap, and finds its fragments", async () => {
    const agentId = await createTestAgent();
    const response = await api("POST", `/agents/${agentId}/knowledge`, {
      body: { title: "Handbook", text: handbook, format: "markdown" },
    });
    expect(response.status).toBe(201);
    const result = await json<{
      documentId: string;
      fragments: number;
      embedded: number;
      replaced: boolean;
    }>(response);
    expect(result).toMatchObject({ documentId: "handbook", replaced: false });
    expect(result.fragments).toBeGreaterThanOrEqual(3);
    expect(result.embedded).toBe(result.fragments);

    const fragments = (
      await json<{ memories: MemoryView[] }>(
        await api("GET", `/memories?agentId=${agentId}&type=fragment&limit=100`),
      )
    ).memories;
    const headings = new Set(fragments.map((f) => f.metadata.heading));
    expect(headings).toEqual(new Set(["Handbook", "Handbook > Lamps", "Handbook > Boats"]));
    const lamps = fragments
      .filter((f) => f.metadata.heading === "Handbook > Lamps")
      .sort((a, b) => Number(a.metadata.position) - Number(b.metadata.position));
    expect(lamps.length).toBeGreaterThanOrEqual(2);
    // Overlap: the next chunk opens with the last paragraphs of the previous one.
    const previous = lamps[0]!.text.split("\n\n");
    const next = lamps[1]!.text.split("\n\n");
    const carried = next.filter((paragraph) => previous.includes(paragraph));
    expect(carried.length).toBeGreaterThan(0);
    expect(next.slice(0, carried.length)).toEqual(previous.slice(-carried.length));

    const hits = await similar({
      agentId,
      query: "where is the rowing boat kept?",
      type: "fragment",
    });
    expect(hits[0]!.text).toContain("north shed");
  });

  it("replaces a document ingested again, leaving no orphan fragment or vector", async () => {
    const agentId = await createTestAgent();
    await api("POST", `/agents/${agentId}/knowledge`, {
      body: { title: "Handbook", text: handbook, format: "markdown" },
    });
    const again = await json<{ fragments: number; replaced: boolean }>(
      await api("POST", `/agents/${agentId}/knowledge`, {
        body: {
          title: "Handbook",
          text: "# Handbook\n\nOnly one short rule now.",
          format: "markdown",
        },
      }),
    );
    expect(again).toMatchObject({ fragments: 1, replaced: true });
    expect(
      await count(
        "SELECT count(*) AS n FROM memories WHERE agent_id = ? AND type = 'fragment'",
        agentId,
      ),
    ).toBe(1);
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE agent_id = ?", agentId),
    ).toBe(1);
    expect((await api("DELETE", `/agents/${agentId}/knowledge/handbook`)).status).toBe(204);
    expect(
      await count(
        "SELECT count(*) AS n FROM memories WHERE agent_id = ? AND type IN ('fragment', 'document')",
        agentId,
      ),
    ).toBe(0);
    expect((await api("DELETE", `/agents/${agentId}/knowledge/handbook`)).status).toBe(404);
  });

  it("stores a character's knowledge entries with the agent, and replaces them on PUT", async () => {
    const agentId = await createTestAgent({
      knowledge: ["The lighthouse was built in 1888.", "The keeper's cat is called Fog."],
    });
    const hits = await similar({ agentId, query: "what is the cat called?", type: "fragment" });
    expect(hits[0]!.text).toContain("Fog");
    const put = await api("PUT", `/agents/${agentId}`, {
      body: {
        id: agentId,
        name: "Testa",
        bio: ["x"],
        knowledge: ["The keeper's dog is called Mist."],
      },
    });
    expect(put.status).toBe(200);
    const after = (
      await json<{ memories: MemoryView[] }>(
        await api("GET", `/memories?agentId=${agentId}&type=fragment`),
      )
    ).memories;
    expect(after.map((m) => m.text)).toEqual(["The keeper's dog is called Mist."]);
  });
});

describe("retention", () => {
  it("deletes conversation memories older than the agent's retention, and keeps facts and recent ones", async () => {
    const agentId = await createTestAgent({ settings: { memory: { retentionDays: 2 } } });
    const keeper = await createTestAgent();
    const now = Date.now();
    const old = now - 3 * 86_400_000;
    await store(agentId, [
      { type: "message", roomId: "r", userId: "alice", text: "an old message", createdAt: old },
      { type: "summary", roomId: "r", text: "an old summary", createdAt: old },
      { type: "fact", userId: "alice", text: "an old fact", createdAt: old },
      { type: "message", roomId: "r", userId: "alice", text: "a recent message", createdAt: now },
    ]);
    await store(keeper, [
      { type: "message", roomId: "r", userId: "alice", text: "no retention set", createdAt: old },
    ]);
    const report = await runMemoryMaintenance(env, now, {
      forgetRoomHistory: (agentId, roomIds) => forgetRoomHistory(env, agentId, roomIds),
    });
    expect(report.expired).toBe(2);
    const left = (
      await json<{ memories: MemoryView[] }>(await api("GET", `/memories?agentId=${agentId}`))
    ).memories.map((m) => m.text);
    expect(left.sort()).toEqual(["a recent message", "an old fact"]);
    expect(
      (await json<{ memories: MemoryView[] }>(await api("GET", `/memories?agentId=${keeper}`)))
        .memories,
    ).toHaveLength(1);
    expect(
      await count("SELECT count(*) AS n FROM memory_vectors WHERE agent_id = ?", agentId),
    ).toBe(2);
  });
});

describe("memory API: auth", () => {
  it("needs the token", async () => {
    expect((await api("GET", "/memories?agentId=x", { token: null })).status).toBe(401);
  });
});

describe("interaction counts", () => {
  it("counts a turn once, replayed or not, and returns the count in the same statement", async () => {
    const agentId = await createTestAgent();
    const store = createD1MemoryStore(drizzle(env.DB));
    const at = Date.now();
    for (const user of ["ola", "pia"]) {
      await env.DB.prepare(
        "INSERT OR IGNORE INTO users (id, name, source, created_at, updated_at) VALUES (?, ?, 'api', ?, ?)",
      )
        .bind(user, user, at, at)
        .run();
    }
    expect(await store.recordInteraction({ agentId, userId: "ola", turnId: "t1", at })).toBe(1);
    // A replay of the same turn (after an eviction) changes nothing and still says 1.
    expect(await store.recordInteraction({ agentId, userId: "ola", turnId: "t1", at })).toBe(1);
    expect(await store.recordInteraction({ agentId, userId: "ola", turnId: "t2", at })).toBe(2);
    expect(await store.recordInteraction({ agentId, userId: "ola", turnId: "t2", at })).toBe(2);
    expect(await store.recordInteraction({ agentId, userId: "pia", turnId: "t2", at })).toBe(1);
  });
});

describe("writes that belong together", () => {
  const fact = (agentId: string, id: string, text: string) => ({
    id,
    type: "fact" as const,
    agentId,
    roomId: "r1",
    userId: "ola",
    content: { text },
    metadata: {},
    createdAt: 1_000,
  });
  const rowsOf = async (agentId: string) =>
    (
      await env.DB.prepare(
        "SELECT id, type, json_extract(content, '$.text') AS text, embedded_at FROM memories WHERE agent_id = ? ORDER BY id",
      )
        .bind(agentId)
        .all<{ id: string; type: string; text: string; embedded_at: number | null }>()
    ).results;

  it("saves facts and replaces a profile in one write: a replayed fact stays, the profile is new", async () => {
    const agentId = await createTestAgent();
    const store = createD1MemoryStore(drizzle(env.DB));
    const profile = { ...fact(agentId, "profile-ola", "Ola sings"), type: "description" as const };
    await store.saveTogether({ add: [fact(agentId, "f1", "Ola sings")], replace: [profile] });
    await env.DB.prepare("UPDATE memories SET embedded_at = 5 WHERE agent_id = ?")
      .bind(agentId)
      .run();
    await store.saveTogether({
      add: [fact(agentId, "f1", "changed on replay"), fact(agentId, "f2", "Ola moved to Oslo")],
      replace: [{ ...profile, content: { text: "Ola sings and moved to Oslo" } }],
    });
    expect(await rowsOf(agentId)).toEqual([
      // Saved once: a replay changes nothing, its vector kept.
      { id: "f1", type: "fact", text: "Ola sings", embedded_at: 5 },
      { id: "f2", type: "fact", text: "Ola moved to Oslo", embedded_at: null },
      // Replaced: the new text, to be embedded again.
      {
        id: "profile-ola",
        type: "description",
        text: "Ola sings and moved to Oslo",
        embedded_at: null,
      },
    ]);
  });

  it("writes none of it when one part fails", async () => {
    const agentId = await createTestAgent();
    const store = createD1MemoryStore(drizzle(env.DB));
    // The profile names no agent that exists: its row breaks the foreign key, so the batch fails.
    const broken = {
      ...fact("no-such-agent", "profile-ola", "Ola sings"),
      type: "description" as const,
    };
    await expect(
      store.saveTogether({ add: [fact(agentId, "f1", "Ola sings")], replace: [broken] }),
    ).rejects.toThrow();
    expect(await rowsOf(agentId)).toEqual([]);
  });
});
