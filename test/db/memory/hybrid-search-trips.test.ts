// Hybrid search's D1 round trips (src/db/memory/hybrid-search.ts): the full-text statement returns
// its hits' rows and neighbours, and the local index ranks what its cache holds while it catches
// up, so a search in a warm isolate is one round trip. These tests hold that, and that nothing it
// answers differs from the slower reads: the rows and neighbours equal rankText's and
// adjacentMessages', and the two-stage vector ranking equals a ranking of a fresh cache.
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { createEmbeddingPipeline } from "../../../src/db/memory/embedding-pipeline.ts";
import { createHybridSearch } from "../../../src/db/memory/hybrid-search.ts";
import { sharedTrips } from "../../../src/db/shared-trips.ts";
import {
  createLocalVectorIndex,
  resetLocalVectorCache,
} from "../../../src/db/memory/local-vector-index.ts";
import {
  adjacentFromRows,
  adjacentMessages,
  batchRawRows,
  insertMemories,
  markEmbedded,
  memoriesByIds,
  memoryRowOf,
  rowsAndNeighbourStatements,
  withEmbedded,
} from "../../../src/db/memory/memory-repo.ts";
import { rankText, rankTextWithRows } from "../../../src/db/memory/text-search.ts";
import { hashEmbed, createHashEmbedder } from "../../../src/runtime/retrieval/hash-embedder.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import type { RetrievalQuery } from "../../../src/runtime/ports/retrieval.ts";
import { countTrips } from "../../helpers/d1-trips.ts";

const DIMS = 384;
const agentId = "trips-agent";
const roomId = "trips-room";
const TOPICS = ["the kayak", "sourdough", "a telescope", "the choir", "rock climbing", "Lisbon"];

function message(i: number, text: string): Memory {
  return {
    id: `tm-${i}`,
    type: "message",
    agentId,
    roomId,
    userId: i % 2 === 0 ? "ana" : null,
    content: i % 2 === 0 ? { text, role: "user", userName: "Ana" } : { text, role: "agent" },
    metadata: {},
    createdAt: 1_000 + i,
  };
}

async function remember(items: Memory[]): Promise<void> {
  const db = drizzle(env.DB);
  await insertMemories(db, items);
  await createLocalVectorIndex(db).upsert(
    items.map((m) => ({
      id: m.id,
      values: hashEmbed(m.content.text, DIMS),
      metadata: { agentId, type: m.type, roomId: m.roomId, userId: m.userId },
    })),
  );
  await markEmbedded(
    db,
    agentId,
    items.map((m) => m.id),
    2_000,
  );
}

const query = (text: string): RetrievalQuery => ({
  agentId,
  text,
  types: ["message", "summary"],
  roomId,
  limit: 8,
  // The newest messages, as the recall provider leaves out what the prompt already shows.
  excludeIds: Array.from({ length: 12 }, (_, k) => `tm-${119 - k}`),
});

beforeAll(async () => {
  await env.DB.prepare(
    "INSERT OR IGNORE INTO agents (id, name, format, character, created_at, updated_at) VALUES (?, 'T', 'v1', '{\"name\":\"T\"}', 0, 0)",
  )
    .bind(agentId)
    .run();
  await remember(
    Array.from({ length: 120 }, (_, i) =>
      message(
        i,
        i % 2 === 0
          ? `Ana: day ${i}, I keep thinking about ${TOPICS[i % TOPICS.length]} and ${TOPICS[(i * 7) % TOPICS.length]}`
          : `Reply ${i}: tell me more about ${TOPICS[(i + 3) % TOPICS.length]}`,
      ),
    ),
  );
});

/** Hybrid search over a D1 binding that counts its round trips. */
function countedSearch() {
  const trips = countTrips(env.DB);
  const db = drizzle(trips.db);
  const search = createHybridSearch({
    db,
    index: createLocalVectorIndex(db),
    embedder: createHashEmbedder({ dimensions: DIMS }),
  });
  return { trips, search };
}

