// End to end (workerd): which MCP protocol versions the agent's client speaks, against servers
// built with the v2 SDK (test/peers/mcp-v2-peers.ts). The client is the v2 SDK's and negotiates
// (versionNegotiation "auto"): a server that also serves 2025 clients works, and so does a
// 2026-07-28-only (stateless) one (docs/mcp.md, "Protocol versions").
import { describe, expect, inject, it } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const peers = inject("mcpPeers");
const model = useModelStandIn();

interface ServerView {
  name: string;
  state: string;
  error?: string;
  tools: Array<{ name: string }>;
}

async function addServer(agentId: string, name: string, url: string): Promise<ServerView> {
  const response = await api("POST", `/agents/${agentId}/tools`, { body: { name, url } });
  expect(response.status).toBe(201);
  return json<ServerView>(response);
}

describe("MCP protocol versions (v2 SDK servers)", () => {
  it("lists and calls the tools of a server that serves 2026-07-28 and 2025-11-25 clients", async () => {
    const agentId = await createTestAgent();
    const view = await addServer(agentId, "both", peers.v2.bothUrl);
    expect(view).toMatchObject({ state: "ready", tools: [{ name: "both__echo" }] });
    model.script(
      { toolCalls: [{ name: "both__echo", arguments: { text: "hello" } }] },
      { text: "done" },
    );
    const reply = await api("POST", `/agents/${agentId}/messages`, {
      body: { text: "echo hello", userId: "u1", roomId: "r1" },
    });
    const body = await json<{ toolCalls: Array<{ name: string; ok: boolean }> }>(reply);
    expect(body.toolCalls).toMatchObject([{ name: "both__echo", ok: true }]);
  });

  it("lists and calls the tools of a 2026-07-28-only server (stateless)", async () => {
    const agentId = await createTestAgent();
    const view = await addServer(agentId, "modern", peers.v2.modernUrl);
    expect(view).toMatchObject({ state: "ready", tools: [{ name: "modern__echo" }] });
    expect(view.error).toBeUndefined();
    model.script(
      { toolCalls: [{ name: "modern__echo", arguments: { text: "hello" } }] },
      { text: "done" },
    );
    const reply = await api("POST", `/agents/${agentId}/messages`, {
      body: { text: "echo hello", userId: "u1", roomId: "r1" },
    });
    const body = await json<{ toolCalls: Array<{ name: string; ok: boolean }> }>(reply);
    expect(body.toolCalls).toMatchObject([{ name: "modern__echo", ok: true }]);
  });
});
