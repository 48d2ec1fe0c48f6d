// GET /agents/:agentId/usage: each turn leaves one usage record (who, where, which model, tokens,
// tools, failure) in its own D1 trip, and the route groups them by user, room, day, model, tool or
// guild, prices them from settings.prices, and shows a prefix token only its own users.
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it, vi } from "vitest";
import { createD1SpendLedger } from "../../src/db/stores/spend-ledger.ts";
import { api, createTestAgent, expectForbidden, json, mintToken } from "../helpers/api.ts";
import { chat, post, useAgentIn, useDiscordStandIns } from "../helpers/discord.ts";

interface Row {
  key: string | null;
  turns: number;
  modelCalls: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  toolCalls: number;
  lateEmbeddings: number;
  errors: number;
  costUsd?: number;
}

const PRICES = { "test-primary": { inputPerMillion: 2, outputPerMillion: 8 } };
const usage = { promptTokens: 100, completionTokens: 10 };

async function usageBy(
  agentId: string,
  query: string,
  token?: string,
): Promise<{ rows: Row[]; since: string; until: string }> {
  const response = await api("GET", `/agents/${agentId}/usage?${query}`, { token });
  expect(response.status, await response.clone().text()).toBe(200);
  return json(response);
}

/** The records are written after the reply: wait until `turns` of them are there. */
async function settled(agentId: string, turns: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const { rows } = await usageBy(agentId, "by=day");
      expect(rows.reduce((sum, row) => sum + row.turns, 0)).toBe(turns);
    },
    { timeout: 15_000, interval: 50 },
  );
}

