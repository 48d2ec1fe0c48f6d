// The hourly upkeep (src/db/memory/maintenance.ts) and what it keeps: retention takes a character's
// `settings.memory.retentionDays`, else the deployment's MEMORY_RETENTION_DAYS, and deletes only
// messages and summaries; what the agent knows of people (facts, descriptions), its lore and its
// documents stay however old. The same run rolls up old usage records and samples the database.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env.ts";
import { openDb } from "../../../src/db/db.ts";
import { createD1SpendLedger } from "../../../src/db/stores/spend-ledger.ts";
import { runMemoryMaintenance } from "../../../src/db/memory/maintenance.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";

const DAY_MS = 86_400_000;
const noRooms = { forgetRoomHistory: async () => undefined };

/** The test env with a deployment-wide retention (a new object: config and stores rebuilt). */
const withRetention = (days: string): Env => ({ ...(env as Env), MEMORY_RETENTION_DAYS: days });

async function store(agentId: string, memories: Record<string, unknown>[]): Promise<void> {
  const response = await api("POST", "/memories", {
    body: { memories: memories.map((m) => ({ agentId, ...m })) },
  });
  expect(response.status, await response.clone().text()).toBe(201);
}

async function texts(agentId: string): Promise<string[]> {
  const { memories } = await json<{ memories: { text: string }[] }>(
    await api("GET", `/memories?agentId=${agentId}&limit=100`),
  );
  return memories.map((m) => m.text).sort();
}

/** One old memory of each kind the API stores, and a recent message. */
async function storeOldAndNew(agentId: string, now: number, oldDays: number): Promise<void> {
  const old = now - oldDays * DAY_MS;
  await store(agentId, [
    { type: "message", roomId: "r", userId: "alice", text: "old message", createdAt: old },
    { type: "summary", roomId: "r", text: "old summary", createdAt: old },
    { type: "fact", userId: "alice", text: "old fact", createdAt: old },
    { type: "description", userId: "alice", text: "old description", createdAt: old },
    { type: "lore", text: "old lore", createdAt: old },
    { type: "message", roomId: "r", userId: "alice", text: "new message", createdAt: now },
  ]);
}

describe("runMemoryMaintenance: retention", () => {
  it("applies MEMORY_RETENTION_DAYS to agents whose character sets none", async () => {
    const agentId = await createTestAgent();
    const now = Date.now();
    await storeOldAndNew(agentId, now, 40);
    // Without the variable nothing expires.
    await runMemoryMaintenance(env, now, noRooms);
    expect(await texts(agentId)).toContain("old message");

    await runMemoryMaintenance(withRetention("30"), now, noRooms);
    expect(await texts(agentId)).toEqual(
      ["new message", "old description", "old fact", "old lore"].sort(),
    );
  });

  it("lets the character's retentionDays win over the deployment's, either way", async () => {
    const longer = await createTestAgent({ settings: { memory: { retentionDays: 60 } } });
    const shorter = await createTestAgent({ settings: { memory: { retentionDays: 2 } } });
    const now = Date.now();
    await storeOldAndNew(longer, now, 40);
    await storeOldAndNew(shorter, now, 5);
    await runMemoryMaintenance(withRetention("30"), now, noRooms);
    // 40 days old, kept 60: all there. 5 days old, kept 2: gone, though the deployment keeps 30.
    expect(await texts(longer)).toContain("old message");
    expect(await texts(longer)).toContain("old summary");
    expect(await texts(shorter)).toEqual(
      ["new message", "old description", "old fact", "old lore"].sort(),
    );
  });

  it("never deletes facts, descriptions, lore or documents, however short the retention", async () => {
    const agentId = await createTestAgent({ settings: { memory: { retentionDays: 1 } } });
    const now = Date.now();
    await storeOldAndNew(agentId, now, 3_000);
    const document = await api("POST", `/agents/${agentId}/knowledge`, {
      body: { documentId: "handbook", text: "The handbook says the gate opens at nine." },
    });
    expect(document.status, await document.clone().text()).toBeLessThan(300);
    const conversation = ["new message", "old message", "old summary"];
    const kept = (await texts(agentId)).filter((text) => !conversation.includes(text));
    expect(kept).toEqual(expect.arrayContaining(["old description", "old fact", "old lore"]));
    expect(kept.some((text) => text.includes("the gate opens at nine"))).toBe(true);
    // A year on, with the shortest retention there is: only the conversation goes.
    await runMemoryMaintenance(withRetention("1"), now + 365 * DAY_MS, noRooms);
    expect(await texts(agentId)).toEqual(kept);
  });
});

describe("runMemoryMaintenance: storage", () => {
  it("rolls up old usage records and samples the database's size", async () => {
    const agentId = await createTestAgent();
    const now = Date.now();
    const ledger = createD1SpendLedger(openDb(env.DB));
    for (const id of ["a", "b", "c"])
      await ledger.record({
        id,
        agentId,
        kind: "turn",
        roomId: "r",
        userId: "alice",
        guildId: null,
        source: "rest",
        model: "m",
        inputTokens: 10,
        outputTokens: 1,
        modelCalls: 1,
        tools: [],
        error: null,
        lateEmbeddings: 0,
        at: now - 40 * DAY_MS,
      });
    const report = await runMemoryMaintenance(env, now, noRooms);
    expect(report.usageRolledUp).toBeGreaterThanOrEqual(3);
    expect(report.databasesSampled).toBe(1);
    const rows = await env.DB.prepare(
      "SELECT units, input_tokens AS tokens FROM usage_records WHERE agent_id = ?",
    )
      .bind(agentId)
      .all<{ units: number; tokens: number }>();
    expect(rows.results).toEqual([{ units: 3, tokens: 30 }]);
  });
});
