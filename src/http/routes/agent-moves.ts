// Moving an agent to another database (docs/scaling.md): `POST /agents/:agentId/move` starts a
// move (`{"to":"MEMORY_DB_2"}`) or continues the one under way by one bounded step, `GET` says
// where it stands, `DELETE` rolls back a move that has not switched yet. `npm run memory -- move`
// calls them until the move is done. The deployment's databases are the operator's: admin only.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { abortMove, readMove, stepMove } from "../../db/moves/agent-move.ts";
import { stores } from "../../db/stores/index.ts";
import { NotFoundError } from "../../runtime/util/errors.ts";
import { AgentIdParam, errorContent, jsonContent } from "../schemas.ts";

const Pass = z.object({
  changed: z
    .number()
    .int()
    .openapi({ description: "Rows this pass wrote or deleted in the new home" }),
  sourceRows: z.number().int(),
  targetRows: z.number().int(),
  sourceChain: z
    .string()
    .openapi({ description: "Hash chain of the old home's rows, page by page" }),
  targetChain: z.string(),
});

const MoveProgress = z
  .object({
    agentId: z.string(),
    source: z.string(),
    target: z.string(),
    phase: z.enum(["copy", "catchup", "sync", "verify", "cleanup", "rollback", "done"]),
    table: z.string().nullable(),
    pass: Pass,
    startedAt: z.number().int(),
    fencedAt: z.number().int().nullable().openapi({
      description: "When the old home stopped taking the agent's writes (ms since the epoch)",
    }),
    switchedAt: z.number().int().nullable(),
  })
  .openapi("MoveProgress");

const Params = z.object({ agentId: AgentIdParam });

export function agentMoveRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/move",
      summary: "Move an agent's memories to another database, one step per call",
      ...guard("admin"),
      request: {
        params: Params,
        body: {
          required: false,
          content: {
            "application/json": {
              schema: z.strictObject({
                to: z.string().max(32).optional().openapi({
                  description: "DB or MEMORY_DB_<n>; needed to start, optional to continue",
                }),
                pages: z.number().int().min(1).max(1000).optional().openapi({
                  description: "At most this many pages (200 rows each) in this step",
                }),
              }),
            },
          },
        },
      },
      responses: {
        200: jsonContent(MoveProgress, "Where the move stands after this step"),
        400: errorContent("Not a database name"),
        404: errorContent("No such agent, or no move under way and no `to`"),
        409: errorContent("The agent already lives there, or is being moved elsewhere"),
        503: errorContent("That database is not bound to this worker"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.header("content-type") ? c.req.valid("json") : {};
      const progress = await stepMove(c.env, agentId, body.to, body.pages);
      // This isolate reads the new home at once; others within PLACEMENT_CACHE_MS.
      if (progress.phase === "cleanup" || progress.phase === "done")
        stores(c.env).placement.forget(agentId);
      return c.json(progress, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/move",
      summary: "Where an agent's move stands",
      ...guard("admin"),
      request: { params: Params },
      responses: {
        200: jsonContent(MoveProgress, "The move under way"),
        404: errorContent("No move under way"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const progress = await readMove(c.env, agentId);
      if (!progress) throw new NotFoundError(`agent "${agentId}" is not being moved`);
      return c.json(progress, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/move",
      summary: "Roll back a move that has not switched yet, one step per call",
      ...guard("admin"),
      request: { params: Params },
      responses: {
        200: jsonContent(MoveProgress, "Where the roll-back stands (`done` when finished)"),
        404: errorContent("No move under way"),
        409: errorContent("The move already switched: move the agent back instead"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      return c.json(await abortMove(c.env, agentId), 200);
    },
  );

  return app;
}
