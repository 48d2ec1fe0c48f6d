// Real MCP peers on loopback, built from the MCP SDK (Node): a plain server over Streamable HTTP,
// and an OAuth-protected one with its own authorization server (the SDK's auth router: RFC 9728
// and 8414 metadata, RFC 7591 registration, PKCE, RFC 8707 resource checks). Consent is given at
// once (the authorize endpoint redirects back with a code, as if someone clicked Allow). A control
// server lets tests in workerd stop and restart the plain server, and expire or revoke tokens.
// Started by vitest's global setup (test/setup/mcp-peers.ts) and by `npm run bench:mcp`.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import {
  createOAuthMetadata,
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
  mcpAuthRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import {
  InvalidGrantError,
  InvalidTokenError,
} from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from "@modelcontextprotocol/sdk/server/auth/provider.js";
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type {
  OAuthClientInformationFull,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { z } from "zod";

export interface McpPeers {
  plainUrl: string;
  /** The same tools over the older HTTP+SSE transport only (2024-11-05): GET /sse, POST /messages. */
  sseUrl: string;
  oauthUrl: string;
  authServerUrl: string;
  controlUrl: string;
  close(): Promise<void>;
}

/** A 1x1 transparent PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

function plainServer(calls: Map<string, number>): McpServer {
  const server = new McpServer({ name: "plain-peer", version: "1.0.0" });
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  server.registerTool(
    "echo",
    { description: "Says the text back", inputSchema: { text: z.string() } },
    async ({ text }) => {
      count("echo");
      return { content: [{ type: "text", text }] };
    },
  );
  server.registerTool(
    "add",
    {
      description: "Adds two numbers",
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => {
      count("add");
      return {
        content: [{ type: "text", text: JSON.stringify({ sum: a + b }) }],
        structuredContent: { sum: a + b },
      };
    },
  );
  server.registerTool("fail", { description: "Always fails", inputSchema: {} }, async () => {
    count("fail");
    return { content: [{ type: "text", text: "the widget is broken" }], isError: true };
  });
  server.registerTool(
    "slow",
    {
      description: "Answers after `ms` milliseconds",
      inputSchema: { ms: z.number().int().min(0).max(60_000) },
    },
    async ({ ms }, extra) => {
      count("slow");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return { content: [{ type: "text", text: `waited ${ms} ms` }] };
    },
  );
  server.registerTool(
    "image",
    { description: "Returns a tiny image", inputSchema: {} },
    async () => {
      count("image");
      return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
    },
  );
  server.registerTool(
    "resource",
    { description: "Returns an embedded resource", inputSchema: {} },
    async () => {
      count("resource");
      return {
        content: [
          {
            type: "resource",
            resource: {
              uri: "file:///notes/guide.md",
              mimeType: "text/markdown",
              text: "# Guide\nStep one.",
            },
          },
        ],
      };
    },
  );
  server.registerTool(
    "big",
    {
      description: "Returns `chars` characters",
      inputSchema: { chars: z.number().int().min(1).max(1_000_000) },
    },
    async ({ chars }) => {
      count("big");
      return { content: [{ type: "text", text: "x".repeat(chars) }] };
    },
  );
  return server;
}

/** An OAuth-protected peer's one tool: it says which OAuth client is calling. */
export function whoamiServer(name: string): McpServer {
  const server = new McpServer({ name, version: "1.0.0" });
  server.registerTool(
    "whoami",
    { description: "Says which OAuth client is calling", inputSchema: {} },
    async (_args, extra) => ({
      content: [{ type: "text", text: `client ${extra.authInfo?.clientId ?? "unknown"}` }],
    }),
  );
  return server;
}

/** Stateless Streamable HTTP: a fresh server and transport per request, as the SDK documents. */
export async function handleMcp(
  build: () => McpServer,
  req: IncomingMessage & { auth?: AuthInfo },
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  if (req.method !== "POST") {
    res.writeHead(405, { allow: "POST" }).end();
    return;
  }
  const server = build();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

interface StoredToken {
  clientId: string;
  scopes: string[];
  resource?: URL;
  expiresAt: number;
  kind: "access" | "refresh";
}

/** An authorization server that approves at once, with expiring access tokens and rotating refresh tokens. */
export class PeerAuthProvider implements OAuthServerProvider {
  readonly counts = { registrations: 0, authorizations: 0, codeExchanges: 0, refreshes: 0 };
  accessTtlSeconds = 3600;
  private readonly clients = new Map<string, OAuthClientInformationFull>();
  private readonly codes = new Map<
    string,
    { client: OAuthClientInformationFull; params: AuthorizationParams }
  >();
  private readonly tokens = new Map<string, StoredToken>();
  private readonly expectedResource: string;

  constructor(expectedResource: string) {
    this.expectedResource = expectedResource;
  }

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: async (id) => this.clients.get(id),
      registerClient: async (client) => {
        this.counts.registrations += 1;
        const full = client as OAuthClientInformationFull;
        this.clients.set(full.client_id, full);
        return full;
      },
    };
  }

  async authorize(
    client: OAuthClientInformationFull,
    params: AuthorizationParams,
    res: express.Response,
  ): Promise<void> {
    this.counts.authorizations += 1;
    const code = randomUUID();
    this.codes.set(code, { client, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state !== undefined) target.searchParams.set("state", params.state);
    res.redirect(target.toString());
  }

  async challengeForAuthorizationCode(
    _client: OAuthClientInformationFull,
    code: string,
  ): Promise<string> {
    const entry = this.codes.get(code);
    if (!entry) throw new InvalidGrantError("unknown authorization code");
    return entry.params.codeChallenge;
  }

  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    _verifier?: string,
    _redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const entry = this.codes.get(code);
    if (!entry || entry.client.client_id !== client.client_id)
      throw new InvalidGrantError("unknown authorization code");
    this.codes.delete(code);
    // RFC 8707: the token is for this MCP server only.
    const asked = resource?.href ?? entry.params.resource?.href;
    if (asked !== this.expectedResource)
      throw new InvalidGrantError(
        `resource must be ${this.expectedResource}, got ${asked ?? "none"}`,
      );
    this.counts.codeExchanges += 1;
    return this.issue(client.client_id, entry.params.scopes ?? [], new URL(asked));
  }

  async exchangeRefreshToken(
    client: OAuthClientInformationFull,
    refreshToken: string,
    scopes?: string[],
    resource?: URL,
  ): Promise<OAuthTokens> {
    const stored = this.tokens.get(refreshToken);
    if (stored?.kind !== "refresh" || stored.clientId !== client.client_id)
      throw new InvalidGrantError("refresh token is not valid");
    // Rotation: a refresh token works once.
    this.tokens.delete(refreshToken);
    this.counts.refreshes += 1;
    return this.issue(client.client_id, scopes ?? stored.scopes, resource ?? stored.resource);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const stored = this.tokens.get(token);
    if (stored?.kind !== "access" || stored.expiresAt <= Date.now())
      throw new InvalidTokenError("token is not valid");
    return {
      token,
      clientId: stored.clientId,
      scopes: stored.scopes,
      expiresAt: Math.floor(stored.expiresAt / 1000),
      resource: stored.resource,
    };
  }

  expireAccessTokens(): void {
    for (const token of this.tokens.values()) if (token.kind === "access") token.expiresAt = 0;
  }

  revokeAll(): void {
    this.tokens.clear();
  }

  private issue(clientId: string, scopes: string[], resource?: URL): OAuthTokens {
    const access = `at_${randomUUID()}`;
    const refresh = `rt_${randomUUID()}`;
    this.tokens.set(access, {
      clientId,
      scopes,
      resource,
      expiresAt: Date.now() + this.accessTtlSeconds * 1000,
      kind: "access",
    });
    this.tokens.set(refresh, {
      clientId,
      scopes,
      resource,
      expiresAt: Number.MAX_SAFE_INTEGER,
      kind: "refresh",
    });
    return {
      access_token: access,
      token_type: "bearer",
      expires_in: this.accessTtlSeconds,
      refresh_token: refresh,
      scope: scopes.join(" "),
    };
  }
}

