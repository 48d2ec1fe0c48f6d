import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import ada from "../../characters/ada.json";
import marlowe from "../../characters/marlowe.json";
import { api, json } from "../helpers/api.ts";
import { MIGRATIONS } from "../../src/db/migrations-bundle.ts";

const LATEST_MIGRATION = MIGRATIONS.at(-1)!.name;

interface Problem {
  error: {
    code: string;
    message: string;
    details?: { issues: { path: string; message: string }[] };
  };
}

describe("agents API", () => {
  it("creates an agent from an ElizaOS v1 character file", async () => {
    const response = await api("POST", "/agents", { body: { ...ada, id: "ada-v1" } });
    expect(response.status).toBe(201);
    expect(response.headers.get("location")).toBe("/agents/ada-v1");
    const body = await json<{
      id: string;
      character: { format: string; name: string; bio: string[] };
    }>(response);
    expect(body.id).toBe("ada-v1");
    expect(body.character.format).toBe("v1");
    expect(body.character.name).toBe(ada.name);
  });

  it("creates an agent from a legacy v0 character file and keeps its lore as memories", async () => {
    const response = await api("POST", "/agents", { body: { ...marlowe, id: "marlowe-v0" } });
    expect(response.status).toBe(201);
    const body = await json<{ character: { format: string; lore: string[] } }>(response);
    expect(body.character.format).toBe("v0");
    expect(body.character.lore).toEqual(marlowe.lore);
    const { results } = await env.DB.prepare(
      "SELECT content FROM memories WHERE agent_id = 'marlowe-v0' AND type = 'lore' ORDER BY id",
    ).all<{ content: string }>();
    expect(results).toHaveLength(marlowe.lore.length);
  });

  it("derives the id from the name when the file has none, and refuses a duplicate", async () => {
    const first = await api("POST", "/agents", {
      body: { name: "Zoë Quill", bio: "Writes things." },
    });
    expect(await json(first)).toMatchObject({ id: "zoe-quill" });
    const again = await api("POST", "/agents", { body: { name: "Zoë Quill", bio: "Another." } });
    expect(again.status).toBe(409);
    expect(await json<Problem>(again)).toMatchObject({ error: { code: "conflict" } });
  });

  it("rejects a broken character file, listing every failing path, and stores nothing", async () => {
    const response = await api("POST", "/agents", {
      body: {
        id: "broken",
        bio: 42,
        settings: { maxSteps: "six" },
        messageExamples: [[{ name: "u" }]],
      },
    });
    expect(response.status).toBe(400);
    const body = await json<Problem>(response);
    expect(body.error.code).toBe("validation");
    const paths = body.error.details!.issues.map((issue) => issue.path).sort();
    expect(paths).toEqual(
      expect.arrayContaining(["bio", "messageExamples.0.0.content", "name", "settings.maxSteps"]),
    );
    expect((await api("GET", "/agents/broken")).status).toBe(404);
  });

  it("never returns a character's secrets, and stores them encrypted", async () => {
    const response = await api("POST", "/agents", {
      body: {
        id: "with-secrets",
        name: "Keeper",
        bio: "Keeps secrets.",
        secrets: { WEATHER_API_KEY: "super-secret-value" },
      },
    });
    expect(response.status).toBe(201);
    const created = await response.text();
    const fetched = await (await api("GET", "/agents/with-secrets")).text();
    for (const text of [created, fetched]) {
      expect(text).not.toContain("super-secret-value");
      expect(text).toContain("WEATHER_API_KEY");
    }
    const row = await env.DB.prepare(
      "SELECT character, secrets FROM agents WHERE id = 'with-secrets'",
    ).first<{ character: string; secrets: string }>();
    expect(row!.character).not.toContain("super-secret-value");
    expect(row!.secrets).toMatch(/^v1\./);
    expect(row!.secrets).not.toContain("super-secret-value");
  });

  it("lists agents page by page", async () => {
    for (const id of ["list-a", "list-b", "list-c"]) {
      expect((await api("POST", "/agents", { body: { id, name: id, bio: "x" } })).status).toBe(201);
    }
    const first = await json<{ agents: { id: string }[]; nextCursor: string | null }>(
      await api("GET", "/agents?limit=2"),
    );
    expect(first.agents).toHaveLength(2);
    expect(first.nextCursor).toBe(first.agents[1]!.id);
    const second = await json<{ agents: { id: string }[] }>(
      await api("GET", `/agents?limit=2&after=${first.nextCursor}`),
    );
    expect(second.agents[0]!.id > first.nextCursor!).toBe(true);
  });

  it("replaces a character with PUT and refuses an id that does not match", async () => {
    await api("POST", "/agents", {
      body: { id: "mutable", name: "Before", bio: "x", lore: ["old lore"] },
    });
    const put = await api("PUT", "/agents/mutable", {
      body: { name: "After", bio: "y", lore: ["new lore", "more lore"] },
    });
    expect(put.status).toBe(200);
    expect(await json(put)).toMatchObject({ character: { name: "After" } });
    const lore = await env.DB.prepare(
      "SELECT count(*) AS n FROM memories WHERE agent_id = 'mutable' AND type = 'lore'",
    ).first<{ n: number }>();
    expect(lore!.n).toBe(2);
    const mismatch = await api("PUT", "/agents/mutable", {
      body: { id: "other", name: "X", bio: "z" },
    });
    expect(mismatch.status).toBe(400);
    expect((await api("PUT", "/agents/nobody", { body: { name: "X", bio: "z" } })).status).toBe(
      404,
    );
  });

  it("deletes an agent with its memories", async () => {
    await api("POST", "/agents", { body: { id: "doomed", name: "Doomed", bio: "x", lore: ["a"] } });
    expect((await api("DELETE", "/agents/doomed")).status).toBe(204);
    expect((await api("GET", "/agents/doomed")).status).toBe(404);
    const left = await env.DB.prepare(
      "SELECT count(*) AS n FROM memories WHERE agent_id = 'doomed'",
    ).first<{ n: number }>();
    expect(left!.n).toBe(0);
    expect((await api("DELETE", "/agents/doomed")).status).toBe(404);
  });
});

