// API tokens and scopes. The matrix is generated from /openapi.json: every operation that declares
// a scope is called without a token (401), with a garbage token (401), with a token holding every
// other scope (403), with the right scope but limited to another agent (403, agent-scoped routes),
// and with the right scope (its success status). An operation missing from REQUESTS fails the
// test, so a new route cannot ship without being in the matrix.
import { env } from "cloudflare:workers";
import { describe, expect, inject, it, vi } from "vitest";
import { TOKEN_CACHE_MS } from "../../src/http/known-tokens.ts";
import { stores } from "../../src/db/stores/index.ts";
import type { OpenAIStandIn } from "../stand-ins/openai-stand-in.ts";
import { ADMIN_TOKEN, api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";
import { planReply, scriptTask, specReply, standInResponder } from "../helpers/task-script.ts";
import { connectMcp, type McpClient, mcpRefusal, served } from "../helpers/mcp-client.ts";
import { MCP_TOOL_ACTIONS } from "../../src/http/routes/mcp-server/agent-server.ts";
import { MCP_OAUTH_SCOPES } from "../../src/http/routes/mcp-server/oauth/authorization-server.ts";
import { authorizeGrant } from "../helpers/mcp-oauth.ts";

const ALL_SCOPES = [
  "admin",
  "agents:read",
  "agents:write",
  "messages:write",
  "memories:read",
  "memories:write",
  "media:write",
  "tools:write",
];

interface Problem {
  error: { code: string; message: string };
}

interface MatrixRequest {
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The agent the request acts for, when it is agent-scoped. */
  agentId?: string;
  status: number;
}

/** One valid request per operation; each builds its own fixtures (with the admin token). */
const REQUESTS: Record<string, () => Promise<MatrixRequest>> = {
  "POST /agents": async () => {
    const id = `matrix-new-${crypto.randomUUID().slice(0, 8)}`;
    return {
      path: "/agents",
      body: { id, name: "Matrix", bio: ["Made by the auth matrix."] },
      agentId: id,
      status: 201,
    };
  },
  "GET /agents": async () => ({ path: "/agents", status: 200 }),
  "GET /agents/{agentId}": async () => withAgent((id) => ({ path: `/agents/${id}`, status: 200 })),
  "PUT /agents/{agentId}": async () =>
    withAgent((id) => ({
      path: `/agents/${id}`,
      body: { name: "Testa", bio: ["Replaced."] },
      status: 200,
    })),
  "DELETE /agents/{agentId}": async () =>
    withAgent((id) => ({ path: `/agents/${id}`, status: 204 })),
  "POST /agents/{agentId}/messages": async () =>
    withAgent((id) => ({
      path: `/agents/${id}/messages`,
      body: { userId: "u1", text: "hi" },
      status: 200,
    })),
  "GET /agents/{agentId}/rooms/{roomId}/messages": async () =>
    withAgent((id) => ({ path: `/agents/${id}/rooms/r1/messages`, status: 200 })),
  "POST /agents/{agentId}/knowledge": async () =>
    withAgent((id) => ({
      path: `/agents/${id}/knowledge`,
      body: { title: "Doc", text: "The tide comes in twice a day." },
      status: 201,
    })),
  "DELETE /agents/{agentId}/knowledge/{documentId}": async () => {
    const id = await createTestAgent();
    await admin(
      "POST",
      `/agents/${id}/knowledge`,
      { documentId: "doc-1", text: "Some text to forget." },
      201,
    );
    return { path: `/agents/${id}/knowledge/doc-1`, agentId: id, status: 204 };
  },
  "POST /memories": async () =>
    withAgent((id) => ({
      path: "/memories",
      body: { memories: [{ agentId: id, type: "fact", userId: "u1", text: "Likes tea." }] },
      status: 201,
    })),
  "GET /memories": async () =>
    withAgent((id) => ({ path: `/memories?agentId=${id}`, status: 200 })),
  "POST /memories/similar": async () =>
    withAgent((id) => ({
      path: "/memories/similar",
      body: { agentId: id, query: "tea" },
      status: 200,
    })),
  "DELETE /memories": async () =>
    withAgent((id) => ({ path: `/memories?agentId=${id}&userId=u1`, status: 200 })),
  "GET /memories/stats": async () =>
    withAgent((id) => ({ path: `/memories/stats?agentId=${id}`, status: 200 })),
  "POST /memories/embed": async () =>
    withAgent((id) => ({ path: "/memories/embed", body: { agentId: id }, status: 200 })),
  "GET /agents/{agentId}/mcp/grants": async () =>
    withAgent((id) => ({ path: `/agents/${id}/mcp/grants`, status: 200 })),
  "DELETE /agents/{agentId}/mcp/grants/{grantId}": async () => {
    const id = await createTestAgent();
    await authorizeGrant(id, ADMIN_TOKEN);
    const { grants } = await admin("GET", `/agents/${id}/mcp/grants`, undefined, 200);
    const [grant] = grants as Array<{ id: string }>;
    return { path: `/agents/${id}/mcp/grants/${grant?.id}`, agentId: id, status: 204 };
  },
  "GET /agents/{agentId}/tools": async () =>
    withAgent((id) => ({ path: `/agents/${id}/tools`, status: 200 })),
  "POST /agents/{agentId}/tools": async () =>
    // Nothing listens on the discard port: the server is added and reported down.
    withAgent((id) => ({
      path: `/agents/${id}/tools`,
      body: { name: "nowhere", url: "http://127.0.0.1:9/mcp" },
      status: 201,
    })),
  "DELETE /agents/{agentId}/tools/{name}": async () => {
    const id = await createTestAgent();
    await admin(
      "POST",
      `/agents/${id}/tools`,
      { name: "gone", url: "http://127.0.0.1:9/mcp" },
      201,
    );
    return { path: `/agents/${id}/tools/gone`, agentId: id, status: 204 };
  },
  "POST /agents/{agentId}/media": async () =>
    withAgent((id) => ({ path: `/agents/${id}/media`, body: photoForm(), status: 202 })),
  "GET /agents/{agentId}/media/{postId}": async () => {
    const id = await createTestAgent();
    const stored = await api("POST", `/agents/${id}/media`, { body: photoForm() });
    const { postId } = await json<{ postId: string }>(stored);
    return { path: `/agents/${id}/media/${postId}`, agentId: id, status: 200 };
  },
  "POST /agents/{agentId}/tasks": async () =>
    withAgent((id) => ({
      path: `/agents/${id}/tasks`,
      body: { goal: "Check the time" },
      status: 202,
    })),
  "GET /agents/{agentId}/tasks": async () =>
    withTask((id) => ({ path: `/agents/${id}/tasks?limit=5`, status: 200 })),
  "GET /agents/{agentId}/tasks/{taskId}": async () =>
    withTask((id, taskId) => ({ path: `/agents/${id}/tasks/${taskId}`, status: 200 })),
  "DELETE /agents/{agentId}/tasks/{taskId}": async () =>
    withTask((id, taskId) => ({ path: `/agents/${id}/tasks/${taskId}`, status: 200 })),
  "POST /agents/{agentId}/tasks/{taskId}/approval": async () => {
    // A task paused at a tool that needs approval: the planner plans one step, whose agent calls it.
    const id = await createTestAgent({ settings: { toolApproval: ["current_time"] } });
    standIn.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Check the time"], ["The time is known"])],
          act: [{ toolCalls: [{ name: "current_time", arguments: {} }] }],
        }),
      ),
    );
    const { taskId } = await admin("POST", `/agents/${id}/tasks`, { goal: "Check the time" }, 202);
    await vi.waitFor(
      async () =>
        expect(
          (await admin("GET", `/agents/${id}/tasks/${String(taskId)}`, undefined, 200)).status,
        ).toBe("awaiting_approval"),
      { timeout: 15_000, interval: 50 },
    );
    standIn.reset();
    return {
      path: `/agents/${id}/tasks/${String(taskId)}/approval`,
      body: { approve: false },
      agentId: id,
      status: 200,
    };
  },
  "POST /agents/{agentId}/tasks/{taskId}/input": async () => {
    // A task whose compiled spec lacks an input it cannot do without waits as `needs_input`.
    const id = await createTestAgent();
    const goal = "Check the time somewhere";
    standIn.respondWith(
      standInResponder(
        scriptTask({
          spec: [
            specReply(goal, {
              missing: [{ input: "place", question: "Where?", required: true }],
            }),
          ],
        }),
      ),
    );
    const { taskId } = await admin("POST", `/agents/${id}/tasks`, { goal }, 202);
    await vi.waitFor(
      async () =>
        expect(
          (await admin("GET", `/agents/${id}/tasks/${String(taskId)}`, undefined, 200)).status,
        ).toBe("needs_input"),
      { timeout: 15_000, interval: 50 },
    );
    standIn.reset();
    return {
      path: `/agents/${id}/tasks/${String(taskId)}/input`,
      body: { text: "Paris" },
      agentId: id,
      status: 200,
    };
  },
  "GET /agents/{agentId}/tasks/{taskId}/events": async () =>
    withTask((id, taskId) => ({ path: `/agents/${id}/tasks/${taskId}/events`, status: 200 })),
  "POST /agents/{agentId}/schedules": async () =>
    withAgent((id) => ({
      path: `/agents/${id}/schedules`,
      body: { goal: "Weekly check", cron: "0 9 * * 1" },
      status: 201,
    })),
  "GET /agents/{agentId}/schedules": async () =>
    withAgent((id) => ({ path: `/agents/${id}/schedules`, status: 200 })),
  "DELETE /agents/{agentId}/schedules/{scheduleId}": async () => {
    const id = await createTestAgent();
    const { scheduleId } = await admin(
      "POST",
      `/agents/${id}/schedules`,
      { goal: "Weekly check", cron: "0 9 * * 1" },
      201,
    );
    return { path: `/agents/${id}/schedules/${String(scheduleId)}`, agentId: id, status: 204 };
  },
  "GET /agents/{agentId}/skills": async () =>
    withAgent((id) => ({ path: `/agents/${id}/skills`, status: 200 })),
  "GET /agents/{agentId}/usage": async () =>
    withAgent((id) => ({ path: `/agents/${id}/usage?by=user`, status: 200 })),
  "GET /agents/{agentId}/storage": async () =>
    withAgent((id) => ({ path: `/agents/${id}/storage`, status: 200 })),
  // This project binds no memory database: the route answers that the agent already lives in DB.
  "POST /agents/{agentId}/move": async () =>
    withAgent((id) => ({ path: `/agents/${id}/move`, body: { to: "DB" }, status: 409 })),
  "GET /agents/{agentId}/move": async () =>
    withAgent((id) => ({ path: `/agents/${id}/move`, status: 404 })),
  "DELETE /agents/{agentId}/move": async () =>
    withAgent((id) => ({ path: `/agents/${id}/move`, status: 404 })),
  "GET /agents/{agentId}/turns/{turnId}": async () => {
    // A replied turn, kept for the inspector after the reply.
    const id = await createTestAgent();
    const { turnId } = await admin(
      "POST",
      `/agents/${id}/messages`,
      { userId: "u1", text: "hi" },
      200,
    );
    const path = `/agents/${id}/turns/${String(turnId)}`;
    await vi.waitFor(async () => expect((await api("GET", path)).status).toBe(200), {
      timeout: 5_000,
      interval: 50,
    });
    return { path, agentId: id, status: 200 };
  },
  "POST /agents/{agentId}/skills": async () =>
    withAgent((id) => ({ path: `/agents/${id}/skills`, body: SKILL, status: 201 })),
  "GET /agents/{agentId}/skills/{name}": async () => {
    const id = await createTestAgent({ settings: { skills: [SKILL] } });
    return { path: `/agents/${id}/skills/${SKILL.name}`, agentId: id, status: 200 };
  },
  "DELETE /agents/{agentId}/skills/{name}": async () => {
    const id = await createTestAgent();
    await admin("POST", `/agents/${id}/skills`, SKILL, 201);
    return { path: `/agents/${id}/skills/${SKILL.name}`, agentId: id, status: 204 };
  },
  "GET /agents/{agentId}/proposals": async () =>
    withAgent((id) => ({ path: `/agents/${id}/proposals`, status: 200 })),
  "POST /agents/{agentId}/proposals/{proposalId}": async () => {
    // A skill the agent proposed in a chat turn: deciding it needs agents:write.
    const id = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    standIn.script(
      { model: "test-primary", toolCalls: [{ name: "save_skill", arguments: SKILL }] },
      { model: "test-primary", text: "Proposed." },
    );
    await admin("POST", `/agents/${id}/messages`, { userId: "u1", text: "keep it" }, 200);
    const listed = await admin("GET", `/agents/${id}/proposals`, undefined, 200);
    const [proposal] = listed.proposals as Array<{ id: string }>;
    return {
      path: `/agents/${id}/proposals/${proposal!.id}`,
      body: { approve: false },
      agentId: id,
      status: 200,
    };
  },
  "GET /v1/models": async () => ({ path: "/v1/models", status: 200 }),
  "POST /v1/chat/completions": async () =>
    withAgent((id) => ({
      path: "/v1/chat/completions",
      body: { model: id, messages: [{ role: "user", content: "hi" }] },
      status: 200,
    })),
  "POST /plugins/web/read": async () => ({
    path: "/plugins/web/read",
    body: { url: `${inject("webPeers").baseUrl}/notes.txt` },
    status: 200,
  }),
  "GET /clients/{clientId}/config": async () => ({ path: "/clients/discord/config", status: 200 }),
  "POST /clients/{clientId}/config": async () => ({
    path: "/clients/discord/config",
    body: { allowedChannels: [] },
    status: 200,
  }),
  "GET /clients/telegram/config": async () => ({ path: "/clients/telegram/config", status: 200 }),
  "POST /clients/telegram/config": async () => ({
    path: "/clients/telegram/config",
    body: { allowedChats: [] },
    status: 200,
  }),
  "GET /clients/slack/config": async () => ({ path: "/clients/slack/config", status: 200 }),
  "POST /clients/slack/config": async () => ({
    path: "/clients/slack/config",
    body: { allowedChannels: [] },
    status: 200,
  }),
  "POST /auth/tokens": async () => ({
    path: "/auth/tokens",
    body: { name: "minted-in-matrix", scopes: ["agents:read"] },
    status: 201,
  }),
  "GET /auth/tokens": async () => ({ path: "/auth/tokens", status: 200 }),
  "DELETE /auth/tokens/{tokenId}": async () => {
    const minted = await mint({ name: "to-revoke", scopes: ["agents:read"] });
    return { path: `/auth/tokens/${minted.id}`, status: 204 };
  },
};

