// Usage records past USAGE_ROLLUP_AFTER_DAYS are rolled up into one row per day and key
// (src/db/stores/usage-rollup.ts). What a user sees must not move: GET /agents/:id/usage answers
// every grouping (with prices, by kind, through a prefix token) the same before, half-way through
// and after a rollup; an interrupted rollup resumes without losing or doubling anything; today's
// rows, which the place budgets read, are left alone.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/db.ts";
import { createD1SpendLedger } from "../../src/db/stores/spend-ledger.ts";
import { ROLLUP_SLICE, rollUpUsage } from "../../src/db/stores/usage-rollup.ts";
import { usageRollupCutoff } from "../../src/db/memory/storage-upkeep.ts";
import { BUDGET_USED, type UsageRecord, utcDay } from "../../src/runtime/turn/spend.ts";
import { api, createTestAgent, json, mintToken } from "../helpers/api.ts";

const DAY_MS = 86_400_000;
const GROUPINGS = ["user", "room", "day", "model", "tool", "guild"] as const;
const PRICES = {
  "model-a": { inputPerMillion: 2, outputPerMillion: 8, cachedInputPerMillion: 0.5 },
  "model-b": { inputPerMillion: 1, outputPerMillion: 3 },
};

/** A varied history: 60 units over two old days and today, some sharing every key. */
function history(agentId: string, now: number): UsageRecord[] {
  const records: UsageRecord[] = [];
  const days = [now - 45 * DAY_MS, now - 44 * DAY_MS, now];
  for (let i = 0; i < 60; i++) {
    const tools: UsageRecord["tools"] = [];
    if (i % 3 === 0) tools.push({ name: "remember", ok: true });
    // Twice in one unit: counts once under the tool's units, twice under its calls.
    if (i % 4 === 0)
      tools.push({ name: "web_read", ok: i % 8 !== 0 }, { name: "web_read", ok: true });
    records.push({
      id: `unit-${i}`,
      agentId,
      kind: i % 5 === 0 ? "task" : "turn",
      roomId: `room-${i % 3}`,
      userId: i % 7 === 0 ? null : i % 2 === 0 ? "acme:ann" : "ben",
      guildId: i % 2 === 0 ? "guild-1" : null,
      source: i % 2 === 0 ? "discord" : "rest",
      model: i % 6 === 0 ? null : i % 3 === 0 ? "model-b" : "model-a",
      inputTokens: 100 + i,
      // Some units read part of their prompt from the provider's cache.
      cachedInputTokens: i % 4 === 1 ? 64 : 0,
      outputTokens: 10 + (i % 4),
      modelCalls: 1 + (i % 2),
      tools,
      error: i % 9 === 0 ? "model" : i % 11 === 0 ? BUDGET_USED.member : null,
      lateEmbeddings: i % 5 === 1 ? 1 : 0,
      at: days[i % 3] ?? now,
    });
  }
  return records;
}

async function everyAnswer(agentId: string, now: number, token?: string): Promise<unknown[]> {
  const since = utcDay(now - 50 * DAY_MS);
  const until = utcDay(now);
  const answers: unknown[] = [];
  for (const by of GROUPINGS)
    for (const kind of ["", "&kind=turn", "&kind=task"]) {
      const path = `/agents/${agentId}/usage?by=${by}&since=${since}&until=${until}${kind}`;
      const response = await api("GET", path, { token });
      expect(response.status, path).toBe(200);
      answers.push({ path, body: await json(response) });
    }
  return answers;
}

async function tools(agentId: string, now: number) {
  const since = utcDay(now - 50 * DAY_MS);
  const { rows } = await json<{ rows: Record<string, unknown>[] }>(
    await api("GET", `/agents/${agentId}/usage?by=tool&since=${since}`),
  );
  return rows.map(({ key, turns, toolCalls, errors }) => ({ key, turns, toolCalls, errors }));
}

/** Cached input tokens over the window, summed from the by=day rows. */
async function cachedByDay(agentId: string, now: number): Promise<number> {
  const since = utcDay(now - 50 * DAY_MS);
  const { rows } = await json<{ rows: { cachedInputTokens: number }[] }>(
    await api("GET", `/agents/${agentId}/usage?by=day&since=${since}`),
  );
  return rows.reduce((sum, row) => sum + row.cachedInputTokens, 0);
}

async function rowCount(agentId: string): Promise<{ raw: number; rolled: number }> {
  const row = await env.DB.prepare(
    "SELECT sum(rolled_up = 0) AS raw, sum(rolled_up = 1) AS rolled FROM usage_records WHERE agent_id = ?",
  )
    .bind(agentId)
    .first<{ raw: number; rolled: number }>();
  return { raw: Number(row?.raw ?? 0), rolled: Number(row?.rolled ?? 0) };
}

