// Environment and bindings, parsed once per env object with the checks settings.ts declares. A
// missing binding or a malformed variable is a clear error naming the variable (never its value).
// Empty strings count as unset, so a variable set to "" is as good as absent
// (`npm run deploy -- --var NAME=` unsets one). The raw bindings' type is `Env` in src/env.ts.
import type { z } from "zod";
import { NotConfiguredError } from "./runtime/util/errors.ts";
import type { ModelChoice } from "./runtime/ports/model.ts";
import type { Env } from "./env.ts";
import { log } from "./log.ts";
import { type Surface, type SurfacesOff, surfaceOf } from "./surfaces.ts";
import type { RateRule } from "./rate-limits/token-bucket.ts";
import {
  DEFAULT_WORKERS_AI_EMBEDDING_MODEL,
  WORKERS_AI_EMBEDDING_DIMENSIONS,
} from "./model/workers-ai-embedder.ts";
import { DEFAULT_HASH_DIMENSIONS } from "./runtime/retrieval/hash-embedder.ts";
import {
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_OPENAI_BASE_URL,
  DEFAULT_OPENAI_MODEL,
  DEFAULT_OPENAI_SMALL_MODEL,
  DEFAULT_SLACK_API_BASE,
  DEFAULT_TELEGRAM_API_BASE,
  DEFAULT_TRANSCRIPTION_MODEL,
  DEFAULT_WORKERS_AI_MODEL,
  DEFAULT_WORKERS_AI_SMALL_MODEL,
  DEFAULT_WORKERS_AI_TRANSCRIPTION_MODEL,
  SettingsSchema as VarsSchema,
  type ShardSetting,
} from "./settings.ts";

export const DEFAULT_LOCAL_EMBEDDING_DIMENSIONS = DEFAULT_HASH_DIMENSIONS;

/**
 * Default sizes of OpenAI's embedding models. text-embedding-3-large natively gives 3,072; it is
 * asked for 1,536 (the `dimensions` parameter), Vectorize's maximum.
 */
const OPENAI_EMBEDDING_DIMENSIONS: Readonly<Record<string, number>> = {
  "text-embedding-3-small": 1536,
  "text-embedding-3-large": 1536,
  "text-embedding-ada-002": 1536,
};

export type EmbeddingBackend =
  | { kind: "openai"; apiKey: string; baseURL: string; model: string; dimensions: number }
  | { kind: "workers-ai"; ai: Ai; model: string; dimensions: number }
  | { kind: "local"; dimensions: number };

export type ModelBackend =
  | {
      kind: "openai";
      apiKey: string;
      baseURL: string;
      /**
       * Send `prompt_cache_key` (PROMPT_CACHE_KEY: `auto`, the default, sends it to OpenAI's own
       * endpoint only: another OpenAI-compatible server may refuse a parameter it does not know).
       */
      promptCacheKey: boolean;
    }
  | { kind: "workers-ai"; ai: Ai }
  | { kind: "none" };

export interface Config {
  model: ModelBackend;
  models: ModelChoice;
  embedding: EmbeddingBackend;
  /**
   * Other embedders that may serve instead, when EMBEDDING_MODEL is not set: the one whose size
   * matches what the vector index already holds wins (model/embedder.ts), so adding the AI
   * binding never switches an index's vectors by itself. Empty when EMBEDDING_MODEL names one.
   */
  embeddingAlternatives: EmbeddingBackend[];
  /**
   * The Vectorize index memories' vectors go to; null without the VECTORS binding, or with
   * VECTORIZE=false (.dev.vars sets it: Vectorize answers only remotely, and a binding that
   * `npm run deploy -- --vectorize` added must not break local development), and then the local
   * index in D1 serves.
   */
  vectors: Vectorize | null;
  /** Prompt budget in tokens; long-term memory sections take shares of it. */
  maxContextTokens: number;
  /** INSPECTOR_TEXT_SHARE: the share of turns (0-1) whose prompt text the inspector keeps (R2). */
  inspectorTextShare: number;
  adminToken?: string;
  secretsKey?: string;
  publicBaseUrl?: string;
  /** null: no limit. */
  rateLimits: { perToken: RateRule | null; perUser: RateRule | null };
  /** Model tokens an agent may spend per UTC day unless its character says otherwise; null: no ceiling. */
  dailyTokenLimit: number | null;
  /**
   * MEMORY_RETENTION_DAYS: messages and summaries older than this are deleted by the upkeep, for
   * agents whose character sets no `settings.memory.retentionDays`; null keeps them.
   */
  memoryRetentionDays: number | null;
  /** Development only: the guarded fetch may reach loopback, over http too (tests, `npm run dev`). */
  allowLoopbackFetch: boolean;
  /** A fresh deployment seeds the shipped characters on its first start (SEED_CHARACTERS, default true). */
  seedCharacters: boolean;
  /** DISCORD_OWNER_IDS: Discord users who manage the bot in DMs (with the application's owner). */
  discordOwnerIds: string[];
  /** DISCORD_GATEWAY=true: the bot also reads channel messages over the Gateway (with the bot token). */
  discordGateway: boolean;
  /** DISCORD_GATEWAY_SHARDS: "auto" (default) follows GET /gateway/bot's `shards`; else fixed. */
  discordGatewayShards: ShardSetting;
  /**
   * Telegram; null unless both the bot token and the webhook secret are set (the webhook then
   * answers 503). TELEGRAM_OWNER_IDS are the bot's owners there.
   */
  telegram: { botToken: string; webhookSecret: string; apiBase: string } | null;
  telegramOwnerIds: string[];
  /**
   * Slack (one workspace per deployment); null unless both the bot token and the signing secret
   * are set (its routes then answer 503). SLACK_OWNER_IDS are the bot's owners there.
   */
  slack: { botToken: string; signingSecret: string; apiBase: string } | null;
  slackOwnerIds: string[];
  /**
   * The model voice notes are transcribed with: TRANSCRIPTION_MODEL, else `whisper-1` on an
   * OpenAI-compatible backend or Workers AI's Whisper on Workers AI.
   */
  transcriptionModel: string;
  /** Instagram publishing; null unless both the account id and the token are set. */
  instagram: { userId: string; accessToken: string; graphBase?: string } | null;
  /**
   * Surfaces turned off because one of their own variables is malformed, each with the problem
   * (the variable and the rule, never its value). The rest of the worker runs without them.
   */
  surfacesOff: SurfacesOff;
}