const SKILL = {
  name: "tidy-desk",
  description: "How to tidy the desk.",
  body: "1. Clear it.\n2. Wipe it.",
};

/** A fresh multipart body each call (a body is read once): one square JPEG, stored, not published. */
function photoForm(): FormData {
  const jpeg = new Uint8Array([
    0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x04, 0x38, 0x04, 0x38, 0x03, 0x01, 0x22, 0x00, 0x02,
    0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11,
    0x00, 0x3f, 0x00, 0x12, 0x34, 0xff, 0xd9,
  ]);
  const form = new FormData();
  form.append("file", new File([jpeg], "square.jpg"));
  form.append("publish", "false");
  return form;
}

async function withAgent(
  build: (id: string) => Omit<MatrixRequest, "agentId">,
): Promise<MatrixRequest> {
  const id = await createTestAgent();
  return { ...build(id), agentId: id };
}

/** An agent with a task (it fails fast: the stand-in's default answer is not a plan). */
async function withTask(
  build: (id: string, taskId: string) => Omit<MatrixRequest, "agentId">,
): Promise<MatrixRequest> {
  const id = await createTestAgent();
  const { taskId } = await admin("POST", `/agents/${id}/tasks`, { goal: "Check the time" }, 202);
  return { ...build(id, String(taskId)), agentId: id };
}