async function seeded(now: number): Promise<{ agentId: string; token: string }> {
  const agentId = await createTestAgent({ settings: { prices: PRICES } });
  const ledger = createD1SpendLedger(openDb(env.DB));
  for (const record of history(agentId, now)) await ledger.record(record);
  const { token } = await mintToken({
    name: "acme",
    scopes: ["agents:read"],
    agents: [agentId],
    userPrefix: "acme:",
  });
  return { agentId, token };
}

describe("usage rollup", () => {
  it("answers every grouping the same before and after the old days are rolled up", async () => {
    const now = Date.now();
    const { agentId, token } = await seeded(now);
    const before = await everyAnswer(agentId, now);
    const beforeTenant = await everyAnswer(agentId, now, token);
    // By tool: units that called it, each call, each failed call (a unit's second tool included).
    const byTool = await tools(agentId, now);
    expect(byTool).toEqual([
      { key: "web_read", turns: 15, toolCalls: 30, errors: 8 },
      { key: "remember", turns: 20, toolCalls: 20, errors: 0 },
    ]);
    // Cached input is in the answers being compared: 15 units of 64 cached tokens each.
    expect(await cachedByDay(agentId, now)).toBe(15 * 64);

    const rolled = await rollUpUsage(openDb(env.DB), agentId, usageRollupCutoff(now));
    expect(rolled).toBe(40);
    const counts = await rowCount(agentId);
    // Today's 20 stay one per unit; the old days' 40 units became far fewer rows.
    expect(counts.raw).toBe(20);
    expect(counts.rolled).toBeGreaterThan(0);
    expect(counts.rolled).toBeLessThan(40);

    expect(await everyAnswer(agentId, now)).toEqual(before);
    expect(await everyAnswer(agentId, now, token)).toEqual(beforeTenant);
    expect(await tools(agentId, now)).toEqual(byTool);
    expect(await cachedByDay(agentId, now)).toBe(15 * 64);
  });

  it("an interrupted rollup resumes where it stopped, losing and doubling nothing", async () => {
    const now = Date.now();
    const { agentId } = await seeded(now);
    const before = await everyAnswer(agentId, now);
    const db = openDb(env.DB);
    const cutoff = usageRollupCutoff(now);

    // Stopped after one batch of 7 rows: some rows of a key rolled up, others not yet.
    expect(await rollUpUsage(db, agentId, cutoff, { batchRows: 7, maxBatches: 1 })).toBe(7);
    expect((await rowCount(agentId)).raw).toBe(53);
    expect(await everyAnswer(agentId, now)).toEqual(before);

    // The rest, in small batches that add to the rolled-up rows already there.
    expect(await rollUpUsage(db, agentId, cutoff, { batchRows: 6 })).toBe(33);
    expect(await everyAnswer(agentId, now)).toEqual(before);
    const after = await rowCount(agentId);
    expect(after.raw).toBe(20);

    // Run again: nothing left to roll up, nothing changes.
    expect(await rollUpUsage(db, agentId, cutoff)).toBe(0);
    expect(await rowCount(agentId)).toEqual(after);
    expect(await everyAnswer(agentId, now)).toEqual(before);
  });

  it("leaves today's rows, which the place budgets read, as they were", async () => {
    const now = Date.now();
    const { agentId } = await seeded(now);
    const ledger = createD1SpendLedger(openDb(env.DB));
    const query = { agentId, day: utcDay(now), userId: "ben", guildId: null };
    const before = await ledger.spentToday(query);
    expect(before.member).toBeGreaterThan(0);
    await rollUpUsage(openDb(env.DB), agentId, usageRollupCutoff(now));
    expect(await ledger.spentToday(query)).toEqual(before);
    // Another agent's records are not touched by this agent's rollup.
    const other = await seeded(now);
    await rollUpUsage(openDb(env.DB), agentId, usageRollupCutoff(now));
    expect((await rowCount(other.agentId)).raw).toBe(60);
  });

  it("finds the rows to roll up through the partial index of raw rows, not by scanning", async () => {
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${ROLLUP_SLICE}`)
      .bind("agent", "2026-01-01", 10)
      .all<{ detail: string }>();
    const steps = plan.results.map((row) => row.detail).join("\n");
    expect(steps).toContain("usage_records_unrolled_idx");
    expect(steps).not.toContain("TEMP B-TREE");
  });
});