describe("hybrid search round trips", () => {
  it("answers a search in one D1 round trip once the isolate holds the agent's vectors, as a cold search does", async () => {
    const { trips, search } = countedSearch();
    for (const text of [
      "what did Ana say about the kayak",
      "sourdough in Lisbon",
      "telescope choir",
      "rock climbing day 40",
    ]) {
      resetLocalVectorCache();
      trips.reset();
      const cold = await search.search(query(text));
      // The index's dimension and cache catch-up first, then the rows of its hits.
      expect(trips.depth()).toBeGreaterThanOrEqual(2);
      trips.reset();
      const warm = await search.search(query(text));
      expect(trips.depth()).toBe(1);
      expect(warm).toEqual(cold);
      expect(warm.length).toBe(8);
      expect(warm.some((hit) => hit.matchedBy.includes("vector"))).toBe(true);
    }
  });

  it("returns rankText's hits with their rows, and adjacentMessages' neighbours of the first few", async () => {
    const db = drizzle(env.DB);
    const q = { ...query("kayak sourdough telescope"), limit: 30 };
    const statement = rankTextWithRows(db, q, 13);
    expect(statement).not.toBeNull();
    const [raws = []] = await batchRawRows(db, [statement!]);
    const hits = raws
      .filter((raw) => raw.seed_id === null)
      .sort((a, b) => (a.score as number) - (b.score as number));
    expect(hits.map((raw) => raw.id)).toEqual((await rankText(db, q)).map((hit) => hit.id));
    expect(hits.length).toBe(30);
    const seeds = hits.slice(0, 13).map((raw) => raw.id as string);
    const expected = await adjacentMessages(db, agentId, seeds);
    for (const seed of seeds) {
      const found = raws
        .filter((raw) => raw.seed_id === seed)
        .map((raw) => raw.id)
        .sort();
      expect(found).toEqual((expected.get(seed) ?? []).map((m) => m.id).sort());
    }
    expect(raws.some((raw) => raw.seed_id !== null)).toBe(true);
  });

  it("ranks as rankText does whatever the filter's shape (one compiled statement per shape)", async () => {
    const db = drizzle(env.DB);
    const base = { agentId, text: "kayak sourdough telescope choir", limit: 30 };
    for (const filter of [
      {},
      { types: ["message" as const] },
      { roomId },
      { userId: "ana" },
      { userId: "ana", includeShared: true },
      { roomId, types: ["message" as const, "summary" as const], excludeIds: ["tm-0", "tm-2"] },
      { roomId: "another-room" },
      {},
    ]) {
      const q = { ...base, ...filter };
      const [raws = []] = await batchRawRows(db, [rankTextWithRows(db, q, 13)!]);
      const hits = raws
        .filter((raw) => raw.seed_id === null)
        .sort((a, b) => (a.score as number) - (b.score as number));
      const expected = await rankText(db, q);
      expect(hits.map((raw) => raw.id)).toEqual(expected.map((hit) => hit.id));
    }
  });

  it("ranks in two stages as a fresh cache ranks in one, after new and replaced vectors", async () => {
    const db = drizzle(env.DB);
    const index = createLocalVectorIndex(db);
    const vector = hashEmbed("Ana and the kayak in Lisbon", DIMS);
    const vectorQuery = { agentId, vector, topK: 30, types: ["message" as const], roomId };
    resetLocalVectorCache();
    expect(index.queryStaged!(vectorQuery)).toBeNull();
    await index.query(vectorQuery);
    // Written since this isolate's cache caught up: new messages, and five rewritten ones.
    await remember(
      Array.from({ length: 20 }, (_, k) =>
        message(200 + k, `Ana took the kayak out near Lisbon, trip ${k}`),
      ),
    );
    await index.upsert(
      [10, 20, 30, 40, 50].map((i) => ({
        id: `tm-${i}`,
        values: hashEmbed(`the kayak in Lisbon, rewritten ${i}`, DIMS),
        metadata: { agentId, type: "message", roomId, userId: "ana" },
      })),
    );
    const staged = index.queryStaged!(vectorQuery);
    expect(staged).not.toBeNull();
    expect(staged!.early.some((match) => Number(match.id.slice(3)) >= 200)).toBe(false);
    const final = await staged!.final;
    expect(final.some((match) => Number(match.id.slice(3)) >= 200)).toBe(true);
    expect(final.some((match) => match.id === "tm-10")).toBe(true);
    resetLocalVectorCache();
    expect(final).toEqual(await index.query(vectorQuery));
  });
});

describe("embedding round trips", () => {
  it("writes a pass's vectors and marks their memories embedded in one D1 batch", async () => {
    const trips = countTrips(env.DB);
    const db = drizzle(trips.db);
    const pendingRoom = "trips-pending";
    const items = [0, 1, 2].map((i) => ({
      ...message(500 + i, `pending message ${i} about the harbour`),
      roomId: pendingRoom,
    }));
    await insertMemories(drizzle(env.DB), items);
    const pipeline = createEmbeddingPipeline({
      db,
      embedder: createHashEmbedder({ dimensions: DIMS }),
      index: createLocalVectorIndex(db),
      now: () => 3_000,
    });
    await pipeline.checkDimensions();
    trips.reset();
    expect(await pipeline.embedPending({ agentId, roomId: pendingRoom })).toEqual({
      embedded: 3,
      pending: false,
    });
    // The pending read, then one batch: vectors and embedded_at together (the index's dimension
    // was read by checkDimensions and is not read again).
    expect(trips.calls()).toBe(2);
    const rows = await env.DB.prepare(
      `SELECT m.embedded_at AS at, v.dimensions AS dims FROM memories m
       JOIN memory_vectors v ON v.memory_id = m.id WHERE m.agent_id = ? AND m.room_id = ?`,
    )
      .bind(agentId, pendingRoom)
      .all<{ at: number; dims: number }>();
    expect(rows.results).toEqual(items.map(() => ({ at: 3_000, dims: DIMS })));
  });
});

