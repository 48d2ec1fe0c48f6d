// Each agent as an MCP server (/agents/:agentId/mcp, src/http/routes/mcp-server/), driven by the
// MCP SDK's own Client over StreamableHTTPClientTransport into the worker, as Claude Desktop (via
// mcp-remote), Cursor or the MCP inspector would: tools listed by the token's scopes, a
// conversation the agent remembers, memory search under the user-prefix rule, tasks under the
// task rule, the character as a resource, and the HTTP answers of the transport and the tokens.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { api, createTestAgent, json, mintToken, useModelStandIn } from "../helpers/api.ts";
import { connectMcp, mcpRefusal, textOf } from "../helpers/mcp-client.ts";

const model = useModelStandIn();

const mint = async (agentId: string, scopes: string[], userPrefix?: string) =>
  (await mintToken({ name: "mcp host", scopes, agents: [agentId], userPrefix })).token;

async function toolNames(agentId: string, token: string): Promise<string[]> {
  const client = await connectMcp(agentId, token);
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

describe("MCP server: tools and the token's scopes", () => {
  it("lists only the tools and the resource a token's scopes allow", async () => {
    const agentId = await createTestAgent();
    expect(await toolNames(agentId, await mint(agentId, ["memories:read"]))).toEqual([
      "search_memories",
    ]);
    expect(await toolNames(agentId, await mint(agentId, ["messages:write"]))).toEqual([
      "chat",
      "start_task",
    ]);
    expect(await toolNames(agentId, await mint(agentId, ["agents:read"]))).toEqual(["get_task"]);
    const admin = await connectMcp(agentId);
    expect((await admin.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      "chat",
      "get_task",
      "search_memories",
      "start_task",
    ]);
    const chat = (await admin.listTools()).tools.find((tool) => tool.name === "chat");
    expect(chat?.outputSchema?.properties).toHaveProperty("turnId");
    expect(chat?.outputSchema?.properties).toHaveProperty("memories");

    const reader = await connectMcp(agentId, await mint(agentId, ["agents:read"]));
    expect((await reader.listResources()).resources.map((r) => r.uri)).toEqual([
      `agent://${agentId}/character`,
    ]);
    const writer = await connectMcp(agentId, await mint(agentId, ["messages:write"]));
    expect((await writer.listResources()).resources).toEqual([]);
    // The server tells the host what was left out, and why.
    expect(writer.getInstructions()).toContain(
      "get_task: this token lacks the `agents:read` scope",
    );
  });

  it("refuses a tool the token may not use: not listed, and calling it is the unknown-tool error", async () => {
    const agentId = await createTestAgent();
    const client = await connectMcp(agentId, await mint(agentId, ["memories:read"]));
    const calls = model.calls.length;
    for (const [name, args] of [
      ["chat", { message: "hello" }],
      ["start_task", { goal: "anything" }],
      ["get_task", { taskId: crypto.randomUUID() }],
    ] as const) {
      // The spec's protocol error for a tool the server does not have (-32602), as for any name.
      await expect(client.callTool({ name, arguments: args }), name).rejects.toThrow(
        `MCP error -32602: Tool ${name} not found`,
      );
    }
    await expect(client.readResource({ uri: `agent://${agentId}/character` })).rejects.toThrow(
      "not found",
    );
    expect(model.calls.length).toBe(calls);
  });

  it("answers bad arguments with an error result that names the field", async () => {
    const agentId = await createTestAgent();
    const client = await connectMcp(agentId);
    const cases = [
      { name: "chat", arguments: {}, says: "message" },
      { name: "chat", arguments: { message: "   " }, says: "must not be empty" },
      { name: "chat", arguments: { message: "hi", mood: "happy" }, says: "mood" },
      { name: "chat", arguments: { message: "hi", userId: "no spaces" }, says: "userId" },
      { name: "search_memories", arguments: { query: "x", limit: 1000 }, says: "limit" },
      { name: "get_task", arguments: { taskId: "task-1" }, says: "task ids are UUIDs" },
    ];
    for (const { name, arguments: args, says } of cases) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(result), JSON.stringify(args)).toContain("Invalid arguments");
      expect(textOf(result), JSON.stringify(args)).toContain(says);
    }
    expect(model.calls).toEqual([]);
  });
});

