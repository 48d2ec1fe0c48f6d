// The public OAuth routes of each agent's MCP server, none behind a bearer token (a host has none
// yet): RFC 9728 metadata for the MCP URL, RFC 8414 metadata of the agent's authorization server,
// its dynamic client registration (RFC 7591), token endpoint (codes with PKCE, refresh, and
// RFC 7009 revocation), all answered by the library, and the consent page (consent.ts). They are
// listed in /openapi.json as open routes, with what guards each instead of a token.
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../../app-env.ts";
import { assertAgentExists } from "../../../known-agents.ts";
import { AGENT_ID } from "../../../schemas.ts";
import { NotFoundError } from "../../../../runtime/util/errors.ts";
import { agentAuthorizationServer, protectedResourceMetadata } from "./authorization-server.ts";
import { decideConsent, showConsent } from "./consent.ts";

const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/agents/:agentId/mcp";
const SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server/agents/:agentId";
const AUTHORIZE_PATH = "/agents/:agentId/oauth/authorize";
/** The library's routes, with the methods it answers (any other is this API's 404). */
const LIBRARY_ROUTES: Array<[string[], string]> = [
  [["GET", "HEAD", "OPTIONS"], SERVER_METADATA_PATH],
  // Every method: the library answers a wrong one in the RFC 6749 error shape clients expect.
  [["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], "/agents/:agentId/oauth/token"],
  [["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], "/agents/:agentId/oauth/register"],
];

export function mcpOAuthRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.get(RESOURCE_METADATA_PATH, async (c) => {
    const agentId = await knownAgent(c);
    c.header("Access-Control-Allow-Origin", "*");
    return c.json(protectedResourceMetadata(new URL(c.req.url).origin, agentId));
  });
  for (const [methods, path] of LIBRARY_ROUTES)
    app.on(methods, path, async (c) => {
      const agentId = await knownAgent(c);
      const server = agentAuthorizationServer(new URL(c.req.url).origin, agentId);
      return server.fetch(c.req.raw, c.env, executionContextOf(c));
    });
  app.get(AUTHORIZE_PATH, async (c) => showConsent(c, await knownAgent(c)));
  app.post(AUTHORIZE_PATH, async (c) => decideConsent(c, await knownAgent(c)));

  document(app);
  return app;
}

async function knownAgent(c: Context<AppEnv>): Promise<string> {
  const agentId = c.req.param("agentId") ?? "";
  if (!AGENT_ID.test(agentId)) throw new NotFoundError(`no agent with id "${agentId}"`);
  await assertAgentExists(c.env, agentId);
  return agentId;
}

/**
 * The library reads the execution context only for API routes it hosts itself (none here), so
 * Hono's (or none, in a script calling app.fetch directly) is enough.
 */
function executionContextOf(c: Context<AppEnv>): ExecutionContext {
  try {
    return c.executionCtx as ExecutionContext;
  } catch {
    return {
      waitUntil: () => undefined,
      passThroughOnException: () => undefined,
    } as unknown as ExecutionContext;
  }
}

/** Each route in /openapi.json, without a security requirement: what guards it is said instead. */
function document(app: OpenAPIHono<AppEnv>): void {
  const agentParam = {
    name: "agentId",
    in: "path" as const,
    required: true,
    schema: { type: "string" as const },
  };
  const route = (
    method: "get" | "post",
    path: string,
    summary: string,
    description: string,
    responses: Record<string, string>,
  ) =>
    app.openAPIRegistry.registerPath({
      method,
      path: path.replace(":agentId", "{agentId}"),
      tags: ["MCP OAuth"],
      summary,
      description,
      request: { params: undefined },
      parameters: [agentParam],
      responses: Object.fromEntries(
        Object.entries(responses).map(([status, text]) => [status, { description: text }]),
      ),
    });
  route(
    "get",
    RESOURCE_METADATA_PATH,
    "Protected resource metadata (RFC 9728) of the agent's MCP server",
    "Public: names the agent's authorization server and the scopes an MCP host may ask.",
    { 200: "The metadata", 404: "No such agent" },
  );
  route(
    "get",
    SERVER_METADATA_PATH,
    "Authorization server metadata (RFC 8414) of the agent's MCP server",
    "Public: the endpoints an MCP host registers, authorizes and gets tokens at.",
    { 200: "The metadata", 404: "No such agent" },
  );
  route(
    "post",
    "/agents/:agentId/oauth/register",
    "Dynamic client registration (RFC 7591)",
    "Public, as MCP hosts register themselves: a client gets nothing until the agent's operator approves a consent.",
    { 201: "The registered client", 400: "Invalid client metadata" },
  );
  route(
    "post",
    "/agents/:agentId/oauth/token",
    "Token endpoint: authorization code with PKCE S256, refresh, revocation (RFC 7009)",
    "Authenticated by the grant itself: a code with its PKCE verifier, or a refresh token, and the client's credentials.",
    { 200: "Tokens", 400: "OAuth error", 401: "Client authentication failed" },
  );
  route(
    "get",
    AUTHORIZE_PATH,
    "Consent page for an MCP host",
    "Public page; the request is validated (client, exact redirect URI, PKCE S256) before it shows.",
    { 200: "The consent page", 302: "Back to the client with an error", 400: "Invalid request" },
  );
  route(
    "post",
    AUTHORIZE_PATH,
    "Allow or deny a consent",
    "Allow needs an API token that may manage the agent (admin, or agents:write for it), posted in the form with the page's one-time handle; Deny returns access_denied to the client.",
    {
      302: "Back to the client with a code or access_denied",
      401: "No valid token",
      403: "The token may not manage the agent",
    },
  );
}
