// MCP servers built with the v2 SDK (@modelcontextprotocol/server, protocol 2026-07-28), on
// loopback: one serves 2026-07-28 and, statelessly, 2025-era clients too (the SDK's default), the
// other 2026-07-28 only (`legacy: "reject"`). The 1.x peers (mcp-peers.ts) stay the older servers
// users still run. Started by vitest's global setup (test/setup/mcp-peers.ts).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { createMcpHandler, McpServer, type McpHttpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";
import { closeServer, listen, tracked } from "./mcp-peers.ts";

export interface McpV2Peers {
  /** Answers 2026-07-28 requests and 2025-11-25 clients (stateless). */
  bothUrl: string;
  /** Answers 2026-07-28 requests only; a 2025 client gets the unsupported-version error. */
  modernUrl: string;
  close(): Promise<void>;
}

function echoServer(): McpServer {
  const server = new McpServer({ name: "v2-peer", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes its text", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }),
  );
  return server;
}

/** node:http in front of the SDK's web-standard handler. */
async function serveWith(
  handler: McpHttpHandler,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers))
    if (typeof value === "string") headers.set(name, value);
  const method = req.method ?? "GET";
  const response = await handler.fetch(
    new Request(`http://127.0.0.1${req.url ?? "/"}`, {
      method,
      headers,
      ...(method === "GET" || method === "HEAD" ? {} : { body: Buffer.concat(chunks) }),
    }),
  );
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return void res.end();
  Readable.fromWeb(response.body as import("node:stream/web").ReadableStream).pipe(res);
}

export async function startMcpV2Peers(): Promise<McpV2Peers> {
  const both = createMcpHandler(echoServer, { legacy: "stateless" });
  const modern = createMcpHandler(echoServer, { legacy: "reject" });
  const http = createServer((req, res) => {
    const handler = req.url?.startsWith("/modern/") ? modern : both;
    serveWith(handler, req, res).catch(() => res.writeHead(500).end());
  });
  const sockets = tracked(http);
  const port = await listen(http);
  return {
    bothUrl: `http://127.0.0.1:${port}/mcp`,
    modernUrl: `http://127.0.0.1:${port}/modern/mcp`,
    close: () => closeServer(http, sockets),
  };
}
