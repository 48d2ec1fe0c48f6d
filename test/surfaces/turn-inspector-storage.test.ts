// How the turn inspector keeps a turn (src/db/stores/turn-inspection-store.ts): D1 holds a compact
// outline (at most 2 KB for a plain turn), R2 the prompt's text and the tools' arguments and
// results, gzip, for as long as the row; the route answers as it did when D1 held it all, a row of
// version 1 still reads, pruning a row takes its text, and a failed R2 write keeps the record
// without text. The route's answers for a whole turn are held by turn-inspector.test.ts.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import ada from "../../characters/ada.json";
import { openDb } from "../../src/db/db.ts";
import { createTurnInspectionStore } from "../../src/db/stores/turn-inspection-store.ts";
import { inspectionTextKey } from "../../src/db/stores/turn-inspection-text.ts";
import { runMemoryMaintenance } from "../../src/db/memory/maintenance.ts";
import type { TurnInspection } from "../../src/runtime/turn/turn-inspection.ts";
import versionOne from "../fixtures/turn-inspection/version-1.json";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const DAY_MS = 86_400_000;
const MAX_PLAIN_TURN_DETAIL_BYTES = 2_048;

interface StoredRow {
  bytes: number;
  detail: string;
  created_at: number;
}

/** The turn's D1 row once the room wrote it after the reply. */
async function storedRow(agentId: string, turnId: string): Promise<StoredRow> {
  let row: StoredRow | null = null;
  await vi.waitFor(
    async () => {
      row = await env.DB.prepare(
        "SELECT length(CAST(detail AS BLOB)) AS bytes, detail, created_at FROM turn_inspections WHERE agent_id = ? AND turn_id = ?",
      )
        .bind(agentId, turnId)
        .first<StoredRow>();
      expect(row).not.toBeNull();
    },
    { timeout: 15_000, interval: 50 },
  );
  return row!;
}

/** The R2 object is written just after the row: wait for it too. */
async function storedText(key: string): Promise<R2Object> {
  let head: R2Object | null = null;
  await vi.waitFor(
    async () => {
      head = await env.MEDIA.head(key);
      expect(head).not.toBeNull();
    },
    { timeout: 15_000, interval: 50 },
  );
  return head!;
}

async function say(agentId: string, text: string, reply: string): Promise<string> {
  model.script({ text: reply, usage: { promptTokens: 900, completionTokens: 60 } });
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "alice", text },
  });
  expect(response.status).toBe(200);
  return (await json<{ turnId: string }>(response)).turnId;
}

/** The fixture's record, moved to this test's agent and turn, with these memory ids. */
function fixtureFor(agentId: string, turnId: string, memoryIds: string[]): TurnInspection {
  const record = structuredClone(versionOne) as unknown as TurnInspection;
  return {
    ...record,
    agentId,
    turnId,
    memories: record.memories.map((memory, i) => ({ ...memory, id: memoryIds[i]! })),
    // Built today, a record counts cached input tokens; the version-1 fixture predates them.
    modelCalls: record.modelCalls.map((call) => ({ ...call, cachedInputTokens: 0 })),
  };
}