async function admin(
  method: string,
  path: string,
  body: unknown,
  status: number,
): Promise<Record<string, unknown>> {
  const response = await api(method, path, { body });
  if (response.status !== status)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return json(response);
}

async function mint(body: Record<string, unknown>): Promise<{ id: string; token: string }> {
  return (await admin("POST", "/auth/tokens", body, 201)) as { id: string; token: string };
}

interface Operation {
  key: string;
  method: string;
  scope: string;
  /** Every scope that admits it (a route may accept either of two, e.g. GET /v1/models). */
  scopes: string[];
}

async function specOperations(): Promise<Operation[]> {
  const spec = await json<{
    paths: Record<string, Record<string, { security?: Array<Record<string, string[]>> }>>;
  }>(await api("GET", "/openapi.json", { token: null }));
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const scopes = (operation.security ?? []).flatMap((rule) => rule.bearerAuth ?? []);
      const scope = scopes[0];
      if (scope)
        operations.push({
          key: `${method.toUpperCase()} ${path}`,
          method: method.toUpperCase(),
          scope,
          scopes,
        });
    }
  }
  return operations;
}

async function call(
  op: Operation,
  request: MatrixRequest,
  token: string | null,
): Promise<Response> {
  return api(op.method, request.path, { body: request.body, headers: request.headers, token });
}

