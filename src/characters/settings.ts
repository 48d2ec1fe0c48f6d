// The `settings` object of a character file, shared by both formats. Our runtime keys are checked
// strictly; every other key is kept verbatim for whoever reads it. `settings.secrets` (ElizaOS
// keeps API keys there) is lifted out here so no secret value can land in `extraSettings`.

import { z } from "zod";
import type { RuntimeSettings } from "../runtime/character.ts";
import {
  MAX_ARRAY_ENTRIES,
  boundedRecord,
  boundedString,
  jsonValue,
  stringList,
} from "./limits.ts";
import { skillListSchema } from "./skills.ts";

export const MAX_STEPS = 20;
export const MAX_CONSECUTIVE_FAILURES = 10;
/** Generous ceiling; the model's own limit applies first. */
export const MAX_TOKENS_SETTING = 10_000_000;

/** Agent ids, as the agents API takes them (src/http/schemas.ts AGENT_ID). */
const agentId = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/,
    "expected an agent id (1-64 letters, digits, '-' or '_')",
  );
/** At most 8 tasks of an agent run at once (docs/tasks.md#parallel-tasks). */
export const MAX_TASK_CONCURRENCY = 8;

/** Secret values may be written as numbers or booleans; the runtime only ever sees strings. */
export const secretsSchema = boundedRecord(
  z.union([boundedString(), z.number(), z.boolean()], {
    error: "expected a string, number or boolean",
  }),
).transform((secrets) =>
  Object.fromEntries(Object.entries(secrets).map(([key, value]) => [key, String(value)])),
);

const respondSchema = z.strictObject(
  {
    mode: z.enum(["always", "mentions", "llm", "never"]).default("mentions"),
    replyToBots: z.boolean().default(false),
    keywords: stringList().default([]),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "expected an object") },
);

/** ElizaOS-style files often hold lists as one comma-separated string. */
const modelListSchema = z.preprocess(
  (value) => (typeof value === "string" ? splitCommaList(value) : value),
  z
    .array(boundedString(), {
      error: "expected an array of model names or a comma-separated string",
    })
    .max(MAX_ARRAY_ENTRIES),
);

const tokenCount = z.int().positive().max(MAX_TOKENS_SETTING);
/** A turn's whole time is bounded by its timeout; waiting longer than this for a vector is never right. */
const MAX_EMBEDDING_BUDGET_MS = 10_000;

/** Long-term memory knobs; unset ones take the runtime's defaults (src/runtime/character.ts). */
const memorySchema = z.strictObject(
  {
    factsEvery: z.int().min(1).max(1_000).optional(),
    summarizeAfter: z.int().min(20).max(10_000).optional(),
    retentionDays: z.int().min(1).max(36_500).optional(),
    knowledgeTokens: tokenCount.optional(),
    factsTokens: tokenCount.optional(),
    recallTokens: tokenCount.optional(),
    threshold: z.number().min(0).max(1).optional(),
    embeddingBudgetMs: z.int().min(0).max(MAX_EMBEDDING_BUDGET_MS).optional(),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "expected an object") },
);

/** `settings.tasks`: how many of the agent's tasks run at once (default 2, src/runtime/tasks/task-types.ts). */
const tasksSchema = z.strictObject(
  { concurrency: z.int().min(1).max(MAX_TASK_CONCURRENCY).optional() },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "expected an object") },
);

const directMessagePolicy = z.enum(["off", "owners", "everyone"], {
  error: 'expected "off", "owners" or "everyone"',
});

/**
 * `settings.discord`, `settings.telegram`, `settings.slack`: ours is `directMessages`, the DM policy
 * on that platform alone. ElizaOS files keep their own platform keys here too (e.g. Discord's
 * `shouldIgnoreBotMessages`); those pass and are kept in `extraSettings.<platform>`.
 */
const platformSchema = z
  .object({ directMessages: directMessagePolicy.optional() }, { error: "expected an object" })
  .catchall(jsonValue());