describe("request validation and errors", () => {
  it("answers 404 for an unknown agent", async () => {
    const response = await api("POST", "/agents/ghost/messages", {
      body: { userId: "u", text: "hi" },
    });
    expect(response.status).toBe(404);
    expect(await json<Problem>(response)).toMatchObject({
      error: { code: "not_found", message: 'no agent with id "ghost"' },
    });
  });

  it("rejects unknown fields, empty text and bad ids with the failing paths", async () => {
    await api("POST", "/agents", { body: { id: "strict", name: "Strict", bio: "x" } });
    const response = await api("POST", "/agents/strict/messages", {
      body: { userId: "bad id!", text: "  ", mood: "happy" },
    });
    expect(response.status).toBe(400);
    const paths = (await json<Problem>(response)).error.details!.issues.map((i) => i.path).sort();
    expect(paths).toEqual(["", "text", "userId"]);
  });

  it("rejects malformed JSON and a missing content type clearly", async () => {
    await api("POST", "/agents", { body: { id: "json-agent", name: "J", bio: "x" } });
    const malformed = await api("POST", "/agents/json-agent/messages", { body: "{not json" });
    expect(malformed.status).toBe(400);
    // Worded as every route words it (the Discord and Telegram webhooks too), not the router's way.
    expect((await json<Problem>(malformed)).error).toEqual({
      code: "validation",
      message: "invalid request body: not JSON",
    });
    const agentMalformed = await api("POST", "/agents", { body: "{not json" });
    expect((await json<Problem>(agentMalformed)).error.message).toBe(
      "invalid request body: not JSON",
    );
    const noType = await exports.default.fetch(
      new Request("https://agents.test/agents/json-agent/messages", {
        method: "POST",
        headers: { authorization: "Bearer test-admin-token-0123456789" },
        body: JSON.stringify({ userId: "u", text: "hi" }),
      }),
    );
    expect(noType.status).toBe(415);
    expect((await json<Problem>(noType)).error.message).toContain("content-type: application/json");
    const noUser = await api("POST", "/agents/json-agent/messages", { body: { text: "hi" } });
    expect(noUser.status).toBe(400);
    expect((await json<Problem>(noUser)).error.message).toBe(
      "invalid request body: userId: required",
    );
  });

  // Found by the fuzz test's requests (seed 202): a key the character schema does not know is
  // stored as written, and JSON.stringify overflowed the stack on it (500).
  it("refuses a character file nested more than 32 levels deep, even under an unknown key, storing nothing", async () => {
    const deep = `${'{"0":'.repeat(5_000)}1${"}".repeat(5_000)}`;
    const created = await api("POST", "/agents", {
      body: `{"id":"deep-junk","name":"Deep","bio":"x","junk":${deep}}`,
    });
    expect(created.status).toBe(400);
    const error = (await json<Problem>(created)).error;
    expect(error.code).toBe("validation");
    expect(error.details!.issues[0]!.path).toMatch(/^junk(\.0){31}$/);
    expect((await api("GET", "/agents/deep-junk")).status).toBe(404);
    await api("POST", "/agents", {
      body: {
        id: "shallow-junk",
        name: "Shallow",
        bio: "x",
        junk: { a: { b: [1, 2, { c: true }] } },
      },
    });
    const replaced = await api("PUT", "/agents/shallow-junk", {
      body: `{"name":"Deeper","bio":"x","junk":${deep}}`,
    });
    expect(replaced.status).toBe(400);
    expect(await json(await api("GET", "/agents/shallow-junk"))).toMatchObject({
      character: { name: "Shallow" },
    });
  });

  it("refuses bodies over the size limit with 413", async () => {
    const response = await api("POST", "/agents/any/messages", {
      body: { userId: "u", text: "x".repeat(70 * 1024) },
    });
    expect(response.status).toBe(413);
    expect((await json<Problem>(response)).error.code).toBe("payload_too_large");
  });

  it("rejects an Idempotency-Key that is not printable ASCII", async () => {
    await api("POST", "/agents", { body: { id: "keyed", name: "K", bio: "x" } });
    const response = await api("POST", "/agents/keyed/messages", {
      body: { userId: "u", text: "hi" },
      headers: { "idempotency-key": "a b" },
    });
    expect(response.status).toBe(400);
  });

  it("answers unknown routes with the error envelope", async () => {
    const response = await api("GET", "/nowhere");
    expect(response.status).toBe(404);
    expect(await json<Problem>(response)).toMatchObject({ error: { code: "not_found" } });
  });
});

