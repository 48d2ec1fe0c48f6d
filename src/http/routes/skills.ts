// An agent's skills: markdown procedures with a name and a one-line description
// (docs/skills.md). Listing shows the character's own (`settings.skills`, changed by editing the
// character) and those added later; these routes add, replace and delete the latter. Every
// change bumps the agent's version, so its rooms list the new skills on their next turn.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import {
  MAX_SKILL_BODY_CHARS,
  MAX_SKILL_DESCRIPTION_CHARS,
  SKILL_NAME,
  SKILL_NAME_RULE,
  SkillSchema,
} from "../../characters/skills.ts";
import { stores } from "../../db/stores/index.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../runtime/util/errors.ts";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { AgentIdParam, errorContent, jsonContent } from "../schemas.ts";

const SkillName = z.string().regex(SKILL_NAME, SKILL_NAME_RULE);
const SkillNameParam = SkillName.openapi({
  param: { name: "name", in: "path" },
  example: "weekly-report",
});

const SkillBody = z
  .strictObject({
    name: SkillName,
    description: z.string().min(1).max(MAX_SKILL_DESCRIPTION_CHARS),
    body: z.string().min(1).max(MAX_SKILL_BODY_CHARS),
  })
  .openapi("SkillRequest", {
    example: {
      name: "weekly-report",
      description: "Write the Monday status report from the team's notes.",
      body: "1. Read the notes of the past week.\n2. Group them by project.\n3. ...",
    },
  });

const SkillSource = z.enum(["character", "api", "agent"]);
const SkillSummary = z
  .object({ name: z.string(), description: z.string(), source: SkillSource })
  .openapi("SkillSummary");
const SkillView = SkillSummary.extend({ body: z.string() }).openapi("Skill");

const params = z.object({ agentId: AgentIdParam });
const nameParams = z.object({ agentId: AgentIdParam, name: SkillNameParam });

async function characterSkills(env: AppEnv["Bindings"], agentId: string) {
  const record = await stores(env).agents.get(agentId);
  if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
  return record.character.settings.skills;
}

export function skillRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/skills",
      summary: "The agent's skills by name and description (the character's, then those added)",
      ...guard("agents:read"),
      request: { params },
      responses: {
        200: jsonContent(z.object({ skills: z.array(SkillSummary) }), "Every skill"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const own = await characterSkills(c.env, agentId);
      const added = await stores(c.env).skills.list(agentId);
      const skills = [
        ...own.map(({ name, description }) => ({
          name,
          description,
          source: "character" as const,
        })),
        ...added.map(({ name, description, source }) => ({ name, description, source })),
      ];
      return c.json({ skills }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/skills/{name}",
      summary: "One skill with its body",
      ...guard("agents:read"),
      request: { params: nameParams },
      responses: {
        200: jsonContent(SkillView, "The skill"),
        404: errorContent("No such agent or skill"),
      },
    }),
    async (c) => {
      const { agentId, name } = c.req.valid("param");
      const own = (await characterSkills(c.env, agentId)).find((skill) => skill.name === name);
      if (own) return c.json({ ...own, source: "character" as const }, 200);
      const added = await stores(c.env).skills.get(agentId, name);
      if (!added) throw new NotFoundError(`agent "${agentId}" has no skill "${name}"`);
      const { description, body, source } = added;
      return c.json({ name, description, body, source }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/skills",
      summary: "Add a skill to the agent, or replace one added before",
      ...guard("agents:write"),
      request: {
        params,
        body: { required: true, content: { "application/json": { schema: SkillBody } } },
      },
      responses: {
        201: jsonContent(SkillView, "Added"),
        200: jsonContent(SkillView, "Replaced"),
        400: errorContent("Invalid skill"),
        404: errorContent("No such agent"),
        409: errorContent(
          "The character defines a skill of this name, or the agent has 100 skills",
        ),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const parsed = SkillSchema.safeParse(c.req.valid("json"));
      if (!parsed.success)
        throw new ValidationError("invalid skill", {
          issues: parsed.error.issues.map((issue) => ({
            path: issue.path.join("."),
            message: issue.message,
          })),
        });
      const skill = parsed.data;
      if ((await characterSkills(c.env, agentId)).some((own) => own.name === skill.name))
        throw new ConflictError(
          `the character defines the skill "${skill.name}"; change it there (PUT /agents/${agentId})`,
        );
      const now = Date.now();
      const added = await stores(c.env).skills.put(agentId, skill, { source: "api", now });
      await stores(c.env).agents.touch(agentId, now);
      c.header("Location", `/agents/${agentId}/skills/${skill.name}`);
      return c.json({ ...skill, source: "api" as const }, added ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/skills/{name}",
      summary: "Delete a skill added to the agent",
      ...guard("agents:write"),
      request: { params: nameParams },
      responses: {
        204: { description: "Deleted" },
        404: errorContent("No such agent or skill"),
        409: errorContent("The skill comes from the character file"),
      },
    }),
    async (c) => {
      const { agentId, name } = c.req.valid("param");
      if ((await characterSkills(c.env, agentId)).some((own) => own.name === name))
        throw new ConflictError(
          `the skill "${name}" comes from the character file; change it there (PUT /agents/${agentId})`,
        );
      if (!(await stores(c.env).skills.remove(agentId, name)))
        throw new NotFoundError(`agent "${agentId}" has no skill "${name}"`);
      await stores(c.env).agents.touch(agentId, Date.now());
      return c.body(null, 204);
    },
  );

  return app;
}
