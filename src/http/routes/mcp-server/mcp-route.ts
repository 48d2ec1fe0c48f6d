// /agents/:agentId/mcp: an MCP server per agent over Streamable HTTP, stateless. The REST API's
// auth middleware admits the request (bearer token, its rate bucket, any one of the scopes a tool
// needs, the agent among the token's), then the SDK's handler answers the one POST with a fresh
// McpServer built for this token: a 2026-07-28 request (protocol version and client in its own
// `_meta`, no handshake) on the modern path, a 2025 one (initialize, then requests) by the
// stateless fallback. Stateless, so there is no stream to open with GET and no session to end
// with DELETE: both are 405 (the spec's answer for a server that offers neither).
// It is also an OAuth-protected resource (./oauth/): an access token an MCP host got through the
// agent's authorization server stands for the grant's principal; an API token is read as on every
// route; a 401 names the resource's metadata (RFC 9728 §5.1) so a host can start OAuth from it,
// and a grant's call to a tool outside it is a 403 insufficient_scope to step up from.
import { createMcpHandler } from "@modelcontextprotocol/server";
import { Hono, type MiddlewareHandler } from "hono";
import { AppError, ValidationError } from "../../../runtime/util/errors.ts";
import type { AppEnv, Principal } from "../../app-env.ts";
import { keepAliveOf, requireScopeWith } from "../../auth.ts";
import { errorResponse } from "../../errors.ts";
import { assertAgentExists } from "../../known-agents.ts";
import { AGENT_ID } from "../../schemas.ts";
import { createAgentMcpServer, MCP_TOOL_ACTIONS } from "./agent-server.ts";
import { errorField, log } from "../../../log.ts";
import { bearerChallenge } from "./oauth/authorization-server.ts";
import { oauthPrincipal } from "./oauth/grant-principal.ts";
import { calledTools, insufficientScope, isGrant, missingGrantScope } from "./oauth/step-up.ts";

export const MCP_SERVER_PATH = "/agents/:agentId/mcp";

export function mcpServerRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // A token with none of these may use no tool here (chat/start_task, search_memories, get_task).
  app.all(
    MCP_SERVER_PATH,
    challengeOn401,
    requireScopeWith(oauthPrincipal, "messages:write", "memories:read", "agents:read"),
    async (c) => {
      const agentId = c.req.param("agentId");
      if (!AGENT_ID.test(agentId))
        throw new ValidationError("agent ids are 1-64 letters, digits, '-' or '_'");
      await assertAgentExists(c.env, agentId);
      if (c.req.method !== "POST") {
        c.header("Allow", "POST");
        return errorResponse(
          c,
          new AppError(
            "validation",
            405,
            "this MCP server is stateless: send JSON-RPC messages with POST (it opens no stream on GET and has no session to DELETE)",
          ),
        );
      }
      const principal = c.get("principal");
      const stepUp = await stepUpFor(c.req.raw, principal, agentId);
      if (stepUp) return stepUp;
      const context = { env: c.env, principal, agentId, keepAlive: keepAliveOf(c) };
      // Built per request: the server it makes is this token's (its tools, its instructions).
      const handler = createMcpHandler(() => createAgentMcpServer(context), {
        legacy: "stateless",
        onerror: (error) => log.warn("mcp_server_refused", { agentId, error: errorField(error) }),
      });
      return handler.fetch(c.req.raw);
    },
  );
  return app;
}

/**
 * For an OAuth grant, the 403 insufficient_scope of a tools/call it lacks a scope for (step-up.ts);
 * null otherwise. The body is read from a copy; one that is not JSON is left to the SDK to refuse.
 */
async function stepUpFor(
  request: Request,
  principal: Principal,
  agentId: string,
): Promise<Response | null> {
  if (!isGrant(principal)) return null;
  // A grant that may call every tool (the usual case) has nothing to step up: its body is left
  // to the SDK alone.
  const lacking = new Map<string, string>();
  for (const [name, action] of Object.entries(MCP_TOOL_ACTIONS)) {
    const scope = missingGrantScope(principal, action, agentId);
    if (scope) lacking.set(name, scope);
  }
  if (lacking.size === 0) return null;
  let body: unknown;
  try {
    body = JSON.parse(await request.clone().text());
  } catch {
    return null;
  }
  const missing = new Set<string>();
  for (const name of calledTools(body)) {
    const scope = lacking.get(name);
    if (scope) missing.add(scope);
  }
  if (missing.size === 0) return null;
  return insufficientScope(new URL(request.url).origin, agentId, principal, [...missing]);
}

/** Every 401 here carries the Bearer challenge that points an MCP host at OAuth discovery. */
const challengeOn401: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.res.status !== 401) return;
  const agentId = c.req.param("agentId");
  if (!agentId || !AGENT_ID.test(agentId)) return;
  const hadToken = c.req.header("authorization") !== undefined;
  const res = new Response(c.res.body, c.res);
  res.headers.set(
    "WWW-Authenticate",
    bearerChallenge(new URL(c.req.url).origin, agentId, hadToken ? { error: "invalid_token" } : {}),
  );
  c.res = res;
};
