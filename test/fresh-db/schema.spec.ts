// A deployed worker never runs against a database it does not know: on a D1 no migration was
// applied to, the first requests bring it up to the bundled migrations, each applied exactly once
// however many requests (and isolates, through the SchemaGate) arrive together; then an agent can
// be created and answer at once, and the shipped characters are there to talk to. A newer
// migration applies alone; a failing one rolls back whole and leaves the previous version in
// place, saying which one failed.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/db/migrations-bundle.ts";
import { applyPendingMigrations, MIGRATIONS_TABLE } from "../../src/db/schema-migrator.ts";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const LATEST = MIGRATIONS.at(-1)!.name;

async function appliedNames(): Promise<string[]> {
  return (
    await env.DB.prepare(`SELECT name FROM ${MIGRATIONS_TABLE} ORDER BY id`).all<{ name: string }>()
  ).results.map((row) => row.name);
}

describe("a fresh database", () => {
  it("gets every migration exactly once under 20 concurrent first requests, then serves a turn", async () => {
    const tables = await env.DB.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'agents'",
    ).all();
    expect(tables.results).toEqual([]);

    // Twenty requests through the worker, and twenty isolates' worth of calls to the gate itself.
    const gate = env.SCHEMA.getByName("schema");
    const [responses, answers] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => api("GET", "/health", { token: null }))),
      Promise.all(Array.from({ length: 20 }, () => gate.ensure())),
    ]);
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(await appliedNames()).toEqual(MIGRATIONS.map((m) => m.name));
    // One run applied them all; every other caller got that run's answer or found nothing to do.
    const applying = answers.filter((a) => a.applied.length > 0);
    expect(applying.every((a) => a.applied.length === MIGRATIONS.length)).toBe(true);
    expect(
      answers.every((a) => a.version === LATEST && a.pending.length === 0 && a.error === null),
    ).toBe(true);

    const health = await json<{ schema: unknown }>(await api("GET", "/health", { token: null }));
    expect(health.schema).toEqual({ version: LATEST, latest: LATEST, pending: [], error: null });

    // The first start seeded the shipped characters, with the knowledge files their entries name.
    const { agents } = await json<{ agents: { id: string }[] }>(await api("GET", "/agents"));
    expect(agents.map((agent) => agent.id).sort()).toEqual(["ada", "marlowe"]);
    const documents = await json<{ memories: { metadata: { documentId: string } }[] }>(
      await api("GET", "/memories?agentId=ada&type=document"),
    );
    expect(documents.memories.map((memory) => memory.metadata.documentId)).toContain(
      "file:knowledge:ada:how-i-remember.md",
    );

    const agentId = await createTestAgent();
    model.script({ text: "Hello from a database that set itself up." });
    const turn = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "dana", text: "hi" },
    });
    expect(turn.status).toBe(200);
    expect((await json<{ reply: { text: string } }>(turn)).reply.text).toBe(
      "Hello from a database that set itself up.",
    );

    // A second look finds nothing to do.
    expect(await applyPendingMigrations(env.DB, MIGRATIONS)).toMatchObject({
      applied: [],
      pending: [],
      version: LATEST,
      error: null,
    });
    // All nineteen migrations under forty callers, the seeding with Ada's knowledge, then a turn:
    // 22-25 s on the project's 2-core machines, too close to the 30 s default (a CI run took 30.0).
  }, 60_000);

  it("applies only a newer migration, and a failing one rolls back whole and leaves the version before it", async () => {
    await applyPendingMigrations(env.DB, MIGRATIONS);
    const newer = {
      name: "9998_newer.sql",
      queries: ["CREATE TABLE newer_thing (id INTEGER PRIMARY KEY)"],
    };
    const failing = {
      name: "9999_broken.sql",
      queries: [
        "CREATE TABLE half_made (id INTEGER PRIMARY KEY)",
        "INSERT INTO no_such_table VALUES (1)",
      ],
    };
    expect(await applyPendingMigrations(env.DB, [...MIGRATIONS, newer])).toMatchObject({
      applied: ["9998_newer.sql"],
      version: "9998_newer.sql",
      error: null,
    });

    const broken = await applyPendingMigrations(env.DB, [...MIGRATIONS, newer, failing]);
    expect(broken).toMatchObject({
      applied: [],
      version: "9998_newer.sql",
      latest: "9999_broken.sql",
      pending: ["9999_broken.sql"],
    });
    expect(broken.error).toMatchObject({
      migration: "9999_broken.sql",
      message: expect.stringContaining("no_such_table"),
    });
    const halfMade = await env.DB.prepare(
      "SELECT name FROM sqlite_master WHERE name = 'half_made'",
    ).all();
    expect(halfMade.results).toEqual([]);
    expect((await appliedNames()).at(-1)).toBe("9998_newer.sql");
  });
});
