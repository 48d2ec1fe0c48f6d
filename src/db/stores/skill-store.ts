// Skills added to one agent after its character was written (POST /agents/:agentId/skills, or an
// approved save_skill proposal), in D1. Each row is checked against the skill schema on the way
// back. The character's own `settings.skills` are not copied here: a stored skill may not take a
// name the character uses (the callers check, since only they hold the character).
import { and, asc, count, eq } from "drizzle-orm";
import { MAX_SKILLS, SkillSchema, type Skill } from "../../characters/skills.ts";
import { ConflictError } from "../../runtime/util/errors.ts";
import type { Db } from "../db.ts";
import { InternalError } from "../../runtime/util/errors.ts";
import { agentSkills } from "../schema.ts";

export interface StoredSkill extends Skill {
  source: "api" | "agent";
  proposalId: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface SkillStore {
  list(agentId: string): Promise<StoredSkill[]>;
  get(agentId: string, name: string): Promise<StoredSkill | null>;
  /** Adds or replaces a skill; true when it was new. Refuses the MAX_SKILLS+1st. */
  put(
    agentId: string,
    skill: Skill,
    meta: { source: "api" | "agent"; proposalId?: string | null; now: number },
  ): Promise<boolean>;
  remove(agentId: string, name: string): Promise<boolean>;
}

export function createSkillStore(db: Db): SkillStore {
  const toSkill = (row: typeof agentSkills.$inferSelect): StoredSkill => {
    const parsed = SkillSchema.safeParse({
      name: row.name,
      description: row.description,
      body: row.body,
    });
    if (!parsed.success)
      throw new InternalError(
        `agent_skills row ${row.agentId}/${row.name} does not have the expected shape`,
      );
    return {
      ...parsed.data,
      source: row.source,
      proposalId: row.proposalId,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  };
  const where = (agentId: string, name: string) =>
    and(eq(agentSkills.agentId, agentId), eq(agentSkills.name, name));
  return {
    async list(agentId) {
      const rows = await db
        .select()
        .from(agentSkills)
        .where(eq(agentSkills.agentId, agentId))
        .orderBy(asc(agentSkills.name));
      return rows.map(toSkill);
    },
    async get(agentId, name) {
      const row = await db.select().from(agentSkills).where(where(agentId, name)).get();
      return row ? toSkill(row) : null;
    },
    async put(agentId, skill, meta) {
      const existing = await db
        .select({ createdAt: agentSkills.createdAt })
        .from(agentSkills)
        .where(where(agentId, skill.name))
        .get();
      if (!existing) {
        const total = await db
          .select({ n: count() })
          .from(agentSkills)
          .where(eq(agentSkills.agentId, agentId))
          .get();
        if ((total?.n ?? 0) >= MAX_SKILLS)
          throw new ConflictError(
            `agent "${agentId}" already has ${MAX_SKILLS} skills; delete one first`,
          );
      }
      const values = {
        agentId,
        name: skill.name,
        description: skill.description,
        body: skill.body,
        source: meta.source,
        proposalId: meta.proposalId ?? null,
        createdAt: existing?.createdAt ?? meta.now,
        updatedAt: meta.now,
      };
      await db
        .insert(agentSkills)
        .values(values)
        .onConflictDoUpdate({
          target: [agentSkills.agentId, agentSkills.name],
          set: {
            description: values.description,
            body: values.body,
            source: values.source,
            proposalId: values.proposalId,
            updatedAt: values.updatedAt,
          },
        });
      return !existing;
    },
    async remove(agentId, name) {
      const removed = await db
        .delete(agentSkills)
        .where(where(agentId, name))
        .returning({ name: agentSkills.name });
      return removed.length > 0;
    },
  };
}
