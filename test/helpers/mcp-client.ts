// The MCP SDK's own client, connected to an agent's MCP server (/agents/:agentId/mcp) through the
// worker's fetch handler, as an MCP host would connect over the network: the real Client and
// StreamableHTTPClientTransport, a bearer token in a header, no hand-made JSON-RPC.
import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker-provider.js";
import { afterEach, expect } from "vitest";
import { ADMIN_TOKEN } from "./api.ts";

export const MCP_BASE = "https://agents.test";

export type McpClient = Client;

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

/** The worker's fetch handler in the shape the transport's `fetch` option takes. */
function workerFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(url, init));
}

/** A connected client (initialize done) for `agentId`, as `token` (null: no Authorization). */
export async function connectMcp(
  agentId: string,
  token: string | null = ADMIN_TOKEN,
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(
    new URL(`${MCP_BASE}/agents/${agentId}/mcp`),
    {
      fetch: workerFetch,
      requestInit: token === null ? {} : { headers: { authorization: `Bearer ${token}` } },
    },
  );
  // Ajv (the default) compiles with `new Function`, which workerd forbids.
  const client = new Client(
    { name: "edge-agents-test-host", version: "1.0.0" },
    { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
  );
  await client.connect(transport);
  open.push(client);
  return client;
}

/** The text of a tool result's text content, joined. */
export function textOf(result: unknown): string {
  return ((result as CallToolResult).content ?? [])
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("\n");
}

/** The HTTP status with which the endpoint refuses the client's connection (initialize). */
export async function mcpRefusal(agentId: string, token: string | null): Promise<number> {
  const error = await connectMcp(agentId, token).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(StreamableHTTPError);
  return (error as StreamableHTTPError).code ?? 0;
}

/**
 * Whether a tool call was served: a result, not an error result nor the protocol's error for a
 * tool the server does not have (what a tool the token may not use is).
 */
export async function served(call: Promise<unknown>): Promise<boolean> {
  try {
    return ((await call) as CallToolResult).isError !== true;
  } catch {
    return false;
  }
}