describe("MCP server: chat", () => {
  it("holds a two-turn conversation that the agent remembers", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const token = await mint(agentId, ["messages:write", "memories:read"]);
    model.respondWith((call) => {
      const said = JSON.stringify(call.messages);
      return { text: said.includes("kites") ? "You told me you like kites." : "Noted." };
    });
    const client = await connectMcp(agentId, token);
    const first = (await client.callTool({
      name: "chat",
      arguments: { message: "I'm Zed and I like kites." },
    })) as CallToolResult;
    expect(first.isError).toBeFalsy();
    const second = (await client.callTool({
      name: "chat",
      arguments: { message: "What do I like?" },
    })) as CallToolResult;
    expect(textOf(second)).toBe("You told me you like kites.");

    const a = first.structuredContent as { turnId: string; roomId: string; userId: string };
    const b = second.structuredContent as {
      turnId: string;
      roomId: string;
      reply: string;
      memories?: unknown[];
    };
    expect(b.turnId).not.toBe(a.turnId);
    expect(b.roomId).toBe(a.roomId);
    expect(a.userId).toMatch(/^mcp-tok_/);
    expect(b.reply).toBe("You told me you like kites.");
    expect(Array.isArray(b.memories)).toBe(true);
    // The second turn's prompt held the first exchange: the room's history, as over REST.
    const prompt = JSON.stringify(model.calls.at(-1)!.messages);
    expect(prompt).toContain("I'm Zed and I like kites.");

    // The same conversation is the room's history over REST.
    const history = await json<{ messages: { text: string }[] }>(
      await api("GET", `/agents/${agentId}/rooms/${a.roomId}/messages`),
    );
    expect(history.messages.map((m) => m.text)).toContain("What do I like?");
  });

  it("shows the memories a turn used only to a token that may read memories", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    model.respondWith(() => ({ text: "Hi." }));
    const client = await connectMcp(agentId, await mint(agentId, ["messages:write"]));
    const result = (await client.callTool({
      name: "chat",
      arguments: { message: "hello", userId: "pat", roomId: "pats-room" },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ userId: "pat", roomId: "pats-room" });
    expect(result.structuredContent).not.toHaveProperty("memories");
  });

  it("speaks only as the token's users and in its rooms", async () => {
    const agentId = await createTestAgent();
    const client = await connectMcp(agentId, await mint(agentId, ["messages:write"], "acme:"));
    model.respondWith(() => ({ text: "Hi." }));
    const own = (await client.callTool({
      name: "chat",
      arguments: { message: "hello" },
    })) as CallToolResult;
    expect(own.isError).toBeFalsy();
    expect((own.structuredContent as { userId: string }).userId).toMatch(/^acme:mcp-tok_/);
    const calls = model.calls.length;
    for (const args of [
      { message: "hi", userId: "globex:bob" },
      { message: "hi", roomId: "user:globex:bob" },
      { message: "hi", userId: "discord:1", roomId: "acme:room" },
    ]) {
      const result = (await client.callTool({ name: "chat", arguments: args })) as CallToolResult;
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(result)).toMatch(/^forbidden: /);
    }
    expect(model.calls.length).toBe(calls);
  });
});

describe("MCP server: search_memories", () => {
  it("searches the agent's memories under the token's user prefix", async () => {
    const agentId = await createTestAgent();
    const stored = await api("POST", "/memories", {
      body: {
        memories: [
          { agentId, type: "fact", userId: "acme:ann", text: "Ann keeps bees on the roof." },
          { agentId, type: "fact", userId: "globex:bob", text: "Bob keeps bees in the garden." },
        ],
      },
    });
    expect(stored.status).toBe(201);
    const client = await connectMcp(agentId, await mint(agentId, ["memories:read"], "acme:"));

    const mine = (await client.callTool({
      name: "search_memories",
      arguments: { query: "bees", userId: "acme:ann" },
    })) as CallToolResult;
    expect(mine.isError).toBeFalsy();
    const found = (mine.structuredContent as { memories: { text: string; userId: string }[] })
      .memories;
    expect(found.map((m) => m.text)).toEqual(["Ann keeps bees on the roof."]);
    expect(textOf(mine)).toContain("[fact] Ann keeps bees on the roof.");

    const everyone = (await client.callTool({
      name: "search_memories",
      arguments: { query: "bees" },
    })) as CallToolResult;
    expect(everyone.isError).toBe(true);
    expect(textOf(everyone)).toContain("name one of them in `userId`");
    const theirs = (await client.callTool({
      name: "search_memories",
      arguments: { query: "bees", userId: "globex:bob" },
    })) as CallToolResult;
    expect(theirs.isError).toBe(true);
    expect(textOf(theirs)).not.toContain("garden");

    // Without a prefix, the search spans every user, as POST /memories/similar does.
    const operator = await connectMcp(agentId, await mint(agentId, ["memories:read"]));
    const all = (await operator.callTool({
      name: "search_memories",
      arguments: { query: "bees", limit: 5 },
    })) as CallToolResult;
    expect((all.structuredContent as { memories: unknown[] }).memories).toHaveLength(2);
  });
});

