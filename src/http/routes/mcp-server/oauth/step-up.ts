// Step-up authorization for MCP hosts (MCP authorization, "Scope Challenge Handling"; RFC 6750
// §3.1): an OAuth grant is shown every tool its agent's MCP server has, and calling one it lacks
// the scope for is answered 403 with a Bearer challenge `error="insufficient_scope"` naming the
// scopes to ask for (what the grant holds plus what the call needs), before the call reaches the
// server. The host then asks the operator for a new grant with them; the consent page still grants
// no more than the approving API token holds. An API token cannot re-authorize, so it is shown only
// the tools it may call (agent-server.ts), as before.
import { type Action, decide, type Principal, scopeOf } from "../../../../runtime/access/index.ts";
import { bearerChallenge, MCP_OAUTH_SCOPES } from "./authorization-server.ts";
import { GRANT_PRINCIPAL_PREFIX } from "./grant-principal.ts";

/** Whether the principal is an OAuth grant, which a host can step up. */
export function isGrant(principal: Principal): boolean {
  return principal.kind === "token" && principal.id.startsWith(GRANT_PRINCIPAL_PREFIX);
}

/**
 * The scope a grant lacks for `action` on `agentId`, when that scope is all it lacks and an MCP
 * host may be granted it; else null (the action is allowed, or refused for another reason).
 */
export function missingGrantScope(
  principal: Principal,
  action: Action,
  agentId: string,
): (typeof MCP_OAUTH_SCOPES)[number] | null {
  if (principal.kind !== "token" || !isGrant(principal)) return null;
  const scope = scopeOf(action);
  if (!MCP_OAUTH_SCOPES.some((grantable) => grantable === scope)) return null;
  if (decide(principal, action, { agentId }).allowed) return null;
  const widened = { ...principal, scopes: [...principal.scopes, scope] };
  return decide(widened, action, { agentId }).allowed
    ? (scope as (typeof MCP_OAUTH_SCOPES)[number])
    : null;
}

/** The tools/call names of a JSON-RPC body (one message or a batch); [] when it holds none. */
export function calledTools(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  const names: string[] = [];
  for (const message of messages) {
    if (typeof message !== "object" || message === null) continue;
    const { method, params } = message as { method?: unknown; params?: unknown };
    if (method !== "tools/call" || typeof params !== "object" || params === null) continue;
    const name = (params as { name?: unknown }).name;
    if (typeof name === "string") names.push(name);
  }
  return names;
}

/**
 * The 403 for a call a grant lacks `missing` for: the challenge asks for what the grant holds and
 * what is missing, in MCP_OAUTH_SCOPES' order, so the new grant loses nothing the old one had.
 */
export function insufficientScope(
  origin: string,
  agentId: string,
  principal: Principal,
  missing: string[],
): Response {
  const held = principal.kind === "token" ? principal.scopes : [];
  const scopes = MCP_OAUTH_SCOPES.filter((s) => held.includes(s) || missing.includes(s));
  const message = `this grant lacks the ${missing.map((s) => `\`${s}\``).join(", ")} scope for the tool called: authorize again with it`;
  return new Response(JSON.stringify({ error: { code: "forbidden", message } }), {
    status: 403,
    headers: {
      "content-type": "application/json",
      "www-authenticate": bearerChallenge(origin, agentId, {
        error: "insufficient_scope",
        scopes,
        description: message,
      }),
    },
  });
}
