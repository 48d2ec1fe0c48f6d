// GET /agents/:agentId/storage and /health's `storage`: what an agent keeps in D1 by kind, what it
// wrote per day this week, and each database's size, growth and days left to D1's ceiling, the
// growth read from the upkeep's daily size samples (database_size_daily).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/db.ts";
import { D1_MAX_DATABASE_BYTES, databaseSize } from "../../src/db/stores/database-size.ts";
import { createD1SpendLedger } from "../../src/db/stores/spend-ledger.ts";
import { api, createTestAgent, expectForbidden, json, mintToken } from "../helpers/api.ts";

const DAY_MS = 86_400_000;

interface Kind {
  kind: string;
  rows: number;
  bytes: number;
  bytesPerDay: number;
}
interface Storage {
  agentId: string;
  kinds: Kind[];
  total: Omit<Kind, "kind">;
  databases: {
    name: string;
    bytes: number | null;
    limitBytes: number;
    bytesPerDay: number | null;
    daysLeft: number | null;
  }[];
}

async function storageOf(agentId: string, token?: string): Promise<Storage> {
  const response = await api("GET", `/agents/${agentId}/storage`, { token });
  expect(response.status, await response.clone().text()).toBe(200);
  return json<Storage>(response);
}

describe("GET /agents/:agentId/storage", () => {
  it("counts the agent's rows and bytes by kind, and what it wrote per day this week", async () => {
    const agentId = await createTestAgent();
    const now = Date.now();
    const long = "x".repeat(7_000);
    const stored = await api("POST", "/memories", {
      body: {
        memories: [
          { type: "message", roomId: "r", userId: "u", text: long, createdAt: now },
          { type: "message", roomId: "r", userId: "u", text: "old", createdAt: now - 30 * DAY_MS },
          { type: "fact", userId: "u", text: "likes tea", createdAt: now },
        ].map((m) => ({ agentId, ...m })),
      },
    });
    expect(stored.status).toBe(201);
    await createD1SpendLedger(openDb(env.DB)).record({
      id: "t1",
      agentId,
      kind: "turn",
      roomId: "r",
      userId: "u",
      guildId: null,
      source: "rest",
      model: "m",
      inputTokens: 1,
      outputTokens: 1,
      modelCalls: 1,
      tools: [],
      error: null,
      lateEmbeddings: 0,
      at: now,
    });

    const storage = await storageOf(agentId);
    const kind = (name: string) => storage.kinds.find((k) => k.kind === name);
    expect(kind("message")).toMatchObject({ rows: 2 });
    // The long message's text, twice (the row and the full-text index), written this week.
    expect(kind("message")?.bytes).toBeGreaterThan(14_000);
    expect(kind("message")?.bytesPerDay).toBeGreaterThan(2_000);
    expect(kind("fact")).toMatchObject({ rows: 1 });
    // The local index keeps a vector per embedded memory.
    expect(kind("vector")?.rows).toBe(3);
    expect(kind("usage_record")).toMatchObject({ rows: 1 });
    // The largest first; the total adds them up.
    expect(storage.kinds[0]?.kind).toBe("message");
    expect(storage.total.rows).toBe(storage.kinds.reduce((sum, k) => sum + k.rows, 0));
    expect(storage.total.bytes).toBe(storage.kinds.reduce((sum, k) => sum + k.bytes, 0));
    expect(storage.databases).toEqual([
      {
        name: "DB",
        bytes: expect.any(Number),
        limitBytes: D1_MAX_DATABASE_BYTES,
        bytesPerDay: expect.toBeOneOf([null, expect.any(Number)]),
        daysLeft: expect.toBeOneOf([null, expect.any(Number)]),
      },
    ]);
  });

  it("reads the days left from the size samples: growth over the week, against 10 GB", async () => {
    const db = openDb(env.DB);
    const now = Date.now();
    const { bytes } = await databaseSize(db, now);
    expect(bytes).toBeGreaterThan(0);
    // Four days ago the database was 4 MB smaller: 1 MB a day.
    const then = now - 4 * DAY_MS;
    await env.DB.prepare(
      "INSERT OR REPLACE INTO database_size_daily (day, bytes, sampled_at) VALUES (?, ?, ?)",
    )
      .bind(new Date(then).toISOString().slice(0, 10), (bytes ?? 0) - 4_000_000, then)
      .run();
    const size = await databaseSize(db, now);
    expect(size.bytesPerDay).toBeGreaterThanOrEqual(999_000);
    expect(size.bytesPerDay).toBeLessThan(1_100_000);
    const expected = (D1_MAX_DATABASE_BYTES - (size.bytes ?? 0)) / (size.bytesPerDay ?? 1);
    expect(size.daysLeft).toBe(Math.floor(expected));

    const health = await json<{ storage: unknown }>(await api("GET", "/health", { token: null }));
    expect(health.storage).toEqual({
      databases: [
        {
          name: "DB",
          bytes: expect.any(Number),
          limitBytes: D1_MAX_DATABASE_BYTES,
          bytesPerDay: expect.any(Number),
          daysLeft: expect.any(Number),
        },
      ],
    });
    await env.DB.prepare("DELETE FROM database_size_daily").run();
  });

  it("is for whoever reads the whole agent: not a prefix token, not another agent's token", async () => {
    const agentId = await createTestAgent();
    const reader = await mintToken({ name: "r", scopes: ["agents:read"], agents: [agentId] });
    expect((await storageOf(agentId, reader.token)).agentId).toBe(agentId);
    const tenant = await mintToken({
      name: "acme",
      scopes: ["agents:read"],
      agents: [agentId],
      userPrefix: "acme:",
    });
    await expectForbidden(
      await api("GET", `/agents/${agentId}/storage`, { token: tenant.token }),
      "user prefix",
    );
    const other = await createTestAgent();
    const elsewhere = await mintToken({ name: "o", scopes: ["agents:read"], agents: [other] });
    await expectForbidden(
      await api("GET", `/agents/${agentId}/storage`, { token: elsewhere.token }),
      agentId,
    );
    expect((await api("GET", "/agents/nobody-here/storage")).status).toBe(404);
  });
});
