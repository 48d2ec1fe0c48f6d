// Runs in the `limits` project (RATE_LIMIT_PER_USER=3/min): the MCP server's `chat` is held to the
// REST turn route's limits. Each HTTP request to /agents/:agentId/mcp draws from its token's
// bucket; a person's turns draw from one per-user bucket whether they come over REST or MCP; and
// the agent's daily model budget refuses an MCP turn as it refuses a REST one. An MCP host's OAuth
// grant is held to the same buckets as an API token.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { api, json, useModelStandIn } from "../helpers/api.ts";
import { connectMcp, textOf } from "../helpers/mcp-client.ts";
import { authorizeGrant } from "../helpers/mcp-oauth.ts";

const model = useModelStandIn();
let adminToken: string | undefined;
let made = 0;

/** An admin token of this file's own, clear of the project's 30/min bucket of ADMIN_TOKEN. */
async function admin(): Promise<string> {
  if (adminToken) return adminToken;
  const minted = await api("POST", "/auth/tokens", {
    body: { name: "mcp-limits", scopes: ["admin"], rateLimit: "1000/min" },
  });
  expect(minted.status).toBe(201);
  adminToken = (await json<{ token: string }>(minted)).token;
  return adminToken;
}

async function agent(settings: Record<string, unknown> = {}): Promise<string> {
  const id = `mcp-limits-${Date.now().toString(36)}-${++made}`;
  const response = await api("POST", "/agents", {
    token: await admin(),
    body: { id, name: "Limo", bio: ["x"], settings: { memory: { factsEvery: 1000 }, ...settings } },
  });
  expect(response.status).toBe(201);
  return id;
}

async function token(agentId: string, rateLimit = "1000/min"): Promise<string> {
  const minted = await api("POST", "/auth/tokens", {
    token: await admin(),
    body: { name: "mcp host", scopes: ["messages:write"], agents: [agentId], rateLimit },
  });
  expect(minted.status).toBe(201);
  return (await json<{ token: string }>(minted)).token;
}

async function say(client: Awaited<ReturnType<typeof connectMcp>>, userId: string) {
  return (await client.callTool({
    name: "chat",
    arguments: { message: "Tell me something.", userId },
  })) as CallToolResult;
}

describe("MCP server chat: the REST turn route's limits", () => {
  it("shares a person's per-user bucket with POST /agents/:agentId/messages", async () => {
    const agentId = await agent();
    const secret = await token(agentId);
    const client = await connectMcp(agentId, secret);
    model.respondWith(() => ({ text: "Something." }));
    expect((await say(client, "walker")).isError).toBeFalsy();
    expect((await say(client, "walker")).isError).toBeFalsy();
    const rest = await api("POST", `/agents/${agentId}/messages`, {
      token: secret,
      body: { userId: "walker", text: "And over REST?" },
    });
    expect(rest.status).toBe(200);
    const calls = model.calls.length;
    const refused = await say(client, "walker");
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^rate_limited: user "walker": rate limit reached; retry in/);
    expect(model.calls.length).toBe(calls);
    // Another person is not held back.
    expect((await say(client, "runner")).isError).toBeFalsy();
  });

  it("charges every HTTP request to the token's bucket", async () => {
    const agentId = await agent();
    // initialize, notifications/initialized, and the GET the client tries for a stream (405).
    const client = await connectMcp(agentId, await token(agentId, "3/min"));
    const error = await client.listTools().then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(429);
    expect(String(error)).toContain("this API token: rate limit reached");
  });

  it("holds an OAuth grant to a token's bucket (RATE_LIMIT_PER_TOKEN) and the per-user bucket", async () => {
    const agentId = await agent();
    const { tokens } = await authorizeGrant(agentId, await admin(), "messages:write");
    const client = await connectMcp(agentId, tokens.access_token);
    model.respondWith(() => ({ text: "Something." }));
    for (let turn = 0; turn < 3; turn++)
      expect((await say(client, "oauth-walker")).isError).toBeFalsy();
    const refused = await say(client, "oauth-walker");
    expect(textOf(refused)).toMatch(/^rate_limited: user "oauth-walker": rate limit reached/);
    // The project's 30/min per token: the grant's own bucket runs out within a few dozen requests.
    let error: unknown = null;
    for (let request = 0; request < 40 && !error; request++)
      error = await client.listTools().then(
        () => null,
        (thrown: unknown) => thrown,
      );
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(429);
    expect(String(error)).toContain("this API token: rate limit reached");
  });

  it("is refused once the agent has spent its daily model budget", async () => {
    const agentId = await agent({ dailyTokens: 500 });
    const client = await connectMcp(agentId, await token(agentId));
    model.script({ text: "ok", usage: { promptTokens: 499, completionTokens: 1 } });
    expect((await say(client, "payer-1")).isError).toBeFalsy();
    // Reading the history waits for the room's after-reply work, where the spend is counted.
    await api("GET", `/agents/${agentId}/rooms/user:payer-1/messages`, { token: await admin() });
    const calls = model.calls.length;
    const refused = await say(client, "payer-2");
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain("rate_limited: agent");
    expect(textOf(refused)).toContain(
      "has used its daily model budget (500 of 500 tokens today, UTC)",
    );
    expect(model.calls.length).toBe(calls);
  });
});
