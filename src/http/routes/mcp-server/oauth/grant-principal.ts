// An OAuth access token on an agent's MCP server, as the principal every check asks about: the
// agent's authorization server validates it (hash lookup in OAUTH_KV, audience = this agent's MCP
// URL, props decrypted with a key only the token unwraps), then its grant's props become a token
// principal limited to that one agent, the scopes the operator approved (no more than the
// approving API token had) and that token's user prefix, while that token stands (not revoked
// or expired: grant-approver.ts). From there it is an API token like any other: the same rate
// bucket rule, the same scope, agent and tenant checks.
import type { Context } from "hono";
import { z } from "zod";
import { loadConfig } from "../../../../config.ts";
import { TOKEN_PREFIX } from "../../../../db/stores/token-store.ts";
import { SCOPES } from "../../../../runtime/access/index.ts";
import type { AppEnv, Principal } from "../../../app-env.ts";
import { bearerOf, keepAliveOf } from "../../../auth.ts";
import { errorField, log } from "../../../../log.ts";
import { agentAuthorizationServer, agentOAuthApi, mcpResourceOf } from "./authorization-server.ts";
import { type ApproverLapse, grantApproverLapse } from "./grant-approver.ts";

/** What the consent stores in a grant (encrypted at rest by the library). */
export const GrantProps = z.object({
  agentId: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  userPrefix: z.string().nullable(),
  /** The API token whose holder approved the grant. */
  approvedBy: z.string(),
  /** Added at the code exchange (authorization-server.ts). */
  grantId: z.string().optional(),
});
export type GrantProps = z.infer<typeof GrantProps>;

/** The library's tokens are `<userId>:<grantId>:<secret>`; API tokens and ADMIN_TOKEN are read as such. */
const OAUTH_TOKEN_SHAPE = /^[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/;

/** The principal prefix of grants, beside `tok_` for minted tokens. */
export const GRANT_PRINCIPAL_PREFIX = "grant_";

/**
 * The principal an OAuth access token on this agent's MCP URL stands for, or null when the
 * header holds no such token (an API token, ADMIN_TOKEN, nothing, or an access token that is not
 * valid here: expired, revoked, another agent's, or of a grant whose approving token was revoked
 * or expired), which the API-token check then refuses.
 */
export async function oauthPrincipal(c: Context<AppEnv>): Promise<Principal | null> {
  const given = bearerOf(c);
  if (!given || given.startsWith(TOKEN_PREFIX) || !OAUTH_TOKEN_SHAPE.test(given)) return null;
  const agentId = c.req.param("agentId");
  if (!agentId) return null;
  const origin = new URL(c.req.url).origin;
  const server = agentAuthorizationServer(origin, agentId);
  const validated = await server.validateToken(mcpResourceOf(origin, agentId), given, c.env);
  if (!validated) return null;
  const props = GrantProps.safeParse(validated.props);
  // A grant this code did not write (or an older shape) stands for nobody.
  if (!props.success || !props.data.grantId) return null;
  const lapse = await grantApproverLapse(c.env, props.data);
  if (lapse !== null) {
    endGrant(c, agentId, props.data.grantId, lapse);
    return null;
  }
  return principalOfGrant(c, props.data, validated.scope);
}

/** A grant whose approver lapsed is deleted with its tokens, after the refused request. */
function endGrant(c: Context<AppEnv>, agentId: string, grantId: string, lapse: ApproverLapse) {
  log.info("mcp_grant_ended", { agentId, grantId, approver: lapse });
  const oauth = agentOAuthApi(c.env, new URL(c.req.url).origin, agentId);
  const ended = oauth
    .revokeGrant(grantId, agentId)
    .catch((error: unknown) =>
      log.warn("mcp_grant_end_failed", { agentId, grantId, error: errorField(error) }),
    );
  keepAliveOf(c)?.(ended);
}

function principalOfGrant(c: Context<AppEnv>, props: GrantProps, tokenScope: string[]): Principal {
  // A token may carry fewer scopes than its grant (a narrowed refresh), never more.
  const scopes = props.scopes.filter((scope) => tokenScope.includes(scope));
  return {
    kind: "token",
    id: `${GRANT_PRINCIPAL_PREFIX}${props.grantId}`,
    scopes,
    agents: [props.agentId],
    userPrefix: props.userPrefix,
    rateRule: loadConfig(c.env).rateLimits.perToken,
  };
}