let standIn: OpenAIStandIn;

describe("API tokens and scopes", () => {
  standIn = useModelStandIn();

  it("leaves only the documented routes open, and declares exactly one scope on every other one", async () => {
    const spec = await json<{ paths: Record<string, Record<string, { security?: unknown }>> }>(
      await api("GET", "/openapi.json", { token: null }),
    );
    const open = Object.entries(spec.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) => op.security === undefined)
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(open.sort()).toEqual([
      // OAuth for MCP hosts (src/http/routes/mcp-server/oauth/), which come without a token:
      // discovery metadata (RFC 9728, RFC 8414) is public by definition; the consent page is
      // public, and allowing on it takes an API token that may manage the agent, in the form;
      // registration (RFC 7591) gets a client nothing until a consent; the token endpoint is
      // authenticated by the code and its PKCE verifier, or the refresh token.
      "GET /.well-known/oauth-authorization-server/agents/{agentId}",
      "GET /.well-known/oauth-protected-resource/agents/{agentId}/mcp",
      "GET /agents/{agentId}/oauth/authorize",
      "GET /health",
      "GET /media/{key}",
      "GET /oauth/callback",
      // The worker's OAuth Client ID Metadata Document: public by design (its URL is the client_id).
      "GET /oauth/client-metadata.json",
      "POST /agents/{agentId}/oauth/authorize",
      "POST /agents/{agentId}/oauth/register",
      "POST /agents/{agentId}/oauth/token",
      "POST /discord/interactions",
      // Authenticated by Slack's request signature (SLACK_SIGNING_SECRET), not a bearer token.
      "POST /slack/commands",
      "POST /slack/events",
      "POST /slack/interactions",
      // Authenticated by setWebhook's secret token header, not a bearer token.
      "POST /telegram/webhook",
    ]);
    const operations = await specOperations();
    expect(operations.map((op) => op.key).sort()).toEqual(Object.keys(REQUESTS).sort());
    for (const op of operations) expect(ALL_SCOPES).toContain(op.scope);
  });

  it("refuses every protected route without a token, with the wrong scope, or for another agent, and serves the right scope", async () => {
    const operations = await specOperations();
    const other = await createTestAgent();
    let checked = 0;
    for (const op of operations) {
      const request = await REQUESTS[op.key]!();
      const where = `${op.key}`;

      const anonymous = await call(op, request, null);
      expect(anonymous.status, where).toBe(401);
      expect((await json<Problem>(anonymous)).error.code, where).toBe("unauthorized");
      expect((await call(op, request, "ea_not-a-real-token")).status, where).toBe(401);

      const otherScopes = ALL_SCOPES.filter(
        (scope) => !op.scopes.includes(scope) && scope !== "admin",
      );
      const wrong = await mint({ name: "wrong-scope", scopes: otherScopes });
      const refused = await call(op, request, wrong.token);
      expect(refused.status, where).toBe(403);
      expect((await json<Problem>(refused)).error.message, where).toContain(op.scope);

      if (request.agentId && op.scope !== "admin") {
        const elsewhere = await mint({ name: "other-agent", scopes: [op.scope], agents: [other] });
        const outside = await call(op, request, elsewhere.token);
        expect([403, 404], where).toContain(outside.status);
      }

      const right =
        op.scope === "admin"
          ? await mint({ name: "right", scopes: ["admin"] })
          : await mint({
              name: "right",
              scopes: [op.scope],
              ...(request.agentId ? { agents: [request.agentId] } : {}),
            });
      const served = await call(op, request, right.token);
      expect(
        served.status,
        `${where}: ${served.status === request.status ? "" : await served.clone().text()}`,
      ).toBe(request.status);
      checked += 1;
    }
    expect(checked).toBe(Object.keys(REQUESTS).length);
  });

  it("shows a minted secret once, lists tokens without it, and revokes and expires them", async () => {
    const minted = await mint({ name: "reader", scopes: ["agents:read"], expiresInSeconds: 3600 });
    expect(minted.token).toMatch(/^ea_[A-Za-z0-9_-]{43}$/);
    expect((await api("GET", "/agents", { token: minted.token })).status).toBe(200);

    const listing = await (await api("GET", "/auth/tokens")).text();
    expect(listing).toContain(minted.id);
    expect(listing).not.toContain(minted.token);

    expect((await api("DELETE", `/auth/tokens/${minted.id}`)).status).toBe(204);
    const revoked = await api("GET", "/agents", { token: minted.token });
    expect(revoked.status).toBe(401);
    expect((await json<Problem>(revoked)).error.message).toContain("revoked");
    expect((await api("DELETE", "/auth/tokens/tok_0000000000000000")).status).toBe(404);
  });

  it("lets an isolate that did not serve the revocation accept a cached token for TOKEN_CACHE_MS, then refuses it", async () => {
    const minted = await mint({ name: "cached", scopes: ["agents:read"] });
    expect((await api("GET", "/agents", { token: minted.token })).status).toBe(200);
    // Revoked in D1 behind this isolate's back, as another isolate's DELETE would.
    expect(await stores(env).tokens.revoke(minted.id, Date.now())).toBe(true);
    expect((await api("GET", "/agents", { token: minted.token })).status).toBe(200);
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + TOKEN_CACHE_MS + 1;
      const revoked = await api("GET", "/agents", { token: minted.token });
      expect(revoked.status).toBe(401);
      expect((await json<Problem>(revoked)).error.message).toContain("revoked");
    } finally {
      Date.now = realNow;
    }
  });

  it("refuses an expired token", async () => {
    const minted = await mint({ name: "short", scopes: ["agents:read"], expiresInSeconds: 60 });
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + 61_000;
      const expired = await api("GET", "/agents", { token: minted.token });
      expect(expired.status).toBe(401);
      expect((await json<Problem>(expired)).error.message).toContain("expired");
    } finally {
      Date.now = realNow;
    }
  });

  it("shows a token limited to agents only those agents, and lets it create only those", async () => {
    const mine = await createTestAgent();
    await createTestAgent();
    const limited = await mint({
      name: "limited",
      scopes: ["agents:read", "agents:write"],
      agents: [mine, "not-yet-made"],
    });
    const listed = await json<{ agents: Array<{ id: string }> }>(
      await api("GET", "/agents?limit=100", { token: limited.token }),
    );
    expect(listed.agents.map((agent) => agent.id)).toEqual([mine]);

    const stranger = await api("POST", "/agents", {
      token: limited.token,
      body: { id: "someone-else", name: "X", bio: ["x"] },
    });
    expect(stranger.status).toBe(403);
    expect((await api("GET", "/agents/someone-else")).status).toBe(404);
    expect(
      (
        await api("POST", "/agents", {
          token: limited.token,
          body: { id: "not-yet-made", name: "Y", bio: ["y"] },
        })
      ).status,
    ).toBe(201);
  });

  it("rejects malformed token requests with the reason and never limits an admin token", async () => {
    const bad = await api("POST", "/auth/tokens", { body: { name: "x", scopes: ["root"] } });
    expect(bad.status).toBe(400);
    const unknownField = await api("POST", "/auth/tokens", {
      body: { name: "x", scopes: ["agents:read"], owner: "me" },
    });
    expect(unknownField.status).toBe(400);
    const limitedAdmin = await api("POST", "/auth/tokens", {
      body: { name: "x", scopes: ["admin"], agents: ["a"] },
    });
    expect(limitedAdmin.status).toBe(400);
    expect((await json<Problem>(limitedAdmin)).error.message).toContain("admin");
    const before = await json<{ tokens: unknown[] }>(await api("GET", "/auth/tokens"));
    expect((await api("POST", "/auth/tokens", { body: "{not json" })).status).toBe(400);
    const after = await json<{ tokens: unknown[] }>(await api("GET", "/auth/tokens"));
    expect(after.tokens.length).toBe(before.tokens.length);
  });

  it("does not echo a presented token in its error", async () => {
    const secret = "ea_this-is-a-secret-that-must-not-be-echoed";
    const response = await api("GET", "/agents", { token: secret });
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain("this-is-a-secret");
  });
});

