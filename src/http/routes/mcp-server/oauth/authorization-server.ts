// Each agent's MCP server as an OAuth-protected resource, with its own authorization server from
// @cloudflare/workers-oauth-provider. The library fixes an authorization server's resources when
// it is built, and agents come and go at run time, so each agent gets one (built on first use and
// kept per isolate): issuer `<origin>/agents/<id>`, one resource, `<origin>/agents/<id>/mcp`. Every
// agent's clients, grants and tokens share the OAUTH_KV namespace; a grant's audience is its
// agent's URL and its props name the agent again (grant-principal.ts).
import {
  OAuthAuthorizationServer,
  OAuthError,
  type OAuthHelpers,
} from "@cloudflare/workers-oauth-provider";
import type { Env } from "../../../../env.ts";
import { log } from "../../../../log.ts";
import type { Scope } from "../../../../runtime/access/index.ts";
import { grantApproverLapse } from "./grant-approver.ts";

/** What an MCP host may be granted: the scopes of the server's tools and its resource. */
export const MCP_OAUTH_SCOPES = [
  "messages:write",
  "memories:read",
  "agents:read",
] as const satisfies readonly Scope[];

/** An hour; refresh tokens live the library's default 30 days. */
const ACCESS_TOKEN_TTL_SECONDS = 3600;
/** Built servers kept per isolate; one per agent and origin served. */
const MAX_CACHED_SERVERS = 500;

const PROTECTED_RESOURCE_PREFIX = "/.well-known/oauth-protected-resource";

export const mcpResourceOf = (origin: string, agentId: string): string =>
  `${origin}/agents/${agentId}/mcp`;

export const issuerOf = (origin: string, agentId: string): string => `${origin}/agents/${agentId}`;

/** RFC 9728 §3.1: the well-known prefix, then the resource's path. */
export const resourceMetadataUrlOf = (origin: string, agentId: string): string =>
  `${origin}${PROTECTED_RESOURCE_PREFIX}/agents/${agentId}/mcp`;

const servers = new Map<string, OAuthAuthorizationServer<Env>>();

/** The agent's authorization server on this origin (the URL the host was given). */
export function agentAuthorizationServer(
  origin: string,
  agentId: string,
): OAuthAuthorizationServer<Env> {
  const issuer = issuerOf(origin, agentId);
  const cached = servers.get(issuer);
  if (cached) return cached;
  const server = new OAuthAuthorizationServer<Env>({
    issuer,
    resources: [mcpResourceOf(origin, agentId)],
    authorizeEndpoint: `${issuer}/oauth/authorize`,
    tokenEndpoint: `${issuer}/oauth/token`,
    clientRegistrationEndpoint: `${issuer}/oauth/register`,
    scopesSupported: [...MCP_OAUTH_SCOPES],
    accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
    // Client ID Metadata Documents stay off: the library accepts them only with the
    // global_fetch_strictly_public compatibility flag, which would also stop the worker's own
    // fetch from reaching the loopback stand-ins of development, tests and benchmarks. Hosts
    // register dynamically (RFC 7591) instead.
    clientIdMetadataDocumentEnabled: false,
    // A grant whose approving API token was revoked or expired gets no new token: invalid_grant
    // also makes the library delete the grant with its tokens. The grant's id joins its props at
    // the code exchange, so a request's principal can name it.
    tokenExchangeCallback: async ({ grantType, grantId, props, env }) => {
      const lapse = await grantApproverLapse(env, props ?? {});
      if (lapse !== null)
        throw new OAuthError("invalid_grant", {
          description: "The API token that approved this grant no longer stands",
          internal: { category: "grant-approver", reason: `approver_${lapse}` },
        });
      return grantType === "authorization_code" ? { newProps: { ...props, grantId } } : undefined;
    },
    // The library's own wording goes to the client; the failed check goes to the log, no secrets.
    onError: ({ status, code, internal }) => {
      log.warn("mcp_oauth_error", {
        agentId,
        status,
        code,
        category: internal?.category,
        reason: internal?.reason,
      });
    },
  });
  if (servers.size >= MAX_CACHED_SERVERS) {
    const oldest = servers.keys().next().value;
    if (oldest !== undefined) servers.delete(oldest);
  }
  servers.set(issuer, server);
  return server;
}

export function agentOAuthApi(env: Env, origin: string, agentId: string): OAuthHelpers {
  return agentAuthorizationServer(origin, agentId).getOAuthApi(env);
}

/** RFC 9728 metadata for the agent's MCP URL. */
export function protectedResourceMetadata(origin: string, agentId: string) {
  return {
    resource: mcpResourceOf(origin, agentId),
    authorization_servers: [issuerOf(origin, agentId)],
    scopes_supported: [...MCP_OAUTH_SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: `edge-agents agent "${agentId}"`,
  };
}

/**
 * The RFC 6750 §3 challenge a 401 or 403 from the MCP server carries (MCP authorization, RFC 9728
 * §5.1): the scopes to ask for (every MCP scope unless said), and the error, if any.
 */
export function bearerChallenge(
  origin: string,
  agentId: string,
  problem: {
    error?: "invalid_token" | "insufficient_scope";
    scopes?: readonly string[];
    description?: string;
  } = {},
): string {
  const parts = [
    'Bearer realm="edge-agents"',
    `resource_metadata="${resourceMetadataUrlOf(origin, agentId)}"`,
    `scope="${(problem.scopes ?? MCP_OAUTH_SCOPES).join(" ")}"`,
  ];
  if (problem.error) parts.push(`error="${problem.error}"`);
  if (problem.description)
    parts.push(`error_description="${problem.description.replace(/["\\]/g, "")}"`);
  return parts.join(", ");
}
