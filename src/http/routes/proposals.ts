// An agent's proposals: the changes it asked for (a skill to keep, an MCP server from the
// catalog), and a person's answer. Listing needs `agents:read`; deciding needs `agents:write`
// for a skill and `tools:write` for a tool (the same scopes that make those changes directly).
// Approving a tool starts its authorization like POST /agents/:agentId/tools does.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { describeServers } from "../../mcp/overview.ts";
import { mcpPlatform } from "../../mcp/platform.ts";
import { findServer } from "../../mcp-registry.ts";
import type { Proposal } from "../../db/stores/proposal-store.ts";
import { stores } from "../../db/stores/index.ts";
import { PROPOSAL_STATUSES } from "../../db/schema.ts";
import { proposalDesk } from "../../plugins/room-plugins.ts";
import { NotFoundError } from "../../runtime/util/errors.ts";
import type { AppEnv } from "../app-env.ts";
import { assertScope, guard, guardAnyOf } from "../auth.ts";
import { AgentIdParam, errorContent, jsonContent } from "../schemas.ts";

const ProposalIdParam = z
  .string()
  .regex(/^[0-9a-f]{16}$/, "16 hex characters")
  .openapi({ param: { name: "proposalId", in: "path" }, example: "0123456789abcdef" });

const ProposalView = z
  .object({
    id: z.string(),
    agentId: z.string(),
    kind: z.enum(["skill", "tool"]),
    status: z.enum(PROPOSAL_STATUSES),
    change: z.record(z.string(), z.unknown()).openapi({
      description:
        '`{kind: "skill", skill: {name, description, body}}` or `{kind: "tool", server, reason}`',
    }),
    origin: z.object({
      surface: z.string(),
      roomId: z.string(),
      userId: z.string(),
      turnId: z.string(),
    }),
    createdAt: z.int(),
    decidedAt: z.int().nullable(),
    decidedBy: z.string().nullable(),
  })
  .openapi("Proposal");

const Decision = z.strictObject({ approve: z.boolean() }).openapi("ProposalDecision");

function view(proposal: Proposal) {
  return { ...proposal, kind: proposal.change.kind };
}

export function proposalRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/proposals",
      summary: "What the agent asked to change about itself, newest first",
      ...guard("agents:read"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        query: z.strictObject({
          status: z.enum(PROPOSAL_STATUSES).optional(),
          limit: z.coerce.number().int().min(1).max(100).default(50),
          before: z.coerce.number().int().min(0).optional().openapi({
            description: "Cursor: the createdAt of the last proposal of the previous page",
          }),
        }),
      },
      responses: {
        200: jsonContent(
          z.object({ proposals: z.array(ProposalView), nextCursor: z.int().nullable() }),
          "A page of proposals",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const { status, limit, before } = c.req.valid("query");
      if ((await stores(c.env).agents.version(agentId)) === null)
        throw new NotFoundError(`no agent with id "${agentId}"`);
      const page = await stores(c.env).proposals.list(agentId, {
        limit: limit + 1,
        ...(status ? { status } : {}),
        ...(before !== undefined ? { before } : {}),
      });
      const shown = page.slice(0, limit);
      return c.json(
        {
          proposals: shown.map(view),
          nextCursor: page.length > limit ? (shown.at(-1)?.createdAt ?? null) : null,
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/proposals/{proposalId}",
      summary:
        "Approve or deny a proposal (a skill needs agents:write, a tool needs tools:write); approving applies it",
      ...guardAnyOf(["agents:write", "tools:write"]),
      request: {
        params: z.object({ agentId: AgentIdParam, proposalId: ProposalIdParam }),
        body: { required: true, content: { "application/json": { schema: Decision } } },
      },
      responses: {
        200: jsonContent(
          z.object({
            proposal: ProposalView,
            applied: z.string().nullable().openapi({ description: "What approving did" }),
            authUrl: z.string().optional().openapi({
              description: "An approved OAuth server waits for consent here (as POST .../tools)",
            }),
          }),
          "The proposal as decided",
        ),
        403: errorContent("The token lacks the scope this kind of proposal needs"),
        404: errorContent("No such agent or proposal"),
        409: errorContent("Already decided, or the change can no longer be applied"),
      },
    }),
    async (c) => {
      const { agentId, proposalId } = c.req.valid("param");
      const { approve } = c.req.valid("json");
      const principal = c.get("principal");
      const proposal = await stores(c.env).proposals.get(agentId, proposalId);
      if (!proposal) throw new NotFoundError(`agent "${agentId}" has no proposal "${proposalId}"`);
      const kind = proposal.change.kind;
      assertScope(
        principal,
        kind === "skill" ? "agents:write" : "tools:write",
        `deciding a ${kind} proposal`,
      );
      const decision = await proposalDesk(c.env).decide(
        agentId,
        proposalId,
        approve,
        `token:${principal.id}`,
      );
      const change = decision.proposal.change;
      let authUrl: string | undefined;
      if (decision.proposal.status === "approved" && change.kind === "tool") {
        // An OAuth server asks for consent now, as when a person adds it themselves.
        const platform = mcpPlatform(c.env, new URL(c.req.url).origin);
        const entry = findServer(change.server, await platform.servers.list(agentId));
        const [described] = await describeServers(platform, agentId, [entry], {
          probe: true,
          startAuthorization: true,
          now: Date.now,
        });
        authUrl = described?.authUrl;
      }
      return c.json(
        {
          proposal: view(decision.proposal),
          applied: decision.applied,
          ...(authUrl ? { authUrl } : {}),
        },
        200,
      );
    },
  );

  return app;
}
