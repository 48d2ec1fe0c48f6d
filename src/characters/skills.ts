// A skill: a markdown procedure with a name and a one-line description (the Agent Skills shape:
// front matter `name` + `description`, then the body). Skills come from a character's
// `settings.skills`, from the API, and from the agent itself (a proposal a person approves). The
// same bounds hold for all three; what is saved is text the agent reads as data, never code.
import { z } from "zod";

/** Agent Skills' rule: lower-case letters, digits and '-', at most 64 characters. */
export const SKILL_NAME = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
export const SKILL_NAME_RULE =
  "1-64 lower-case letters, digits or '-', not starting or ending with '-'";
export const MAX_SKILL_DESCRIPTION_CHARS = 300;
export const MAX_SKILL_BODY_CHARS = 20_000;
/** Per character, and per agent for those added later. */
export const MAX_SKILLS = 100;

export const SkillSchema = z.strictObject(
  {
    name: z.string({ error: "expected a string" }).regex(SKILL_NAME, SKILL_NAME_RULE),
    description: z
      .string({ error: "expected a string" })
      .trim()
      .min(1, "required")
      .max(MAX_SKILL_DESCRIPTION_CHARS)
      .refine((text) => !/[\r\n]/.test(text), "one line"),
    body: z
      .string({ error: "expected a string" })
      .trim()
      .min(1, "required")
      .max(MAX_SKILL_BODY_CHARS),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "expected an object") },
);
export type Skill = z.infer<typeof SkillSchema>;

/** A character's skills: unique names. */
export const skillListSchema = z
  .array(SkillSchema)
  .max(MAX_SKILLS)
  .superRefine((skills, ctx) => {
    const seen = new Set<string>();
    skills.forEach((skill, index) => {
      if (seen.has(skill.name))
        ctx.addIssue({
          code: "custom",
          path: [index, "name"],
          message: "a skill of this name is already listed",
        });
      seen.add(skill.name);
    });
  });