async function insertRow(record: { agentId: string; turnId: string }, detail: unknown) {
  const whole = record as TurnInspection;
  await env.DB.prepare(
    "INSERT INTO turn_inspections (agent_id, turn_id, room_id, user_id, detail, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  )
    .bind(
      whole.agentId,
      whole.turnId,
      whole.roomId,
      whole.userId,
      JSON.stringify(detail),
      whole.startedAt,
    )
    .run();
}

async function inspect(agentId: string, turnId: string): Promise<Record<string, unknown>> {
  const response = await api("GET", `/agents/${agentId}/turns/${turnId}`);
  expect(response.status).toBe(200);
  return json(response);
}

/** An agent with a fact and a knowledge fragment, and the ids the fixture's memories take. */
async function agentWithMemories(): Promise<{ agentId: string; memoryIds: string[] }> {
  const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
  const fact = await api("POST", "/memories", {
    body: { memories: [{ agentId, type: "fact", userId: "alice", text: "Alice grows tomatoes" }] },
  });
  expect(fact.status).toBe(201);
  const lore = await api("POST", "/memories", {
    body: { memories: [{ agentId, type: "lore", text: "Tomatoes need six hours of sun." }] },
  });
  expect(lore.status).toBe(201);
  const listed = await json<{ memories: Array<{ id: string; type: string }> }>(
    await api("GET", `/memories?agentId=${agentId}`),
  );
  const id = (type: string) => listed.memories.find((m) => m.type === type)!.id;
  return { agentId, memoryIds: [id("fact"), id("lore")] };
}

describe("how the turn inspector keeps a turn", () => {
  it("keeps a plain turn in at most 2 KB of D1, and its text gzip in R2 until the row goes", async () => {
    const agentId = `ada-${Date.now().toString(36)}`;
    expect((await api("POST", "/agents", { body: { ...ada, id: agentId } })).status).toBe(201);
    const doc = await api("POST", `/agents/${agentId}/knowledge`, {
      body: {
        title: "Testing",
        text: "Vitest runs tests in workers. ".repeat(40),
      },
    });
    expect(doc.status).toBe(201);
    const facts = Array.from({ length: 8 }, (_, i) => ({
      agentId,
      type: "fact",
      userId: "alice",
      text: `Alice's fact number ${i}: she writes TypeScript for a living`,
    }));
    expect((await api("POST", "/memories", { body: { memories: facts } })).status).toBe(201);
    const answer = "Here is a careful answer of a few sentences about that. ".repeat(5);
    await say(agentId, "Hi Ada, I'm Alice.", answer);
    await say(agentId, "What's a good way to learn TypeScript?", answer);
    const turnId = await say(agentId, "And how do I test a Worker with Vitest?", answer);

    const row = await storedRow(agentId, turnId);
    const detail = JSON.parse(row.detail) as { version: number; text: string; memories: unknown[] };
    expect(detail).toMatchObject({ version: 2, text: "r2" });
    expect(detail.memories.length).toBeGreaterThan(8);
    expect(row.bytes).toBeLessThanOrEqual(MAX_PLAIN_TURN_DETAIL_BYTES);
    expect(row.detail).not.toContain("Vitest runs tests in workers");

    const head = await storedText(inspectionTextKey(agentId, turnId, row.created_at));
    expect(head.httpMetadata?.contentEncoding).toBe("gzip");
    expect(Date.parse(head.customMetadata!.expiresAt!)).toBe(row.created_at + 7 * DAY_MS);
    const turn = await inspect(agentId, turnId);
    const sections = turn.sections as Array<{ name: string; text?: string }>;
    expect(sections.find((s) => s.name === "knowledge")!.text).toContain("Vitest runs tests");
    expect(sections.at(-1)!.text).toBe("And how do I test a Worker with Vitest?");
  });

  it("keeps a turn that used dozens of the person's facts within 2 KB too, and still shows them", async () => {
    const { agentId, memoryIds } = await agentWithMemories();
    const facts = Array.from({ length: 40 }, (_, i) => ({
      agentId,
      type: "fact",
      userId: "alice",
      text: `Alice's fact number ${i}`,
    }));
    expect((await api("POST", "/memories", { body: { memories: facts } })).status).toBe(201);
    const listed = await json<{ memories: Array<{ id: string; type: string }> }>(
      await api("GET", `/memories?agentId=${agentId}&type=fact&limit=100`),
    );
    const record = fixtureFor(agentId, "turn-with-many-facts", memoryIds);
    record.memories = listed.memories.map((m) => ({
      id: m.id,
      type: "fact",
      score: null,
      provider: "user-facts",
      matchedBy: null,
    }));
    expect(record.memories.length).toBeGreaterThanOrEqual(40);
    await createTurnInspectionStore(openDb(env.DB), { bucket: env.MEDIA }).record(record);

    const row = await storedRow(agentId, record.turnId);
    expect(row.bytes).toBeLessThanOrEqual(MAX_PLAIN_TURN_DETAIL_BYTES);
    const turn = await inspect(agentId, record.turnId);
    expect((turn.memories as Array<{ id: string }>).map((m) => m.id).sort()).toEqual(
      record.memories.map((m) => m.id).sort(),
    );
  });

  it("answers for a turn kept in version 2 what it answered when D1 kept all of it (version 1)", async () => {
    const { agentId, memoryIds } = await agentWithMemories();
    const old = fixtureFor(agentId, "turn-kept-whole", memoryIds);
    await insertRow(old, old);
    const now = fixtureFor(agentId, "turn-kept-compact", memoryIds);
    await createTurnInspectionStore(openDb(env.DB), { bucket: env.MEDIA }).record(now);

    const before = await inspect(agentId, old.turnId);
    const after = await inspect(agentId, now.turnId);
    expect({ ...after, turnId: old.turnId }).toEqual(before);
    // The version-1 row reads whole: text, tool arguments and results, the memories used.
    expect(before).toMatchObject({
      content: true,
      sections: expect.arrayContaining([
        { name: "message", tokens: 8, text: "How much sun do tomatoes need?" },
      ]),
      tools: [expect.objectContaining({ arguments: { timeZone: "Europe/Paris" } })],
      memories: [
        expect.objectContaining({ id: memoryIds[0], text: "Alice grows tomatoes" }),
        expect.objectContaining({ id: memoryIds[1], matchedBy: ["text", "vector"] }),
      ],
    });
  });

  it("deletes a turn's text from R2 when the upkeep deletes its row", async () => {
    const agentId = await createTestAgent();
    const turnId = await say(agentId, "Hello there", "Hello!");
    const row = await storedRow(agentId, turnId);
    const key = inspectionTextKey(agentId, turnId, row.created_at);
    await storedText(key);
    const upkeep = (now: number) =>
      runMemoryMaintenance(env, now, { forgetRoomHistory: async () => undefined });

    await upkeep(row.created_at + 7 * DAY_MS - 60_000);
    expect(await env.MEDIA.head(key)).not.toBeNull();
    await upkeep(row.created_at + 7 * DAY_MS + 60_000);
    const left = await env.DB.prepare(
      "SELECT count(*) AS n FROM turn_inspections WHERE turn_id = ?",
    )
      .bind(turnId)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
    expect(await env.MEDIA.head(key)).toBeNull();
  });

  it("keeps the record, marked without text, when R2 refuses the text; recording does not fail", async () => {
    const { agentId, memoryIds } = await agentWithMemories();
    const refusing = new Proxy(env.MEDIA, {
      get(bucket, name) {
        if (name === "put") return async () => Promise.reject(new Error("R2 is unavailable"));
        const value = Reflect.get(bucket, name);
        return typeof value === "function" ? value.bind(bucket) : value;
      },
    });
    const record = fixtureFor(agentId, "turn-without-text", memoryIds);
    const store = createTurnInspectionStore(openDb(env.DB), { bucket: refusing });
    await expect(store.record(record)).resolves.toBeUndefined();

    const row = await storedRow(agentId, record.turnId);
    expect(JSON.parse(row.detail)).toMatchObject({ version: 2, text: "none" });
    const turn = await inspect(agentId, record.turnId);
    expect(turn).toMatchObject({ content: true, resumed: false });
    const sections = turn.sections as Array<{ name: string; tokens: number }>;
    expect(sections.map(({ name, tokens }) => [name, tokens])).toEqual(
      record.sections.map(({ name, tokens }) => [name, tokens]),
    );
    for (const section of sections) expect(section).not.toHaveProperty("text");
    expect(turn.tools).toEqual([expect.not.objectContaining({ output: expect.anything() })]);
    expect(turn.modelCalls).toEqual(record.modelCalls);
  });

  it("keeps no text at all for a turn outside INSPECTOR_TEXT_SHARE", async () => {
    const { agentId, memoryIds } = await agentWithMemories();
    const record = fixtureFor(agentId, "turn-not-sampled", memoryIds);
    const store = createTurnInspectionStore(openDb(env.DB), { bucket: env.MEDIA, textShare: 0 });
    await store.record(record);
    const row = await storedRow(agentId, record.turnId);
    expect(JSON.parse(row.detail)).toMatchObject({ version: 2, text: "none" });
    expect(
      await env.MEDIA.head(inspectionTextKey(agentId, record.turnId, record.startedAt)),
    ).toBeNull();
  });
});