describe("a turn's reads in one round trip", () => {
  it("sends a turn's concurrent searches, the person's facts and the catch-up as one D1 batch through a room's binding, answering as separate reads do", async () => {
    const { trips, search } = countedSearch();
    const shared = drizzle(sharedTrips(trips.db));
    const inRoom = createHybridSearch({
      db: shared,
      index: createLocalVectorIndex(shared),
      embedder: createHashEmbedder({ dimensions: DIMS }),
    });
    const embedder = createHashEmbedder({ dimensions: DIMS });
    const reads = async (retriever: typeof search) => {
      const [vector] = await embedder.embed(["kayak and sourdough"]);
      return Promise.all([
        retriever.aboutUser({ agentId, userId: "ana", limit: 60 }),
        retriever.search({ ...query("kayak and sourdough"), types: ["fragment", "lore"] }, vector),
        retriever.search(query("kayak and sourdough"), vector),
      ]);
    };
    const separate = await reads(search);
    trips.reset();
    await reads(search);
    // On their own: the catch-up read, the facts, and each search's reads.
    expect(trips.calls()).toBeGreaterThanOrEqual(4);
    trips.reset();
    const together = await reads(inRoom);
    expect(trips.calls()).toBe(1);
    expect(together).toEqual(separate);
    expect(together[2].length).toBe(8);
    // The vector as a promise already settled (a kept one): still one trip, the same answers.
    trips.reset();
    const [vector] = await embedder.embed(["kayak and sourdough"]);
    const settled = await Promise.all([
      inRoom.aboutUser({ agentId, userId: "ana", limit: 60 }),
      inRoom.search(
        { ...query("kayak and sourdough"), types: ["fragment", "lore"] },
        Promise.resolve(vector!),
      ),
      inRoom.search(query("kayak and sourdough"), Promise.resolve(vector!)),
    ]);
    expect(trips.calls()).toBe(1);
    expect(settled).toEqual(separate);
  });

  it("reads the full-text leg while the query's vector is out, and answers as with the vector at hand", async () => {
    const { trips, search } = countedSearch();
    const shared = drizzle(sharedTrips(trips.db));
    const inRoom = createHybridSearch({
      db: shared,
      index: createLocalVectorIndex(shared),
      embedder: createHashEmbedder({ dimensions: DIMS }),
    });
    const [vector] = await createHashEmbedder({ dimensions: DIMS }).embed(["the choir in Lisbon"]);
    const expected = await search.search(query("the choir in Lisbon"), vector);
    trips.reset();
    let arrive!: (v: Float32Array) => void;
    const later = new Promise<Float32Array>((resolve) => (arrive = resolve));
    const searching = inRoom.search(query("the choir in Lisbon"), later);
    await vi.waitFor(() => expect(trips.calls()).toBe(1));
    // The text leg's trip has come back; the vector's rows wait for the vector.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(trips.calls()).toBe(1);
    arrive(vector!);
    const found = await searching;
    expect(found).toEqual(expected);
    expect(found.some((hit) => hit.matchedBy.includes("vector"))).toBe(true);
    expect(trips.calls()).toBeGreaterThanOrEqual(2);
  });
});

describe("compiled row and neighbour reads", () => {
  it("read what memoriesByIds and adjacentMessages read, for any number of ids and only the agent's", async () => {
    const db = drizzle(env.DB);
    // All 120 messages (past D1's 100 bound parameters), an unknown id and a missing one.
    const ids = [...Array.from({ length: 120 }, (_, i) => `tm-${i}`), "tm-none"];
    const around = ids.slice(0, 40);
    const { rows, around: aroundStatements } = rowsAndNeighbourStatements(db, agentId, ids, around);
    expect(rows.length + aroundStatements.length).toBe(2);
    const [rowRaws = [], aroundRaws = []] = await batchRawRows(db, [...rows, ...aroundStatements]);
    const byId = (list: Array<{ id: string }>) =>
      [...list].sort((a, b) => a.id.localeCompare(b.id));
    expect(byId(rowRaws.map((raw) => withEmbedded(memoryRowOf(raw))))).toEqual(
      byId(await memoriesByIds(db, agentId, ids)),
    );
    const found = adjacentFromRows(
      agentId,
      aroundRaws.map((raw) => ({ seedId: raw.seed_id as string, memory: memoryRowOf(raw) })),
    );
    const expected = await adjacentMessages(db, agentId, around);
    for (const id of around)
      expect(byId(found.get(id) ?? [])).toEqual(byId(expected.get(id) ?? []));
    // Another agent's view of the same ids finds nothing.
    const other = rowsAndNeighbourStatements(db, "someone-else", ids, around);
    const [none = [], noneAround = []] = await batchRawRows(db, [...other.rows, ...other.around]);
    expect([none.length, noneAround.length]).toEqual([0, 0]);
    expect(rowsAndNeighbourStatements(db, agentId, [], [])).toEqual({ rows: [], around: [] });
  });
});