export const settingsSchema = z
  .object(
    {
      model: boundedString().optional(),
      smallModel: boundedString().optional(),
      modelFallbacks: modelListSchema.optional(),
      temperature: z.number().min(0).max(2).optional(),
      maxOutputTokens: tokenCount.optional(),
      mcpServers: stringList().default([]),
      toolApproval: stringList().default([]),
      respond: respondSchema.prefault({}),
      maxSteps: z.int().min(1).max(MAX_STEPS).optional(),
      maxConsecutiveFailures: z.int().min(1).max(MAX_CONSECUTIVE_FAILURES).optional(),
      historyTokens: tokenCount.optional(),
      dailyTokens: z.int().min(1).max(1e12).optional(),
      /** US dollars per million tokens, by model name: GET /agents/:id/usage estimates costs. */
      prices: z
        .record(
          boundedString(),
          z.strictObject({
            inputPerMillion: z.number().min(0).max(1e6),
            outputPerMillion: z.number().min(0).max(1e6),
            /** Input read from the provider's prompt cache; absent: the input price. */
            cachedInputPerMillion: z.number().min(0).max(1e6).optional(),
          }),
        )
        .refine((prices) => Object.keys(prices).length <= 100, "at most 100 models")
        .optional(),
      /** Agents this one may ask for help (ask_agent, delegate_task); none: the tools are hidden. */
      delegates: z.array(agentId).max(MAX_ARRAY_ENTRIES).optional(),
      tasks: tasksSchema.optional(),
      memory: memorySchema.prefault({}),
      /** Whose direct messages the agent answers on every chat platform (default "owners"). */
      directMessages: directMessagePolicy.optional(),
      discord: platformSchema.optional(),
      telegram: platformSchema.optional(),
      slack: platformSchema.optional(),
      secrets: secretsSchema.optional(),
      /** Procedures the agent can load with use_skill (docs/skills.md). */
      skills: skillListSchema.default([]),
    },
    { error: "expected an object" },
  )
  .catchall(jsonValue());

export type ParsedSettings = z.infer<typeof settingsSchema>;

export interface SplitSettings {
  settings: RuntimeSettings;
  extraSettings: Record<string, unknown>;
  secrets: Record<string, string>;
}

/** Separates our typed keys, the file's other keys and `settings.secrets`. */
export function splitSettings(parsed: ParsedSettings): SplitSettings {
  const {
    model,
    smallModel,
    modelFallbacks,
    temperature,
    maxOutputTokens,
    mcpServers,
    toolApproval,
    respond,
    maxSteps,
    maxConsecutiveFailures,
    historyTokens,
    dailyTokens,
    prices,
    delegates,
    tasks,
    memory,
    directMessages,
    discord,
    telegram,
    slack,
    secrets,
    skills,
    ...rest
  } = parsed;
  const platforms = { discord, telegram, slack };
  const extraSettings: Record<string, unknown> = { ...rest };
  const dm = directMessages ?? "owners";
  const resolved = { discord: dm, telegram: dm, slack: dm };
  for (const name of ["discord", "telegram", "slack"] as const) {
    const platform = platforms[name];
    if (!platform) continue;
    const { directMessages: own, ...extra } = platform;
    if (own) resolved[name] = own;
    if (Object.keys(extra).length > 0) extraSettings[name] = extra;
  }
  const optional = withoutUndefined({
    model,
    smallModel,
    modelFallbacks,
    temperature,
    maxOutputTokens,
    maxSteps,
    maxConsecutiveFailures,
    historyTokens,
    dailyTokens,
    prices,
    delegates,
    tasks: tasks ? withoutUndefined(tasks) : undefined,
  });
  const settings: RuntimeSettings = {
    ...optional,
    mcpServers,
    toolApproval,
    respond,
    memory: withoutUndefined(memory),
    directMessages: resolved,
    skills,
  };
  return { settings, extraSettings, secrets: secrets ?? {} };
}

function splitCommaList(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

function withoutUndefined<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}