describe("authentication", () => {
  it("requires the bearer token on the API", async () => {
    const missing = await api("GET", "/agents", { token: null });
    expect(missing.status).toBe(401);
    expect(await json<Problem>(missing)).toMatchObject({ error: { code: "unauthorized" } });
    const wrong = await api("GET", "/agents", { token: "not-the-token" });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain("test-admin-token");
  });

  it("leaves /health, /openapi.json and /docs public", async () => {
    const health = await api("GET", "/health", { token: null });
    expect(health.status).toBe(200);
    const healthBody = await json(health);
    expect(healthBody).toEqual({
      status: "ok",
      model: {
        backend: "openai",
        primary: "test-primary",
        fallbacks: ["test-fallback"],
        small: "test-small",
        // Turns whose model failed today, and the last one's cause: model names and causes only.
        failedToday: expect.any(Number),
        lastFailure: expect.toBeOneOf([null, expect.any(Object)]),
      },
      database: "ok",
      schema: { version: LATEST_MIGRATION, latest: LATEST_MIGRATION, pending: [], error: null },
      embedding: { backend: "local", id: "local:hash-v1", dimensions: 384 },
      vectors: { backend: "local", dimensions: expect.toBeOneOf([null, 384]), status: "ok" },
      // This project configures every surface (vitest.config.ts); none is off.
      surfaces: {
        discord: { state: "on", problem: null },
        telegram: { state: "on", problem: null },
        slack: { state: "on", problem: null },
        instagram: { state: "on", problem: null },
      },
      evaluators: {
        failedToday: expect.any(Number),
        last: expect.toBeOneOf([null, expect.any(Object)]),
      },
      // No OTLP endpoint in this project (test/telemetry/ has one).
      traces: null,
      // Filter patterns past the cost bound, kept but not applied: counts only (this is public).
      filters: { suspendedPatterns: { discord: 0, telegram: 0, slack: 0 } },
      // D1's size and days left to its ceiling (the rate needs the upkeep's samples: none here).
      storage: {
        databases: [
          {
            name: "DB",
            bytes: expect.any(Number),
            limitBytes: 10_000_000_000,
            bytesPerDay: null,
            daysLeft: null,
          },
        ],
      },
    });
    expect(JSON.stringify(healthBody)).not.toContain("sk-test");
    const spec = await json<{
      paths: Record<string, unknown>;
      components: { securitySchemes: unknown };
    }>(await api("GET", "/openapi.json", { token: null }));
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining([
        "/health",
        "/agents",
        "/agents/{agentId}",
        "/agents/{agentId}/messages",
        "/agents/{agentId}/rooms/{roomId}/messages",
        "/agents/{agentId}/knowledge",
        "/memories",
        "/memories/similar",
        "/memories/stats",
      ]),
    );
    expect(spec.components.securitySchemes).toMatchObject({
      bearerAuth: { type: "http", scheme: "bearer" },
    });
    const docs = await api("GET", "/docs", { token: null });
    expect(docs.status).toBe(200);
    const page = await docs.text();
    expect(page).toContain("/openapi.json");
    // The viewer loads from this worker's static assets, never from a CDN.
    expect(page).toContain('src="/vendor/swagger-ui-dist/swagger-ui-bundle.js"');
    expect(page).not.toMatch(/https?:\/\//);
  });
});
