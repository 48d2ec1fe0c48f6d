// The agent's MCP server speaks both protocol eras (src/http/routes/mcp-server/mcp-route.ts), driven
// by the MCP SDK's v2 client (@modelcontextprotocol/client) as today's hosts connect: pinned to
// 2026-07-28 (stateless: no initialize, no session; version and client in every request's `_meta`
// and headers), negotiating (`auto`: a `server/discover` probe), and as a 2025-11-25 client
// (initialize first). test/surfaces/mcp-server.test.ts drives it with the 1.x client hosts still
// run. Each request the client sends is recorded to check what went over the wire.
import { exports } from "cloudflare:workers";
import {
  Client,
  type CallToolResult,
  StreamableHTTPClientTransport,
  type VersionNegotiationMode,
} from "@modelcontextprotocol/client";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/client/validators/cf-worker";
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, createTestAgent, mintToken, useModelStandIn } from "../helpers/api.ts";
import { MCP_BASE } from "../helpers/mcp-client.ts";

const model = useModelStandIn();

interface Sent {
  method: string;
  headers: Record<string, string>;
  body: { method?: string; params?: { _meta?: Record<string, unknown> } } | null;
}

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

async function connect(
  agentId: string,
  mode: VersionNegotiationMode,
  token: string = ADMIN_TOKEN,
): Promise<{ client: Client; sent: Sent[] }> {
  const sent: Sent[] = [];
  const transport = new StreamableHTTPClientTransport(
    new URL(`${MCP_BASE}/agents/${agentId}/mcp`),
    {
      fetch: async (url, init) => {
        const request = new Request(url, init);
        const text = request.method === "POST" ? await request.clone().text() : "";
        sent.push({
          method: request.method,
          headers: Object.fromEntries(request.headers),
          body: text ? JSON.parse(text) : null,
        });
        return exports.default.fetch(request);
      },
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    },
  );
  const client = new Client(
    { name: "edge-agents-v2-host", version: "2.0.0" },
    { jsonSchemaValidator: new CfWorkerJsonSchemaValidator(), versionNegotiation: { mode } },
  );
  await client.connect(transport);
  open.push(client);
  return { client, sent };
}

const textOf = (result: unknown) =>
  ((result as CallToolResult).content ?? [])
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("\n");

describe("MCP server: the 2026-07-28 protocol", () => {
  it("answers a pinned client with no handshake and no session, each request carrying its version", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "Hello from the modern era." });
    const { client, sent } = await connect(agentId, { pin: "2026-07-28" });
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(tools).toEqual(["chat", "get_task", "search_memories", "start_task"]);
    const result = await client.callTool({ name: "chat", arguments: { message: "hi there" } });
    expect(textOf(result)).toBe("Hello from the modern era.");
    expect((result as CallToolResult).structuredContent).toMatchObject({
      reply: "Hello from the modern era.",
    });

    const posts = sent.filter((request) => request.method === "POST");
    expect(posts.map((request) => request.body?.method)).not.toContain("initialize");
    for (const request of posts) {
      expect(request.headers["mcp-protocol-version"]).toBe("2026-07-28");
      expect(request.headers["mcp-session-id"]).toBeUndefined();
    }
    const call = posts.find((request) => request.body?.method === "tools/call");
    expect(call?.headers["mcp-method"]).toBe("tools/call");
    expect(call?.headers["mcp-name"]).toBe("chat");
    expect(call?.body?.params?._meta).toMatchObject({
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    });
  });

  it("keeps the token's rules: only its tools, and its instructions say what was left out", async () => {
    const agentId = await createTestAgent();
    const { token } = await mintToken({
      name: "v2 host",
      scopes: ["memories:read"],
      agents: [agentId],
    });
    const { client } = await connect(agentId, "auto", token);
    expect(client.getInstructions()).toContain("chat: this token lacks the `messages:write` scope");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["search_memories"]);
    await expect(
      client.callTool({ name: "chat", arguments: { message: "hello" } }),
    ).rejects.toThrow("Tool chat not found");
  });

  it("is found modern by a negotiating client, which probes instead of initializing", async () => {
    const agentId = await createTestAgent();
    const { client, sent } = await connect(agentId, "auto");
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(sent[0]?.body?.method).toBe("server/discover");
    expect(sent.map((request) => request.body?.method)).not.toContain("initialize");
    expect((await client.listTools()).tools.length).toBe(4);
  });
});

describe("MCP server: 2025-era clients", () => {
  it("answers the v2 client in its legacy mode: initialize, then stateless requests", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "Hello from 2025." });
    const { client, sent } = await connect(agentId, "legacy");
    expect(client.getNegotiatedProtocolVersion()).toBe("2025-11-25");
    expect(sent[0]?.body?.method).toBe("initialize");
    const result = await client.callTool({ name: "chat", arguments: { message: "hello" } });
    expect(textOf(result)).toBe("Hello from 2025.");
    expect(sent.every((request) => request.headers["mcp-session-id"] === undefined)).toBe(true);
  });
});