/**
 * The MCP server (/agents/:agentId/mcp), whose operations are JSON-RPC and so not in /openapi.json:
 * a row per tool and the character resource, with its scope, whether a client sees it listed, and
 * one valid use. A tool of the server missing here fails the test.
 */
interface McpRow {
  scope: string;
  listed: (client: McpClient) => Promise<boolean>;
  use: (client: McpClient, fixture: { agentId: string; taskId: string }) => Promise<boolean>;
}

const mcpTool = (
  scope: string,
  name: string,
  args: (fixture: { agentId: string; taskId: string }) => Record<string, unknown>,
): McpRow => ({
  scope,
  listed: async (client) => (await client.listTools()).tools.some((tool) => tool.name === name),
  use: (client, fixture) => served(client.callTool({ name, arguments: args(fixture) })),
});

const MCP_ROWS: Record<string, McpRow> = {
  "tool chat": mcpTool("messages:write", "chat", () => ({ message: "hi", userId: "u1" })),
  "tool search_memories": mcpTool("memories:read", "search_memories", () => ({ query: "tea" })),
  "tool start_task": mcpTool("messages:write", "start_task", () => ({ goal: "Check the time" })),
  "tool get_task": mcpTool("agents:read", "get_task", ({ taskId }) => ({ taskId })),
  "resource character": {
    scope: "agents:read",
    listed: async (client) => (await client.listResources()).resources.length === 1,
    use: (client, { agentId }) =>
      client.readResource({ uri: `agent://${agentId}/character` }).then(
        () => true,
        () => false,
      ),
  },
};