export async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}

export function tracked(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  return sockets;
}

export async function startMcpPeers(): Promise<McpPeers> {
  const calls = new Map<string, number>();

  // The plain server: a bare node:http server, so it can be stopped and started on the same port.
  const plainApp = express();
  plainApp.use(express.json({ limit: "4mb" }));
  plainApp.all("/mcp", (req, res) => void handleMcp(() => plainServer(calls), req, res, req.body));
  let plain = createServer(plainApp);
  let plainSockets = tracked(plain);
  const plainPort = await listen(plain);
  let plainRunning = true;

  // An older server that speaks only HTTP+SSE: a POST to /sse is 405, as such servers answer.
  const sseSessions = new Map<string, SSEServerTransport>();
  const sseApp = express();
  sseApp.get("/sse", async (_req, res) => {
    const transport = new SSEServerTransport("/messages", res);
    sseSessions.set(transport.sessionId, transport);
    res.on("close", () => sseSessions.delete(transport.sessionId));
    await plainServer(calls).connect(transport);
  });
  sseApp.post("/sse", (_req, res) => void res.status(405).set("allow", "GET").end());
  sseApp.post("/messages", express.json(), async (req, res) => {
    const transport = sseSessions.get(String(req.query.sessionId));
    if (!transport) return void res.status(404).end();
    await transport.handlePostMessage(req, res, req.body);
  });
  const sseHttp = createServer(sseApp);
  const sseSockets = tracked(sseHttp);
  const ssePort = await listen(sseHttp);

  // The OAuth-protected server and its authorization server, on two ports.
  const oauthHttp = createServer();
  const authHttp = createServer();
  const oauthPort = await listen(oauthHttp);
  const authPort = await listen(authHttp);
  const oauthUrl = new URL(`http://127.0.0.1:${oauthPort}/mcp`);
  const authServerUrl = new URL(`http://127.0.0.1:${authPort}/`);
  const provider = new PeerAuthProvider(oauthUrl.href);
  const noLimit = { rateLimit: false as const };
  const authApp = express();
  authApp.use(
    mcpAuthRouter({
      provider,
      issuerUrl: authServerUrl,
      scopesSupported: ["mcp:tools"],
      authorizationOptions: noLimit,
      clientRegistrationOptions: noLimit,
      tokenOptions: noLimit,
      revocationOptions: noLimit,
    }),
  );
  authHttp.on("request", authApp);

  const oauthApp = express();
  oauthApp.use(express.json());
  oauthApp.use(
    mcpAuthMetadataRouter({
      oauthMetadata: createOAuthMetadata({
        provider,
        issuerUrl: authServerUrl,
        scopesSupported: ["mcp:tools"],
      }),
      resourceServerUrl: oauthUrl,
      scopesSupported: ["mcp:tools"],
      resourceName: "OAuth peer",
    }),
  );
  const bearer = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(oauthUrl),
    expectedResource: oauthUrl,
  });
  const whoami = () => whoamiServer("oauth-peer");
  oauthApp.all(
    "/mcp",
    bearer,
    (req, res) =>
      void handleMcp(whoami, req as IncomingMessage & { auth?: AuthInfo }, res, req.body),
  );
  oauthHttp.on("request", oauthApp);
  const oauthSockets = tracked(oauthHttp);
  const authSockets = tracked(authHttp);

  // Control, for tests running in workerd.
  const control = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://control");
    const reply = (body: unknown) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    switch (`${req.method} ${url.pathname}`) {
      case "POST /plain/stop":
        if (plainRunning) {
          plainRunning = false;
          await closeServer(plain, plainSockets);
        }
        return reply({ running: false });
      case "POST /plain/start":
        if (!plainRunning) {
          plain = createServer(plainApp);
          plainSockets = tracked(plain);
          await listen(plain, plainPort);
          plainRunning = true;
        }
        return reply({ running: true });
      case "GET /plain/calls":
        return reply(Object.fromEntries(calls));
      case "POST /oauth/expire":
        provider.expireAccessTokens();
        return reply({ expired: true });
      case "POST /oauth/revoke":
        provider.revokeAll();
        return reply({ revoked: true });
      case "POST /oauth/ttl":
        provider.accessTtlSeconds = Number(url.searchParams.get("seconds") ?? "3600");
        return reply({ accessTtlSeconds: provider.accessTtlSeconds });
      case "GET /oauth/counts":
        return reply(provider.counts);
      default:
        res.writeHead(404).end();
    }
  });
  const controlSockets = tracked(control);
  const controlPort = await listen(control);

  return {
    plainUrl: `http://127.0.0.1:${plainPort}/mcp`,
    sseUrl: `http://127.0.0.1:${ssePort}/sse`,
    oauthUrl: oauthUrl.href,
    authServerUrl: authServerUrl.href,
    controlUrl: `http://127.0.0.1:${controlPort}`,
    async close() {
      await Promise.all([
        plainRunning ? closeServer(plain, plainSockets) : Promise.resolve(),
        closeServer(oauthHttp, oauthSockets),
        closeServer(authHttp, authSockets),
        closeServer(control, controlSockets),
        closeServer(sseHttp, sseSockets),
      ]);
    },
  };
}
