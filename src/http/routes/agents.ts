// Agents CRUD. The body of POST/PUT is a character file in either ElizaOS format; it is validated
// by the character schema (every failing path listed) rather than by a route schema, which only
// bounds its nesting, so the two formats and their portable extras are accepted as written.
// Responses never include secrets.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { parseCharacter, publicCharacter } from "../../characters/parse-character.ts";
import type { Env } from "../../env.ts";
import type { AppEnv, Principal } from "../app-env.ts";
import { assertMayActFor, guard } from "../auth.ts";
import { agentIdFor, type AgentRecord } from "../../db/stores/agent-store.ts";
import { stopAgentTasks } from "../../objects/tasks/task-client.ts";
import { ForbiddenError, NotFoundError } from "../../runtime/util/errors.ts";
import { decide } from "../../runtime/access/index.ts";
import { delegatesOf } from "../../runtime/turn/delegation.ts";
import { AgentIdParam, errorContent, jsonContent } from "../schemas.ts";
import { pathNestedDeeperThan } from "../json-depth.ts";
import { forgetAgent } from "../known-agents.ts";
import { characterKnowledge } from "../../db/memory/knowledge.ts";
import { agentData, stores } from "../../db/stores/index.ts";
import type { KnowledgeBuilder } from "../../db/stores/agent-store.ts";
import { loadTokenCounter } from "../../runtime/util/tokens.ts";
import { mcpPlatform } from "../../mcp/platform.ts";
import { assertKnownServers } from "../../mcp-registry.ts";
import { errorField, log } from "../../log.ts";
import { PLUGINS } from "../../plugins/index.ts";
import { pluginDeployment } from "../../plugins/room-plugins.ts";
import { resolvePlugins } from "../../plugins/plugin-settings.ts";
import type { Character } from "../../runtime/character.ts";
import { ValidationError } from "../../runtime/util/errors.ts";

/**
 * The file is stored as written, keys the schema does not know included, so its nesting is bounded
 * as a whole: JSON.stringify overflowed the stack (a 500) on a few thousand levels in such a key.
 * Far above what any known field allows (settings and clientConfig values nest at most 10 levels).
 */
const MAX_CHARACTER_DEPTH = 32;

const CharacterFile = z
  .record(z.string(), z.unknown())
  .superRefine((file, ctx) => {
    const path = pathNestedDeeperThan(file, MAX_CHARACTER_DEPTH);
    if (path)
      ctx.addIssue({
        code: "custom",
        path,
        message: `nested more than ${MAX_CHARACTER_DEPTH} levels deep`,
      });
  })
  .openapi("CharacterFile", {
    description:
      "An ElizaOS character file, v1 or legacy v0.x format. Our own options (model, mcpServers, toolApproval, respond, maxSteps, ...) go under `settings`.",
    example: {
      name: "Ada",
      bio: ["A precise, friendly technical helper."],
      settings: { respond: { mode: "mentions" } },
    },
  });

