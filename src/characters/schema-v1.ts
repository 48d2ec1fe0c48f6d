// zod schema for ElizaOS v1 character files (the `Character` type in elizaOS/eliza
// packages/core/src/types/agent.ts). The legacy v0.x schema extends it, so the parts both formats
// share live here. Unknown top-level keys are stripped, not rejected, so newer files still load.

import { z } from "zod";
import {
  MAX_ARRAY_ENTRIES,
  MAX_NAME_CHARS,
  boundedArray,
  boundedRecord,
  boundedString,
  stringList,
} from "./limits.ts";
import { secretsSchema, settingsSchema } from "./settings.ts";

const nameSchema = z
  .string({ error: (issue) => (issue.input === undefined ? "required" : "expected a string") })
  .trim()
  .min(1, "must not be empty")
  .max(MAX_NAME_CHARS);

/** `bio` may be one string or a list of lines; a string becomes a one-line list. */
const bioSchema = z.preprocess(
  (value) => (typeof value === "string" ? [value] : value),
  z
    .array(boundedString(), {
      error: (issue) =>
        issue.input === undefined ? "required" : "expected a string or an array of strings",
    })
    .max(MAX_ARRAY_ENTRIES),
);

/** Content of one example message. v1 writes `actions: string[]`, v0 wrote `action: string`. */
const exampleContentSchema = z.object(
  {
    text: boundedString().optional(),
    actions: stringList().optional(),
    action: boundedString().optional(),
  },
  { error: (issue) => (issue.input === undefined ? "required" : "expected an object") },
);

/** One line of an example conversation; v1 names the speaker `name`, v0 named it `user`. */
export const exampleLineSchema = z
  .object(
    {
      name: boundedString().optional(),
      user: boundedString().optional(),
      content: exampleContentSchema,
    },
    { error: "expected an object with name and content" },
  )
  .refine((line) => line.name !== undefined || line.user !== undefined, {
    message: "required (or the legacy `user`)",
    path: ["name"],
    // Run even when `content` failed, so one pass reports every broken field of the line.
    when: (payload) => isSpeakerMissing(payload.value),
  });

/** A string is a piece of knowledge text; objects point at a file or a directory. */
const knowledgeItemSchema = z.preprocess(
  (value) => (typeof value === "string" ? { text: value } : value),
  z
    .object(
      {
        text: boundedString().optional(),
        path: boundedString().optional(),
        directory: boundedString().optional(),
        shared: z.boolean().optional(),
      },
      { error: "expected a string or an object with path or directory" },
    )
    .refine(
      (item) =>
        [item.text, item.path, item.directory].filter((part) => part !== undefined).length === 1,
      {
        message: "expected exactly one of path or directory",
      },
    ),
);

const styleSchema = z.object(
  {
    all: stringList().optional(),
    chat: stringList().optional(),
    post: stringList().optional(),
  },
  { error: "expected an object with all, chat and post lists" },
);

export const characterV1Schema = z.object(
  {
    id: z.string().min(1).max(MAX_NAME_CHARS).optional(),
    name: nameSchema,
    username: z.string().max(MAX_NAME_CHARS).optional(),
    system: boundedString().optional(),
    /** ElizaOS also allows functions here; a JSON file can only hold strings. */
    templates: boundedRecord(boundedString()).optional(),
    bio: bioSchema,
    messageExamples: boundedArray(boundedArray(exampleLineSchema)).optional(),
    postExamples: stringList().optional(),
    topics: stringList().optional(),
    adjectives: stringList().optional(),
    knowledge: boundedArray(knowledgeItemSchema).optional(),
    plugins: stringList().optional(),
    settings: settingsSchema.prefault({}),
    secrets: secretsSchema.optional(),
    style: styleSchema.optional(),
  },
  { error: "expected a JSON object" },
);

export type CharacterV1File = z.infer<typeof characterV1Schema>;
export type ExampleLineFile = z.infer<typeof exampleLineSchema>;

function isSpeakerMissing(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  return (
    !("name" in value && value.name !== undefined) && !("user" in value && value.user !== undefined)
  );
}