/** What the worker would say of these variables: each bad one's name and rule, never its value. */
export function variableIssues(vars: Readonly<Record<string, string>>): string[] {
  const parsed = VarsSchema.safeParse(vars);
  return parsed.success ? [] : issueList(parsed.error);
}

const issueList = (error: z.ZodError): string[] =>
  error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`);

export const MODEL_NOT_CONFIGURED_MESSAGE =
  "no model is configured: set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL (and MODEL) for another OpenAI-compatible endpoint such as a local server, which needs no key; or, deployed, Workers AI through the AI binding (npm run dev sets WORKERS_AI=false: it answers only remotely)";

const cache = new WeakMap<object, Config>();

export function loadConfig(env: Env): Config {
  const cached = cache.get(env);
  if (cached) return cached;
  for (const binding of ["DB", "ROOMS", "LIMITS", "TASKS", "SCHEMA"] as const) {
    if (!env[binding])
      throw new NotConfiguredError(
        `configuration: the ${binding} binding is missing; check wrangler.toml`,
      );
  }
  const { vars, surfacesOff } = parseVariables(env);
  // The AI binding is declared for deployments; locally it answers only when logged in, so
  // .dev.vars and the tests set WORKERS_AI=false and a local run works offline.
  const ai = vars.WORKERS_AI === "false" ? undefined : env.AI;
  const config: Config = {
    ...chooseModel(vars, ai),
    embedding: chooseEmbedding(vars, ai),
    embeddingAlternatives: embeddingAlternatives(vars, ai),
    vectors: vars.VECTORIZE === "false" ? null : (env.VECTORS ?? null),
    maxContextTokens: vars.MAX_CONTEXT_TOKENS ?? DEFAULT_MAX_CONTEXT_TOKENS,
    inspectorTextShare: vars.INSPECTOR_TEXT_SHARE ?? 1,
    adminToken: vars.ADMIN_TOKEN,
    secretsKey: vars.SECRETS_KEY,
    publicBaseUrl: vars.PUBLIC_BASE_URL,
    rateLimits: { perToken: vars.RATE_LIMIT_PER_TOKEN, perUser: vars.RATE_LIMIT_PER_USER },
    dailyTokenLimit: vars.DAILY_TOKEN_LIMIT ?? null,
    memoryRetentionDays: vars.MEMORY_RETENTION_DAYS ?? null,
    // ALLOW_LOOPBACK_FETCH wins; MCP_ALLOW_LOOPBACK is its old name.
    allowLoopbackFetch: (vars.ALLOW_LOOPBACK_FETCH ?? vars.MCP_ALLOW_LOOPBACK) === "true",
    discordOwnerIds: vars.DISCORD_OWNER_IDS,
    discordGateway: vars.DISCORD_GATEWAY === "true",
    discordGatewayShards: vars.DISCORD_GATEWAY_SHARDS ?? "auto",
    seedCharacters: vars.SEED_CHARACTERS !== "false",
    telegram:
      vars.TELEGRAM_BOT_TOKEN && vars.TELEGRAM_WEBHOOK_SECRET
        ? {
            botToken: vars.TELEGRAM_BOT_TOKEN,
            webhookSecret: vars.TELEGRAM_WEBHOOK_SECRET,
            apiBase: vars.TELEGRAM_API_BASE ?? DEFAULT_TELEGRAM_API_BASE,
          }
        : null,
    telegramOwnerIds: vars.TELEGRAM_OWNER_IDS,
    slack:
      vars.SLACK_BOT_TOKEN && vars.SLACK_SIGNING_SECRET
        ? {
            botToken: vars.SLACK_BOT_TOKEN,
            signingSecret: vars.SLACK_SIGNING_SECRET,
            apiBase: vars.SLACK_API_BASE ?? DEFAULT_SLACK_API_BASE,
          }
        : null,
    slackOwnerIds: vars.SLACK_OWNER_IDS,
    transcriptionModel: "", // set below, from the chosen backend
    instagram:
      vars.INSTAGRAM_USER_ID && vars.INSTAGRAM_ACCESS_TOKEN
        ? {
            userId: vars.INSTAGRAM_USER_ID,
            accessToken: vars.INSTAGRAM_ACCESS_TOKEN,
            graphBase: vars.INSTAGRAM_GRAPH_BASE,
          }
        : null,
    surfacesOff,
  };
  config.transcriptionModel = chooseTranscriptionModel(vars.TRANSCRIPTION_MODEL, config.model);
  cache.set(env, config);
  return config;
}

/**
 * The variables, checked. Problems only in surfaces' own variables turn those surfaces off: their
 * variables are dropped (the surface is then unset) and each problem is logged once per isolate,
 * the config being built once per environment. Any other problem throws, naming the variable and
 * the rule; a value is never echoed (it may be a secret).
 */
function parseVariables(env: Env): {
  vars: z.infer<typeof VarsSchema>;
  surfacesOff: Config["surfacesOff"];
} {
  const parsed = VarsSchema.safeParse(env);
  if (parsed.success) return { vars: parsed.data, surfacesOff: {} };
  const problems = parsed.error.issues.map((issue) => ({
    surface: surfaceOf(String(issue.path[0] ?? "")),
    text: `${issue.path.join(".")} ${issue.message}`,
  }));
  if (problems.some((problem) => !problem.surface))
    throw new NotConfiguredError(`configuration: ${issueList(parsed.error).join("; ")}`);
  const surfacesOff: Config["surfacesOff"] = {};
  for (const { surface, text } of problems) {
    const off = surface!;
    surfacesOff[off] = surfacesOff[off] ? `${surfacesOff[off]}; ${text}` : text;
  }
  const kept = Object.fromEntries(
    Object.entries(env).filter(([name]) => !surfacesOff[surfaceOf(name) as Surface]),
  );
  const again = VarsSchema.safeParse(kept);
  if (!again.success)
    throw new NotConfiguredError(`configuration: ${issueList(again.error).join("; ")}`);
  for (const [surface, problem] of Object.entries(surfacesOff))
    log.error("surface_misconfigured", { surface, problem });
  return { vars: again.data, surfacesOff };
}

/** Whisper on the backend that serves the model: Workers AI names only go to Workers AI. */
function chooseTranscriptionModel(named: string | undefined, model: ModelBackend): string {
  if (model.kind === "workers-ai")
    return named && /^@(cf|hf)\//.test(named) ? named : DEFAULT_WORKERS_AI_TRANSCRIPTION_MODEL;
  return named ?? DEFAULT_TRANSCRIPTION_MODEL;
}

function chooseModel(
  vars: z.infer<typeof VarsSchema>,
  ai: Ai | undefined,
): Pick<Config, "model" | "models"> {
  // An explicit base URL without a key is a local endpoint (Ollama, vLLM) that needs none.
  if (vars.OPENAI_API_KEY || vars.OPENAI_BASE_URL) {
    const baseURL = vars.OPENAI_BASE_URL ?? DEFAULT_OPENAI_BASE_URL;
    const primary = vars.MODEL ?? DEFAULT_OPENAI_MODEL;
    // Another endpoint (Ollama, vLLM, a gateway) knows its own models, not OpenAI's small one:
    // there, side prompts (facts, summaries, respond decisions) use MODEL unless SMALL_MODEL is set.
    const openAi = baseURL.replace(/\/+$/, "") === DEFAULT_OPENAI_BASE_URL;
    return {
      model: {
        kind: "openai",
        apiKey: vars.OPENAI_API_KEY ?? "not-needed",
        baseURL,
        promptCacheKey:
          vars.PROMPT_CACHE_KEY === "on" || (vars.PROMPT_CACHE_KEY !== "off" && openAi),
      },
      models: {
        primary,
        fallbacks: vars.MODEL_FALLBACKS,
        small: vars.SMALL_MODEL ?? (openAi ? DEFAULT_OPENAI_SMALL_MODEL : primary),
      },
    };
  }
  if (ai) {
    // OpenAI model names mean nothing to Workers AI: keep only Workers AI names (@cf/, @hf/).
    const isWorkersAi = (name: string | undefined): name is string =>
      !!name && /^@(cf|hf)\//.test(name);
    return {
      model: { kind: "workers-ai", ai },
      models: {
        primary: isWorkersAi(vars.MODEL) ? vars.MODEL : DEFAULT_WORKERS_AI_MODEL,
        fallbacks: vars.MODEL_FALLBACKS.filter(isWorkersAi),
        small: isWorkersAi(vars.SMALL_MODEL) ? vars.SMALL_MODEL : DEFAULT_WORKERS_AI_SMALL_MODEL,
      },
    };
  }
  return {
    model: { kind: "none" },
    models: {
      primary: vars.MODEL ?? DEFAULT_OPENAI_MODEL,
      fallbacks: vars.MODEL_FALLBACKS,
      small: vars.SMALL_MODEL ?? DEFAULT_OPENAI_SMALL_MODEL,
    },
  };
}

/**
 * OpenAI-compatible embeddings when EMBEDDING_MODEL names one and an endpoint is configured;
 * else Workers AI when the AI binding exists; else the local hashed embedder (offline).
 * A Workers AI model we know has a fixed size, which wins over EMBEDDING_DIMENSIONS (the embedder
 * would refuse any other); text-embedding-3-* models are asked for EMBEDDING_DIMENSIONS.
 */
/** The local embedder, and Workers AI's when it is on: what an index filled earlier may hold. */
function embeddingAlternatives(
  vars: z.infer<typeof VarsSchema>,
  ai: Ai | undefined,
): EmbeddingBackend[] {
  if (vars.EMBEDDING_MODEL) return [];
  const local: EmbeddingBackend = {
    kind: "local",
    dimensions: vars.EMBEDDING_DIMENSIONS ?? DEFAULT_LOCAL_EMBEDDING_DIMENSIONS,
  };
  if (!ai) return [];
  const model = DEFAULT_WORKERS_AI_EMBEDDING_MODEL;
  return [
    local,
    { kind: "workers-ai", ai, model, dimensions: WORKERS_AI_EMBEDDING_DIMENSIONS[model]! },
  ];
}

function chooseEmbedding(vars: z.infer<typeof VarsSchema>, ai: Ai | undefined): EmbeddingBackend {
  const model = vars.EMBEDDING_MODEL;
  const isWorkersAiName = !!model && /^@(cf|hf)\//.test(model);
  if (model && !isWorkersAiName && (vars.OPENAI_API_KEY || vars.OPENAI_BASE_URL)) {
    const dimensions = vars.EMBEDDING_DIMENSIONS ?? OPENAI_EMBEDDING_DIMENSIONS[model];
    if (dimensions === undefined) throw sizeUnknown(model);
    return {
      kind: "openai",
      apiKey: vars.OPENAI_API_KEY ?? "not-needed",
      baseURL: vars.OPENAI_BASE_URL ?? DEFAULT_OPENAI_BASE_URL,
      model,
      dimensions,
    };
  }
  // Workers AI embeds when EMBEDDING_MODEL names one of its models, or by default when it is also
  // the chat backend; a deployment with an OpenAI-compatible endpoint keeps the local embedder
  // unless told otherwise (so `wrangler dev --local` with an endpoint in .dev.vars runs offline).
  const openaiChat = !!(vars.OPENAI_API_KEY || vars.OPENAI_BASE_URL);
  if (ai && (isWorkersAiName || !openaiChat)) {
    const name = isWorkersAiName ? model : DEFAULT_WORKERS_AI_EMBEDDING_MODEL;
    const dimensions = WORKERS_AI_EMBEDDING_DIMENSIONS[name] ?? vars.EMBEDDING_DIMENSIONS;
    if (dimensions === undefined) throw sizeUnknown(name);
    return { kind: "workers-ai", ai, model: name, dimensions };
  }
  return {
    kind: "local",
    dimensions: vars.EMBEDDING_DIMENSIONS ?? DEFAULT_LOCAL_EMBEDDING_DIMENSIONS,
  };
}

/** An embedding model whose size neither we know nor EMBEDDING_DIMENSIONS says. */
function sizeUnknown(model: string): NotConfiguredError {
  return new NotConfiguredError(
    `configuration: EMBEDDING_DIMENSIONS must be set for the embedding model "${model}" (its size is not known)`,
  );
}