const AgentSummary = z
  .object({
    id: z.string(),
    name: z.string(),
    username: z.string().nullable(),
    format: z.enum(["v1", "v0"]),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi("AgentSummary");

const AgentDetail = z
  .object({
    id: z.string(),
    character: z.record(z.string(), z.unknown()).openapi({
      description: "The normalized character; secret values are replaced by `secretNames`.",
    }),
    plugins: z
      .object({
        enabled: z.array(z.string()).openapi({ description: "Plugins this agent runs" }),
        unknown: z.array(z.string()).openapi({
          description:
            "Names in the character's `plugins` this deployment has no plugin for (kept, not an error)",
        }),
      })
      .openapi({ description: "docs/plugins.md" }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi("Agent");

const characterBody = {
  required: true,
  content: { "application/json": { schema: CharacterFile } },
};

function detail(env: Env, record: AgentRecord) {
  const { enabled, unknown } = resolvePlugins(
    record.character,
    PLUGINS,
    pluginDeployment(env),
  ).report;
  return {
    id: record.id,
    character: publicCharacter(record.character),
    plugins: { enabled, unknown },
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/**
 * `settings.delegates` lets the agent run other agents' turns and tasks (with their knowledge,
 * tools and spend): only a writer who may configure each of them may name them. Configuring both
 * agents is the consent (docs/security.md).
 */
function assertMayNameDelegates(principal: Principal, character: Character): void {
  const refused = delegatesOf(character).filter(
    (agentId) => !decide(principal, "agent.write", { agentId }).allowed,
  );
  if (refused.length > 0)
    throw new ForbiddenError(
      `this token may not make this agent delegate to ${refused.map((id) => `"${id}"`).join(", ")}: settings.delegates may name only agents the token may act for (agents:write on each)`,
    );
}

export function agentRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents",
      summary: "Create an agent from a character file",
      ...guard("agents:write"),
      request: { body: characterBody },
      responses: {
        201: jsonContent(AgentDetail, "The agent, as stored"),
        400: errorContent(
          "The character file is invalid; `details.issues` lists every failing path",
        ),
        403: errorContent(
          "The token may not act for this agent, or for an agent named in `settings.delegates`",
        ),
        409: errorContent("An agent with this id already exists"),
      },
    }),
    async (c) => {
      const file = c.req.valid("json");
      const principal = c.get("principal");
      const character = parseCharacter(file);
      assertPluginSettings(c.env, character);
      // A token limited to some agents may create only those: the id must be known before writing.
      if (principal.agents !== null) assertMayActFor(principal, agentIdFor(character));
      assertMayNameDelegates(principal, character);
      // A new agent has no servers of its own yet: it may name only mcp-servers.json's.
      assertKnownServers(character.settings.mcpServers);
      const now = Date.now();
      const record = await stores(c.env).agents.create(file, now, knowledgeBuilder(now));
      await embedAgentMemories(c.env, record.id);
      c.header("Location", `/agents/${record.id}`);
      return c.json(detail(c.env, record), 201);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents",
      summary: "List agents",
      ...guard("agents:read"),
      request: {
        query: z.strictObject({
          limit: z.coerce.number().int().min(1).max(100).default(50),
          after: AgentIdParam.optional().openapi({
            param: { name: "after", in: "query" },
            description: "Cursor: the last id of the previous page",
          }),
        }),
      },
      responses: {
        200: jsonContent(
          z.object({ agents: z.array(AgentSummary), nextCursor: z.string().nullable() }),
          "A page of agents, by id",
        ),
      },
    }),
    async (c) => {
      const { limit, after } = c.req.valid("query");
      const only = c.get("principal").agents ?? undefined;
      return c.json(await stores(c.env).agents.list({ limit, after, only }), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}",
      summary: "Get an agent",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam }) },
      responses: { 200: jsonContent(AgentDetail, "The agent"), 404: errorContent("No such agent") },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const record = await stores(c.env).agents.get(agentId);
      if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
      return c.json(detail(c.env, record), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/agents/{agentId}",
      summary: "Replace an agent's character",
      ...guard("agents:write"),
      request: { params: z.object({ agentId: AgentIdParam }), body: characterBody },
      responses: {
        200: jsonContent(AgentDetail, "The updated agent"),
        400: errorContent("The character file is invalid"),
        403: errorContent("The token may not act for an agent named in `settings.delegates`"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const file = c.req.valid("json");
      const own = await mcpPlatform(c.env).servers.list(agentId);
      const character = parseCharacter(file);
      assertPluginSettings(c.env, character);
      assertMayNameDelegates(c.get("principal"), character);
      assertKnownServers(
        character.settings.mcpServers,
        own.map((server) => server.name),
      );
      const now = Date.now();
      const record = await stores(c.env).agents.replace(agentId, file, now, knowledgeBuilder(now));
      await embedAgentMemories(c.env, record.id);
      return c.json(detail(c.env, record), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}",
      summary: "Delete an agent with its memories, rooms and relationships",
      ...guard("agents:write"),
      request: { params: z.object({ agentId: AgentIdParam }) },
      responses: { 204: { description: "Deleted" }, 404: errorContent("No such agent") },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      forgetAgent(agentId);
      // Where its memories are, read before the catalog forgets it.
      const data = await agentData(c.env, agentId);
      if (!(await stores(c.env).agents.remove(agentId)))
        throw new NotFoundError(`no agent with id "${agentId}"`);
      // Its schedules must not keep starting tasks for an agent that is gone.
      await stopAgentTasks(c.env, agentId).catch((error: unknown) =>
        logWarning("agent_tasks_stop_failed", error),
      );
      // The agent's vectors go too: the local index by cascade, Vectorize through the outbox.
      await data.pipeline
        .sweepDeletions()
        .catch((error: unknown) => logWarning("vector_sweep_failed", error));
      return c.body(null, 204);
    },
  );

  return app;
}

/** `settings.plugins.<name>` checked by each plugin's schema, every bad path listed. */
function assertPluginSettings(env: Env, character: Character): void {
  const { issues } = resolvePlugins(character, PLUGINS, pluginDeployment(env)).report;
  if (issues.length > 0) throw new ValidationError("invalid character file", { issues });
}

/** The character's `knowledge` text entries, chunked, stored with the agent in one batch. */
function knowledgeBuilder(now: number): KnowledgeBuilder {
  return async (agentId, character) =>
    characterKnowledge(await loadTokenCounter(), agentId, character, now);
}

/** Lore and knowledge get their vectors now when they can; what fails stays pending (found by text). */
async function embedAgentMemories(env: Env, agentId: string): Promise<void> {
  await (await agentData(env, agentId)).pipeline
    .embedPending({ agentId, maxBatches: 5 })
    .catch((error: unknown) => logWarning("agent_embedding_failed", error));
}

function logWarning(msg: string, error: unknown): void {
  log.warn(msg, { error: errorField(error) });
}