// The model stand-in installed above answers the chat and task rows.
describe("API tokens and scopes: the MCP server", () => {
  it("refuses every MCP tool without a token, with the wrong scope, or for another agent, and serves the right scope", async () => {
    expect(
      Object.keys(MCP_ROWS)
        .filter((row) => row.startsWith("tool "))
        .map((row) => row.slice("tool ".length))
        .sort(),
    ).toEqual(Object.keys(MCP_TOOL_ACTIONS).sort());
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    const { taskId } = await admin("POST", `/agents/${agentId}/tasks`, { goal: "Check" }, 202);
    const fixture = { agentId, taskId: String(taskId) };
    expect(await mcpRefusal(agentId, null)).toBe(401);
    expect(await mcpRefusal(agentId, "ea_not-a-real-token")).toBe(401);
    const none = await mint({ name: "no-mcp-scope", scopes: ["agents:write", "tools:write"] });
    expect(await mcpRefusal(agentId, none.token)).toBe(403);
    for (const [where, row] of Object.entries(MCP_ROWS)) {
      const otherScopes = ALL_SCOPES.filter((scope) => scope !== row.scope && scope !== "admin");
      const wrong = await connectMcp(
        agentId,
        (await mint({ name: "wrong", scopes: otherScopes })).token,
      );
      expect(await row.listed(wrong), where).toBe(false);
      expect(await row.use(wrong, fixture), where).toBe(false);

      const elsewhere = await mint({ name: "other-agent", scopes: [row.scope], agents: [other] });
      expect(await mcpRefusal(agentId, elsewhere.token), where).toBe(403);

      const right = await mint({ name: "right", scopes: [row.scope], agents: [agentId] });
      const client = await connectMcp(agentId, right.token);
      expect(await row.listed(client), where).toBe(true);
      expect(await row.use(client, fixture), where).toBe(true);
    }
  });

  // The same rows for OAuth access tokens (src/http/routes/mcp-server/oauth/), each granted by
  // the admin token for the scopes the host asked.
  it("holds OAuth grants to the same rows: only the granted scopes, on the granted agent only", async () => {
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    const { taskId } = await admin("POST", `/agents/${agentId}/tasks`, { goal: "Check" }, 202);
    const fixture = { agentId, taskId: String(taskId) };
    const grant = async (agent: string, scopes: readonly string[]) =>
      (await authorizeGrant(agent, ADMIN_TOKEN, scopes.join(" "))).tokens.access_token;
    for (const [where, row] of Object.entries(MCP_ROWS)) {
      const otherScopes = MCP_OAUTH_SCOPES.filter((scope) => scope !== row.scope);
      const wrong = await connectMcp(agentId, await grant(agentId, otherScopes));
      // A grant is shown the tools outside it, to step up from (calling one is a 403
      // insufficient_scope: oauth/step-up.ts); the resource only when it may read it.
      expect(await row.listed(wrong), where).toBe(where.startsWith("tool "));
      expect(await row.use(wrong, fixture), where).toBe(false);

      // Another agent's grant is not a token of this resource at all: 401, as RFC 6750 says.
      expect(await mcpRefusal(agentId, await grant(other, [row.scope])), where).toBe(401);

      const client = await connectMcp(agentId, await grant(agentId, [row.scope]));
      expect(await row.listed(client), where).toBe(true);
      expect(await row.use(client, fixture), where).toBe(true);
    }
  });
});