describe("GET /agents/:agentId/usage", () => {
  const { model } = useDiscordStandIns();

  it("groups the turns' records by user, room, day, model and tool, with estimated costs", async () => {
    const agentId = await createTestAgent({
      settings: { prices: PRICES, memory: { factsEvery: 1000 } },
    });
    model.respondWith(() => ({ text: "ok", usage }));
    model.script(
      {
        model: "test-primary",
        toolCalls: [{ name: "remember", arguments: { fact: "likes tea" } }],
        usage,
      },
      { model: "test-primary", text: "noted", usage },
    );
    for (const [userId, text] of [
      ["alice", "remember that I like tea"],
      ["acme:bob", "hello there"],
    ] as const) {
      const response = await api("POST", `/agents/${agentId}/messages`, {
        body: { userId, text },
      });
      expect(response.status).toBe(200);
    }
    await settled(agentId, 2);

    const byUser = await usageBy(agentId, "by=user");
    expect(byUser.rows).toEqual([
      {
        key: "alice",
        turns: 1,
        modelCalls: 2,
        inputTokens: 200,
        cachedInputTokens: 0,
        outputTokens: 20,
        toolCalls: 1,
        lateEmbeddings: 0,
        errors: 0,
        costUsd: 0.00056,
      },
      {
        key: "acme:bob",
        turns: 1,
        modelCalls: 1,
        inputTokens: 100,
        cachedInputTokens: 0,
        outputTokens: 10,
        toolCalls: 0,
        lateEmbeddings: 0,
        errors: 0,
        costUsd: 0.00028,
      },
    ]);
    const today = new Date().toISOString().slice(0, 10);
    const byDay = await usageBy(agentId, "by=day");
    expect(byDay.until).toBe(today);
    expect(byDay.rows).toMatchObject([{ key: today, turns: 2, inputTokens: 300 }]);
    expect((await usageBy(agentId, "by=model")).rows).toMatchObject([
      { key: "test-primary", turns: 2, modelCalls: 3 },
    ]);
    expect((await usageBy(agentId, "by=room")).rows.map((row) => row.key).sort()).toEqual([
      "user:acme:bob",
      "user:alice",
    ]);
    expect((await usageBy(agentId, "by=tool")).rows).toEqual([
      {
        key: "remember",
        turns: 1,
        modelCalls: 0,
        inputTokens: 0,
        cachedInputTokens: 0,
        outputTokens: 0,
        toolCalls: 1,
        lateEmbeddings: 0,
        errors: 0,
      },
    ]);
    // REST turns come from no server.
    expect((await usageBy(agentId, "by=guild")).rows).toMatchObject([{ key: null, turns: 2 }]);
    // A window before today holds nothing.
    expect((await usageBy(agentId, "by=user&since=2020-01-01&until=2020-01-31")).rows).toEqual([]);
  });

  it("a prefix token sees only its own users; without agents:read or for another agent, 403", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    model.respondWith(() => ({ text: "ok", usage }));
    for (const userId of ["alice", "acme:bob", "acme:carol"])
      await api("POST", `/agents/${agentId}/messages`, { body: { userId, text: "hi" } });
    await settled(agentId, 3);
    const acme = await mintToken({
      name: "acme",
      scopes: ["agents:read"],
      agents: [agentId],
      userPrefix: "acme:",
    });
    const seen = await usageBy(agentId, "by=user", acme.token);
    expect(seen.rows.map((row) => row.key).sort()).toEqual(["acme:bob", "acme:carol"]);
    const byDay = await usageBy(agentId, "by=day", acme.token);
    expect(byDay.rows).toMatchObject([{ turns: 2 }]);

    const writer = await mintToken({ name: "w", scopes: ["messages:write"], agents: [agentId] });
    await expectForbidden(
      await api("GET", `/agents/${agentId}/usage?by=user`, { token: writer.token }),
      "agents:read",
    );
    const other = await createTestAgent();
    const elsewhere = await mintToken({ name: "o", scopes: ["agents:read"], agents: [other] });
    await expectForbidden(
      await api("GET", `/agents/${agentId}/usage?by=user`, { token: elsewhere.token }),
      agentId,
    );
  });

  it("a failed turn counts as an error; a Discord turn is keyed by its server", async () => {
    const agentId = await useAgentIn("800000000000000777");
    model.respondWith(() => ({ text: "ok", usage }));
    const response = await post(chat("800000000000000777", "hello from the server"));
    expect(response.status).toBe(200);
    await settled(agentId, 1);
    model.failModel("test-primary", 400);
    const failed = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "this one fails" },
    });
    expect(failed.status).toBeGreaterThanOrEqual(400);
    await settled(agentId, 2);
    model.restoreModel("test-primary");
    expect((await usageBy(agentId, "by=guild")).rows).toMatchObject([
      { key: "900000000000000001", turns: 1, errors: 0, inputTokens: 100 },
      { key: null, turns: 1, errors: 1 },
    ]);
  });

  it("counts the turns whose query embedding missed its budget, per user and summed over a turn's parts", async () => {
    const agentId = await createTestAgent();
    const ledger = createD1SpendLedger(drizzle(env.DB));
    const part = {
      agentId,
      kind: "turn" as const,
      roomId: "r",
      guildId: null,
      source: "rest",
      model: "test-primary",
      inputTokens: 10,
      outputTokens: 1,
      modelCalls: 1,
      tools: [],
      error: null,
      at: Date.now(),
    };
    await ledger.record({ ...part, id: "t1", userId: "ana", lateEmbeddings: 1 });
    // The same turn's part after an approval: its count adds to the record.
    await ledger.record({ ...part, id: "t1", userId: "ana", lateEmbeddings: 1 });
    await ledger.record({ ...part, id: "t2", userId: "ana", lateEmbeddings: 0 });
    await ledger.record({ ...part, id: "t3", userId: "ben", lateEmbeddings: 0 });
    const rows = (await usageBy(agentId, "by=user")).rows;
    expect(rows.map(({ key, turns, lateEmbeddings }) => ({ key, turns, lateEmbeddings }))).toEqual([
      { key: "ana", turns: 2, lateEmbeddings: 2 },
      { key: "ben", turns: 1, lateEmbeddings: 0 },
    ]);
  });

  it("refuses a bad grouping, a window that ends before it starts, and one over a year", async () => {
    const agentId = await createTestAgent();
    for (const [query, said] of [
      ["by=person", "by"],
      ["by=user&since=2026-02-30", "since"],
      ["by=user&since=2026-03-02&until=2026-03-01", "`since` is after `until`"],
      ["by=user&since=2024-01-01&until=2026-01-01", "at most 366 days"],
    ] as const) {
      const response = await api("GET", `/agents/${agentId}/usage?${query}`);
      expect(response.status, query).toBe(400);
      const { error } = await json<{ error: { code: string; message: string } }>(response);
      expect(error.message, query).toContain(said);
    }
    expect((await api("GET", "/agents/nobody-here/usage?by=user")).status).toBe(404);
  });
});