describe("MCP server: tasks", () => {
  it("starts a task and reads it back; another tenant's task is not found", async () => {
    const agentId = await createTestAgent();
    const acme = await connectMcp(
      agentId,
      await mint(agentId, ["messages:write", "agents:read"], "acme:"),
    );
    const started = (await acme.callTool({
      name: "start_task",
      arguments: { goal: "Check the time" },
    })) as CallToolResult;
    expect(started.isError).toBeFalsy();
    const { taskId } = started.structuredContent as { taskId: string };
    expect(taskId).toMatch(/^[0-9a-f-]{36}$/);

    const read = (await acme.callTool({
      name: "get_task",
      arguments: { taskId },
    })) as CallToolResult;
    expect(read.isError).toBeFalsy();
    expect(read.structuredContent).toMatchObject({ taskId, agentId, goal: "Check the time" });

    // Same tenant, another token: visible. Another tenant: as if it did not exist.
    const colleague = await connectMcp(agentId, await mint(agentId, ["agents:read"], "acme:"));
    const seen = (await colleague.callTool({
      name: "get_task",
      arguments: { taskId },
    })) as CallToolResult;
    expect(seen.isError).toBeFalsy();
    const globex = await connectMcp(agentId, await mint(agentId, ["agents:read"], "globex:"));
    const hidden = (await globex.callTool({
      name: "get_task",
      arguments: { taskId },
    })) as CallToolResult;
    const absent = (await globex.callTool({
      name: "get_task",
      arguments: { taskId: crypto.randomUUID() },
    })) as CallToolResult;
    expect(hidden.isError).toBe(true);
    expect(absent.isError).toBe(true);
    expect(textOf(hidden)).toBe(`not_found: no task "${taskId}" for agent "${agentId}"`);
    expect(textOf(hidden)).not.toContain("Check the time");
    expect(textOf(absent).replace(/"[0-9a-f-]{36}"/, "")).toBe(
      textOf(hidden).replace(/"[0-9a-f-]{36}"/, ""),
    );
  });
});

describe("MCP server: the character resource", () => {
  it("reads the character as JSON without its secret values", async () => {
    const agentId = await createTestAgent({ secrets: { WEATHER_API_KEY: "super-secret-value" } });
    const client = await connectMcp(agentId, await mint(agentId, ["agents:read"]));
    const read = await client.readResource({ uri: `agent://${agentId}/character` });
    const [content] = read.contents;
    expect(content?.mimeType).toBe("application/json");
    const text = String((content as { text: string }).text);
    expect(text).not.toContain("super-secret-value");
    expect(JSON.parse(text)).toMatchObject({
      id: agentId,
      name: "Testa",
      secretNames: ["WEATHER_API_KEY"],
    });
    await expect(client.readResource({ uri: "agent://someone-else/character" })).rejects.toThrow(
      "not found",
    );
  });
});

describe("MCP server: HTTP", () => {
  it("refuses without a token (401), for another agent (403), with none of its scopes (403), and for an unknown agent (404)", async () => {
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    expect(await mcpRefusal(agentId, null)).toBe(401);
    expect(await mcpRefusal(agentId, "ea_not-a-real-token")).toBe(401);
    expect(await mcpRefusal(other, await mint(agentId, ["messages:write"]))).toBe(403);
    expect(await mcpRefusal(agentId, await mint(agentId, ["agents:write", "tools:write"]))).toBe(
      403,
    );
    expect(await mcpRefusal("no-such-agent", await mint("no-such-agent", ["agents:read"]))).toBe(
      404,
    );
    const denied = await api("POST", `/agents/${other}/mcp`, {
      token: await mint(agentId, ["messages:write"]),
      body: {},
    });
    expect((await json<{ error: { message: string } }>(denied)).error.message).toContain(other);
  });

  it("answers GET and DELETE with 405: a stateless server opens no stream and keeps no session", async () => {
    const agentId = await createTestAgent();
    for (const method of ["GET", "DELETE"]) {
      const response = await api(method, `/agents/${agentId}/mcp`, {
        headers: { accept: "text/event-stream" },
      });
      expect(response.status, method).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
    expect((await api("GET", `/agents/${agentId}/mcp`, { token: null })).status).toBe(401);
  });
});
