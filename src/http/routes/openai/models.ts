// GET /v1/models: the agents a token may use, as OpenAI's model list, so a client's model picker
// shows them. Each listed agent is one the principal check (src/runtime/access/) lets this token
// talk to or read; a token limited to some agents sees only those.
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { stores } from "../../../db/stores/index.ts";
import { decide } from "../../../runtime/access/index.ts";
import type { AppEnv } from "../../app-env.ts";
import { guardAnyOf } from "../../auth.ts";
import { jsonContent } from "../../schemas.ts";
import { openAIErrorContent } from "./openai-errors.ts";

/** One page of the agent store at a time; a deployment with more agents lists the first ones. */
const PAGE = 100;
export const MAX_LISTED_MODELS = 1_000;
/** What `owned_by` says of every agent: they belong to this deployment. */
export const OWNED_BY = "edge-agents";

const Model = z.object({
  id: z.string().openapi({ description: "The agent id: send it as `model`", example: "ada" }),
  object: z.literal("model"),
  created: z.number().int().openapi({ description: "When the agent was created, unix seconds" }),
  owned_by: z.string(),
  name: z.string().openapi({ description: "The character's name" }),
});

export function registerModelRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/models",
      summary: "The agents this token may use, as OpenAI-compatible models",
      ...guardAnyOf(["agents:read", "messages:write"]),
      responses: {
        200: jsonContent(
          z.object({ object: z.literal("list"), data: z.array(Model) }).openapi("ModelList"),
          "The agents, by id",
        ),
        401: openAIErrorContent("No valid bearer token"),
        403: openAIErrorContent("The token has neither `agents:read` nor `messages:write`"),
      },
    }),
    async (c) => {
      const principal = c.get("principal");
      const agents = stores(c.env).agents;
      const data: z.infer<typeof Model>[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < MAX_LISTED_MODELS / PAGE; pages++) {
        const page = await agents.list({
          limit: PAGE,
          after,
          only: principal.agents ?? undefined,
        });
        for (const agent of page.agents) {
          const target = { agentId: agent.id };
          if (
            !decide(principal, "message.send", target).allowed &&
            !decide(principal, "agent.read", target).allowed
          )
            continue;
          data.push({
            id: agent.id,
            object: "model",
            created: Math.floor(agent.createdAt / 1000),
            owned_by: OWNED_BY,
            name: agent.name,
          });
        }
        if (page.nextCursor === null) break;
        after = page.nextCursor;
      }
      return c.json({ object: "list" as const, data }, 200);
    },
  );
}
