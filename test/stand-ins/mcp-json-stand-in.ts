// A minimal MCP server over Streamable HTTP (JSON responses, no sessions) as a fetch handler, for
// tests that need a server saying something the SDK's own peers would not (hostile descriptions).
// It answers initialize, tools/list and tools/call; notifications get 202, a GET stream 405.

export interface StandInTool {
  name: string;
  description: string;
  /** What tools/call answers (an MCP CallToolResult). */
  result?: Record<string, unknown>;
}

export function mcpJsonHandler(tools: StandInTool[]): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== "POST")
      return new Response(null, { status: 405, headers: { allow: "POST" } });
    const message = (await request.json()) as {
      id?: number | string;
      method: string;
      params?: Record<string, unknown>;
    };
    if (message.id === undefined) return new Response(null, { status: 202 });
    const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: message.id, result });
    switch (message.method) {
      case "initialize":
        return reply({
          protocolVersion: message.params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "stand-in", version: "1.0.0" },
        });
      case "tools/list":
        return reply({
          tools: tools.map(({ name, description }) => ({
            name,
            description,
            inputSchema: { type: "object", properties: {} },
          })),
        });
      case "tools/call": {
        const tool = tools.find((candidate) => candidate.name === message.params?.name);
        return reply(tool?.result ?? { content: [{ type: "text", text: "ok" }] });
      }
      default:
        return Response.json({
          jsonrpc: "2.0",
          id: message.id,
          error: { code: -32601, message: "method not found" },
        });
    }
  };
}
