// The operator's view of the OAuth grants MCP hosts hold on an agent: list them (with whether the
// API token that approved each still stands: grant-approver.ts), revoke one. A grant's user in
// the library is its agent (consent.ts), so listing is by agent; revoking deletes the grant with
// its access and refresh tokens at once (the next MCP request with them is a 401).
// A host can also revoke its own tokens at the token endpoint (RFC 7009). Grants follow the task
// rule of tenants: a token sees and revokes those approved for its own user prefix (admin: all).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { GrantSummary, OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { NotFoundError } from "../../../../runtime/util/errors.ts";
import { isAdminToken } from "../../../../runtime/access/index.ts";
import type { AppEnv, Principal } from "../../../app-env.ts";
import { guard } from "../../../auth.ts";
import { assertAgentExists } from "../../../known-agents.ts";
import { AgentIdParam, errorContent, jsonContent } from "../../../schemas.ts";
import { agentOAuthApi } from "./authorization-server.ts";
import { APPROVER_LAPSES, grantApproverLapse } from "./grant-approver.ts";

/** The library pages its listing; an agent with more grants than this is listed over several reads. */
const GRANTS_PAGE = 1000;

const GrantIdParam = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/)
  .openapi({ param: { name: "grantId", in: "path" }, example: "a1B2c3D4e5F6g7H8" });

const GrantInfo = z
  .object({
    id: z.string(),
    clientId: z.string(),
    clientName: z.string().nullable(),
    scopes: z.array(z.string()),
    approvedBy: z.string().nullable().openapi({ description: "The API token that approved it." }),
    approverLapse: z.enum(APPROVER_LAPSES).nullable().openapi({
      description:
        "Null while the approving token stands; else why it does not (revoked, expired, unknown, or no longer for this agent): the grant then works no more, and is deleted at its next use.",
    }),
    redirectUri: z.string().nullable(),
    createdAt: z.number().int().openapi({ description: "Milliseconds since the epoch." }),
    expiresAt: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "When its refresh token stops working (milliseconds)." }),
  })
  .openapi("McpOAuthGrant");

export function mcpGrantRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/mcp/grants",
      summary: "List the OAuth grants MCP hosts hold on this agent's MCP server",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam }) },
      responses: {
        200: jsonContent(z.object({ grants: z.array(GrantInfo) }), "The agent's grants"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      const oauth = agentOAuthApi(c.env, new URL(c.req.url).origin, agentId);
      const principal = c.get("principal");
      const listed = (await allGrants(oauth, agentId)).filter((grant) =>
        ofTenant(principal, grant),
      );
      const grants = await Promise.all(
        listed.map(async (grant) => {
          const info = grantInfo(grant);
          const lapse = await grantApproverLapse(c.env, {
            approvedBy: info.approvedBy ?? undefined,
            agentId,
          });
          return { ...info, approverLapse: lapse };
        }),
      );
      return c.json({ grants }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/mcp/grants/{grantId}",
      summary: "Revoke an MCP host's OAuth grant, with its access and refresh tokens",
      ...guard("agents:write"),
      request: { params: z.object({ agentId: AgentIdParam, grantId: GrantIdParam }) },
      responses: {
        204: { description: "Revoked" },
        404: errorContent("No such agent, or no such grant on it"),
      },
    }),
    async (c) => {
      const { agentId, grantId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      const oauth = agentOAuthApi(c.env, new URL(c.req.url).origin, agentId);
      const principal = c.get("principal");
      const grants = await allGrants(oauth, agentId);
      if (!grants.some((grant) => grant.id === grantId && ofTenant(principal, grant)))
        throw new NotFoundError(`agent "${agentId}" has no OAuth grant "${grantId}"`);
      await oauth.revokeGrant(grantId, agentId);
      return c.body(null, 204);
    },
  );
  return app;
}

async function allGrants(oauth: OAuthHelpers, agentId: string): Promise<GrantSummary[]> {
  const grants: GrantSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(agentId, { limit: GRANTS_PAGE, cursor });
    grants.push(...page.items);
    cursor = page.cursor;
  } while (cursor);
  return grants;
}

const Metadata = z
  .object({
    approvedBy: z.string(),
    userPrefix: z.string().nullable(),
    clientName: z.string().nullable(),
  })
  .partial();

/** Admin sees every grant; another token those approved with its own user prefix (or none). */
function ofTenant(principal: Principal, grant: GrantSummary): boolean {
  if (isAdminToken(principal)) return true;
  const metadata = Metadata.safeParse(grant.metadata);
  const tenant = metadata.success ? (metadata.data.userPrefix ?? null) : null;
  return tenant === principal.userPrefix;
}

function grantInfo(grant: GrantSummary): Omit<z.infer<typeof GrantInfo>, "approverLapse"> {
  const metadata = Metadata.safeParse(grant.metadata);
  return {
    id: grant.id,
    clientId: grant.clientId,
    clientName: (metadata.success ? metadata.data.clientName : null) ?? null,
    scopes: grant.scope,
    approvedBy: (metadata.success ? metadata.data.approvedBy : null) ?? null,
    redirectUri: grant.redirectUri ?? null,
    // The library counts seconds; this API counts milliseconds.
    createdAt: grant.createdAt * 1000,
    expiresAt: grant.expiresAt === undefined ? null : grant.expiresAt * 1000,
  };
}
