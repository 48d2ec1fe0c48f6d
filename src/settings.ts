// Every variable and secret the worker reads, declared once: its kind, its zod check (parsed in
// config.ts), its default and a line of documentation. The rest is derived or checked from here:
// the variables of `Env` (env.ts), the checks config.ts runs, which secrets `npm run deploy`
// uploads and which variables it takes (scripts/deploy.ts), `.dev.vars.example` and the table in
// docs/configuration.md (`npm run config:docs`), and the test bindings (vitest.config.ts).
import { z } from "zod";
import { parseRateRule, RATE_RULE_FORMAT, type RateRule } from "./rate-limits/token-bucket.ts";

/** DISCORD_GATEWAY_SHARDS: "auto" follows GET /gateway/bot's `shards`; a number is fixed. */
export type ShardSetting = "auto" | number;
/** Past this many shards Discord's large-bot sharding applies, which this runtime does not do. */
export const MAX_GATEWAY_SHARDS = 1_024;
export const DEFAULT_TELEGRAM_API_BASE = "https://api.telegram.org";
export const DEFAULT_SLACK_API_BASE = "https://slack.com/api";
/** The OpenAI-compatible `/audio/transcriptions` model voice notes go to (TRANSCRIPTION_MODEL). */
export const DEFAULT_TRANSCRIPTION_MODEL = "whisper-1";
/** Workers AI's Whisper, when Workers AI is the configured backend. */
export const DEFAULT_WORKERS_AI_TRANSCRIPTION_MODEL = "@cf/openai/whisper";
export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";
export const DEFAULT_OPENAI_MODEL = "gpt-4.1-mini";
export const DEFAULT_OPENAI_SMALL_MODEL = "gpt-4.1-nano";
export const DEFAULT_WORKERS_AI_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";
export const DEFAULT_WORKERS_AI_SMALL_MODEL = "@cf/meta/llama-3.1-8b-instruct-fast";
export const MIN_ADMIN_TOKEN_CHARS = 16;
export const DEFAULT_MAX_CONTEXT_TOKENS = 8_000;
/** Per API token: bursts of 600, 600 a minute sustained. */
export const DEFAULT_RATE_LIMIT_PER_TOKEN = "600/min";
/** Per end user (a Discord user, a REST userId): chat turns. */
export const DEFAULT_RATE_LIMIT_PER_USER = "20/min";
/** Vectorize's largest dimension. */
export const MAX_EMBEDDING_DIMENSIONS = 1536;
const EMBEDDING_DIMENSIONS_RULE = `must be a whole number from 1 to ${MAX_EMBEDDING_DIMENSIONS}`;

const unset = (value: unknown) =>
  typeof value === "string" && value.trim() === "" ? undefined : value;
const optionalString = z.preprocess(unset, z.string().trim().optional());
const optionalUrl = z.preprocess(unset, z.url({ protocol: /^https?$/ }).optional());
/** A switch: "true", "false" or unset. */
const trueOrFalse = z.preprocess(
  unset,
  z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional(),
);
const commaList = z.preprocess(
  unset,
  z
    .string()
    .optional()
    .transform((value) =>
      value
        ? value
            .split(",")
            .map((item) => item.trim())
            .filter(Boolean)
        : [],
    ),
);
/** A whole number in bounds, or unset; `rule` is what a bad value is told. */
const wholeNumber = (rule: string, min: number, max?: number) => {
  const base = z.coerce.number({ error: rule }).int(rule).min(min);
  return z.preprocess(unset, (max === undefined ? base : base.max(max)).optional());
};
const idList = (pattern: RegExp, what: string) =>
  commaList.pipe(z.array(z.string().regex(pattern, `must be a comma list of ${what}`)));

function rateRule(fallback: string) {
  return z.preprocess(
    (value) => unset(value) ?? fallback,
    z.string().transform((text, ctx): RateRule | null => {
      try {
        return parseRateRule(text);
      } catch {
        ctx.addIssue({ code: "custom", message: `must be ${RATE_RULE_FORMAT}` });
        return z.NEVER;
      }
    }),
  );
}

/**
 * How a setting is provided. `var`: a plain variable, set with `npm run deploy -- --var`;
 * `dev-var`: for development and tests only, never deployed; `secret`: uploaded by
 * `npm run deploy` from the shell when the worker lacks it; `generated-secret`: made by
 * `npm run deploy` (and `npm run dev`) when missing.
 */
export type SettingKind = "var" | "dev-var" | "secret" | "generated-secret";

export interface Setting {
  kind: SettingKind;
  /** The check config.ts runs; absent: read as text where it is used. */
  schema?: z.ZodType;
  /** The default, in the documentation's words (markdown). */
  default?: string;
  /** What it does, one line of markdown for docs/configuration.md. */
  doc: string;
  /** Listed in `.dev.vars.example`: the comment before it, the value shown, set or commented out. */
  example?: { note?: string; value?: string; uncommented?: boolean };
}

export const SETTINGS = {
  ADMIN_TOKEN: {
    kind: "generated-secret",
    schema: z.preprocess(
      unset,
      z
        .string()
        .min(MIN_ADMIN_TOKEN_CHARS, `must be at least ${MIN_ADMIN_TOKEN_CHARS} characters`)
        .optional(),
    ),
    doc: `bootstrap admin token for the API, at least ${MIN_ADMIN_TOKEN_CHARS} characters (it mints the others, see [api.md](api.md#api-tokens-and-scopes)); without it only minted tokens work`,
    example: { uncommented: true },
  },
  SECRETS_KEY: {
    kind: "generated-secret",
    schema: z.preprocess(unset, z.string().min(32, "must be at least 32 characters").optional()),
    doc: "at least 32 characters: encrypts characters' secrets and MCP OAuth credentials at rest, and signs media links; needed for characters with secrets, for OAuth servers and for Instagram",
    example: { uncommented: true },
  },
  OPENAI_API_KEY: {
    kind: "secret",
    schema: optionalString,
    doc: "the key of an OpenAI-compatible chat endpoint (a local server needs none)",
    example: {
      note: "Optional: an OpenAI-compatible endpoint (without one, a deployment answers on Workers AI).",
    },
  },
  OPENAI_BASE_URL: {
    kind: "var",
    schema: optionalUrl,
    default: `\`${DEFAULT_OPENAI_BASE_URL}\``,
    doc: "any OpenAI-compatible chat endpoint",
  },
  MODEL: {
    kind: "var",
    schema: optionalString,
    default: `\`${DEFAULT_OPENAI_MODEL}\`, or \`${DEFAULT_WORKERS_AI_MODEL}\` on Workers AI`,
    doc: "the chat model",
  },
  MODEL_FALLBACKS: {
    kind: "var",
    schema: commaList,
    doc: "comma list of failover models",
  },
  SMALL_MODEL: {
    kind: "var",
    schema: optionalString,
    default: `\`${DEFAULT_OPENAI_SMALL_MODEL}\` on OpenAI; \`MODEL\` on any other \`OPENAI_BASE_URL\`, whose server would not know OpenAI's names; \`${DEFAULT_WORKERS_AI_SMALL_MODEL}\` on Workers AI`,
    doc: "cheap model for side prompts: facts, summaries, respond decisions",
  },
  PROMPT_CACHE_KEY: {
    kind: "var",
    schema: z.preprocess(unset, z.enum(["auto", "on", "off"]).optional()),
    default: "`auto`",
    doc: "`auto`, `on` or `off`: send a `prompt_cache_key` (a hash of the agent and room, or task) with each chat request, so the provider routes a room's turns to the cache holding their prompt prefix; `auto` sends it to OpenAI's own endpoint only, since another OpenAI-compatible server may refuse a parameter it does not know (`on` for one that takes it)",
  },
  EMBEDDING_MODEL: {
    kind: "var",
    schema: optionalString,
    default:
      "Workers AI (`@cf/baai/bge-base-en-v1.5`, 768 dims) when it is also the chat backend, else the local hashed embedder (384 dims, or `EMBEDDING_DIMENSIONS`); and unset, an index that already holds vectors keeps the embedder of their size",
    doc: "embeddings: an OpenAI-compatible model (e.g. `text-embedding-3-small`) or an `@cf/` Workers AI model. Must match the vector index ([memory.md](memory.md#embeddings))",
  },
  EMBEDDING_DIMENSIONS: {
    kind: "var",
    // Vectorize's ceiling is 1,536 dimensions.
    schema: z.preprocess(
      unset,
      z.coerce
        .number({ error: EMBEDDING_DIMENSIONS_RULE })
        .int(EMBEDDING_DIMENSIONS_RULE)
        .min(1, EMBEDDING_DIMENSIONS_RULE)
        .max(MAX_EMBEDDING_DIMENSIONS, EMBEDDING_DIMENSIONS_RULE)
        .optional(),
    ),
    default: "known for OpenAI's models and Workers AI's",
    doc: `the embedding model's size, at most ${MAX_EMBEDDING_DIMENSIONS.toLocaleString("en")}; set it for a model whose size is not known`,
  },
  WORKERS_AI: {
    kind: "var",
    schema: trueOrFalse,
    doc: "`false` ignores the `AI` binding, which answers only remotely: `npm run dev` and the tests set it, so a local run needs no Cloudflare login; unset in a deployment",
  },
  VECTORIZE: {
    kind: "var",
    schema: trueOrFalse,
    doc: "`false` ignores the `VECTORS` binding, which answers only remotely: `npm run dev` sets it, so a binding `npm run deploy -- --vectorize` added to `wrangler.toml` leaves local development on the local index in D1; unset in a deployment",
  },
  SEED_CHARACTERS: {
    kind: "var",
    schema: trueOrFalse,
    default: "it seeds them once, when no agent exists",
    doc: "`false` keeps a new deployment from seeding the characters of `characters/` on its first start",
  },
  MAX_CONTEXT_TOKENS: {
    kind: "var",
    schema: wholeNumber("must be a whole number", 1_000, 2_000_000),
    default: DEFAULT_MAX_CONTEXT_TOKENS.toLocaleString("en"),
    doc: "prompt budget the memory sections take shares of (1,000-2,000,000)",
  },
  DISCORD_APPLICATION_ID: {
    kind: "var",
    doc: "the Discord bot's application ([discord.md](discord.md))",
  },
  DISCORD_PUBLIC_KEY: {
    kind: "secret",
    doc: "the Discord application's public key (64 hex digits), which signs interactions",
    example: {
      note: "Optional: the Discord bot (docs/discord.md); deployed, `npm run deploy -- --discord` sets them.\nThe Public Key (General Information: 64 hex digits) and the bot token (Bot, Reset Token):",
    },
  },
  DISCORD_BOT_TOKEN: {
    kind: "secret",
    doc: "the Discord bot's token",
    example: {},
  },
  DISCORD_API_BASE: {
    kind: "var",
    default: "`https://discord.com/api/v10`",
    doc: "Discord's REST API",
  },
  DISCORD_GATEWAY: {
    kind: "var",
    schema: trueOrFalse,
    default: "slash commands only",
    doc: "`true` also opens the Discord Gateway (needs `DISCORD_BOT_TOKEN`): people talk to the agent by @mention, reply and DM ([discord.md](discord.md#conversations-over-the-gateway)); one always-on Durable Object, about $4 a month of duration beyond the plan's included amount",
  },
  DISCORD_GATEWAY_SHARDS: {
    kind: "var",
    // "auto" (or unset): the shard count GET /gateway/bot recommends; else a fixed count.
    schema: z.preprocess(
      unset,
      z
        .string()
        .trim()
        .refine(
          (value) =>
            value === "auto" ||
            (/^\d{1,5}$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_GATEWAY_SHARDS),
          { error: `must be "auto" or a whole number from 1 to ${MAX_GATEWAY_SHARDS}` },
        )
        .transform((value): ShardSetting => (value === "auto" ? "auto" : Number(value)))
        .optional(),
    ),
    default: "`auto`",
    doc: "with `DISCORD_GATEWAY=true`: how many Gateway shards to run; `auto` takes the count `GET /gateway/bot` recommends and follows it when it changes, a number (1-1,024) fixes it. Each shard is one more always-on Durable Object with an open socket ([discord.md](discord.md#sharding))",
  },
  DISCORD_OWNER_IDS: {
    kind: "var",
    // Discord user ids (snowflakes) who manage the bot in DMs, besides the application's owner.
    schema: idList(/^\d{1,20}$/, "Discord user ids"),
    doc: "comma list of Discord user ids who manage the bot in DMs, besides the application's owner (or its team's owner and admins)",
  },
  TELEGRAM_BOT_TOKEN: {
    kind: "secret",
    schema: z.preprocess(
      unset,
      z
        .string()
        .trim()
        .regex(
          /^\d{1,20}:[A-Za-z0-9_-]{1,200}$/,
          "must be a bot token from BotFather (<bot id>:<secret>)",
        )
        .optional(),
    ),
    doc: "the Telegram bot's token from BotFather ([telegram.md](telegram.md)); without it and the webhook secret, `/telegram/webhook` answers 503",
    example: {
      note: "Optional: the Telegram bot (docs/telegram.md); deployed, `npm run deploy -- --telegram` sets them.\nLocally, set both here and point the webhook at a tunnel (docs/telegram.md#trying-it-locally).\nThe token from @BotFather, <bot id>:<secret> (123456789:AA...), and a webhook secret you choose,\n16-256 of A-Z a-z 0-9 _ - (`openssl rand -hex 32`; Telegram sends it back with every Update):",
    },
  },
  TELEGRAM_WEBHOOK_SECRET: {
    kind: "secret",
    // setWebhook's secret_token rule: Telegram sends it back in X-Telegram-Bot-Api-Secret-Token.
    schema: z.preprocess(
      unset,
      z
        .string()
        .regex(/^[A-Za-z0-9_-]{16,256}$/, "must be 16-256 of A-Z, a-z, 0-9, _ and -")
        .optional(),
    ),
    doc: "setWebhook's `secret_token`, 16-256 of `A-Z a-z 0-9 _ -`: every webhook request carries it",
    example: {},
  },
  TELEGRAM_API_BASE: {
    kind: "var",
    schema: optionalUrl,
    default: `\`${DEFAULT_TELEGRAM_API_BASE}\``,
    doc: "the Bot API, with no trailing slash and no method (the worker adds `/bot<token>/<method>`)",
    example: {
      note: "A variable, not a secret, that a local run rarely needs: the Bot API base, with no\ntrailing slash and no method (the worker adds /bot<token>/<method>). The default:",
      value: DEFAULT_TELEGRAM_API_BASE,
    },
  },
  TELEGRAM_OWNER_IDS: {
    kind: "var",
    // Telegram user ids who manage the bot and whose private chats the default DM policy takes.
    schema: idList(/^\d{1,20}$/, "Telegram user ids"),
    doc: "comma list of Telegram user ids: the bot's owners there, whose private chats the default DM policy takes",
  },
  SLACK_BOT_TOKEN: {
    kind: "secret",
    schema: z.preprocess(
      unset,
      z
        .string()
        .trim()
        .regex(/^xoxb-[A-Za-z0-9-]{1,250}$/, "must be a Slack bot token (xoxb-...)")
        .optional(),
    ),
    doc: "the Slack app's bot token, `xoxb-…` ([slack.md](slack.md)); without it and the signing secret, the `/slack/*` routes answer 503",
    example: {
      note: "Optional: the Slack app (docs/slack.md); deployed, `npm run deploy -- --slack` sets them.\nLocally, set both here and give the app a tunnel's URLs (docs/slack.md#trying-it-locally).\nThe Bot User OAuth Token (OAuth & Permissions, after Install App: xoxb-...) and the Signing\nSecret (Basic Information, App Credentials: letters and digits only, not the Client Secret):",
    },
  },
  SLACK_SIGNING_SECRET: {
    kind: "secret",
    // The app's Signing Secret (Basic Information): a 32-character hex string.
    schema: z.preprocess(
      unset,
      z
        .string()
        .trim()
        .regex(/^[A-Za-z0-9]{16,128}$/, "must be the app's signing secret (letters and digits)")
        .optional(),
    ),
    doc: "the Slack app's Signing Secret (letters and digits, from its Basic Information): every request from Slack is signed with it",
    example: {},
  },
  SLACK_API_BASE: {
    kind: "var",
    schema: optionalUrl,
    default: `\`${DEFAULT_SLACK_API_BASE}\``,
    doc: "the Web API, with no trailing slash and no method (the worker adds `/<method>`)",
    example: {
      note: "Likewise the Web API base (the worker adds /<method>). The default:",
      value: DEFAULT_SLACK_API_BASE,
    },
  },
  SLACK_OWNER_IDS: {
    kind: "var",
    // Slack user ids (U..., W...) who manage the bot and whose DMs the default DM policy takes.
    schema: idList(/^[UW][A-Z0-9]{2,20}$/, "Slack user ids"),
    doc: "comma list of Slack user ids (`U…`, `W…`): the bot's owners there, whose DMs the default DM policy takes",
  },
  TRANSCRIPTION_MODEL: {
    kind: "var",
    schema: optionalString,
    default: `\`${DEFAULT_TRANSCRIPTION_MODEL}\` on an OpenAI-compatible backend, \`${DEFAULT_WORKERS_AI_TRANSCRIPTION_MODEL}\` on Workers AI`,
    doc: "the model voice notes are transcribed with",
  },
  INSTAGRAM_USER_ID: {
    kind: "var",
    schema: z.preprocess(
      unset,
      z
        .string()
        .regex(/^\d{1,30}$/, "must be the numeric Instagram professional account id")
        .optional(),
    ),
    doc: "the Instagram professional account that publishes ([instagram.md](instagram.md))",
  },
  INSTAGRAM_ACCESS_TOKEN: {
    kind: "secret",
    schema: optionalString,
    doc: "the Instagram account's access token",
    example: { note: "Optional: Instagram publishing (docs/instagram.md)." },
  },
  INSTAGRAM_GRAPH_BASE: {
    kind: "var",
    schema: optionalUrl,
    default: "`https://graph.facebook.com/v26.0`",
    doc: "the Graph API",
  },
  RATE_LIMIT_PER_TOKEN: {
    kind: "var",
    schema: rateRule(DEFAULT_RATE_LIMIT_PER_TOKEN),
    default: `\`${DEFAULT_RATE_LIMIT_PER_TOKEN}\``,
    doc: 'a token bucket, `"<count>/<s|min|hour|day>"` or `"off"`: requests per API token',
  },
  RATE_LIMIT_PER_USER: {
    kind: "var",
    schema: rateRule(DEFAULT_RATE_LIMIT_PER_USER),
    default: `\`${DEFAULT_RATE_LIMIT_PER_USER}\``,
    doc: "a token bucket, as above: chat turns (and Discord `/task`, `/remember`, `/recall`, `/tools`) per person, a chat user or an API `userId`, over every surface",
  },
  DAILY_TOKEN_LIMIT: {
    kind: "var",
    schema: wholeNumber("must be a whole number", 1),
    default: "no ceiling",
    doc: "model tokens an agent may spend per UTC day; a character's `settings.dailyTokens` wins",
  },
  INSPECTOR_TEXT_SHARE: {
    kind: "var",
    // The share of turns whose prompt text the inspector keeps in R2 (docs/observability.md).
    schema: z.preprocess(
      unset,
      z.coerce.number({ error: "must be a number from 0 to 1" }).min(0).max(1).optional(),
    ),
    default: "1",
    doc: "the share of replied turns (0-1) whose prompt text and tool arguments and results the turn inspector keeps, in R2 for 7 days; the others keep their outline only ([observability.md](observability.md#turn-inspector))",
  },
  MEMORY_RETENTION_DAYS: {
    kind: "var",
    // Days an agent's messages and summaries are kept (the bounds of settings.memory.retentionDays).
    schema: wholeNumber("must be a whole number of days", 1, 36_500),
    default: "kept",
    doc: "days an agent's messages and summaries are kept before the hourly upkeep deletes them (1-36,500); a character's `settings.memory.retentionDays` wins. Facts, descriptions, lore and documents are never deleted by it ([memory.md](memory.md#retention))",
  },
  ALLOW_LOOPBACK_FETCH: {
    kind: "dev-var",
    schema: trueOrFalse,
    doc: "`true` lets the guarded fetch reach `http://127.0.0.1`/`localhost`, e.g. local MCP servers (development and tests only)",
  },
  MCP_ALLOW_LOOPBACK: {
    kind: "dev-var",
    schema: trueOrFalse,
    doc: "the old name of `ALLOW_LOOPBACK_FETCH`, still honoured",
  },
  BRAVE_SEARCH_API_KEY: {
    kind: "secret",
    doc: "the web plugin's `web_search` through the Brave Search API; without it the tool is not offered ([plugins.md](plugins.md#the-web-reader-web))",
    example: {
      note: "Optional: web search for agents with the web plugin (docs/plugins.md), Brave Search API.",
    },
  },
  BRAVE_SEARCH_BASE: {
    kind: "var",
    default: "`https://api.search.brave.com/res/v1`",
    doc: "the Brave Search API",
  },
  PUBLIC_BASE_URL: {
    kind: "var",
    schema: optionalUrl,
    doc: "where the worker is reachable: the OAuth callback is `PUBLIC_BASE_URL/oauth/callback`, and Instagram fetches media links from it",
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: "var",
    default: "no traces",
    doc: "OpenTelemetry traces to your collector ([observability.md](observability.md#traces)): its OTLP base",
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    kind: "var",
    doc: "the traces URL, used as given (wins over the base)",
  },
  OTEL_EXPORTER_OTLP_HEADERS: {
    kind: "secret",
    doc: "headers sent to the collector, `key=value,key2=value2`, values percent-encoded",
  },
  OTEL_SERVICE_NAME: {
    kind: "var",
    default: "`edge-agents`",
    doc: "`service.name` of the traces' resource",
  },
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: {
    kind: "var",
    default: "no message text in any span",
    doc: "`true` puts the model calls' messages and answers in their spans",
  },
  OTEL_TRACE_PLAIN_IDS: {
    kind: "var",
    default: "hashed",
    doc: "`true` shows agent, room and user ids in the traces as they are",
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;

/** The variables of `Env`: every setting, as the platform hands it over (text, or absent). */
export type SettingVariables = { [Name in SettingName]?: string };

type Checked = {
  [Name in SettingName as (typeof SETTINGS)[Name] extends { schema: z.ZodType }
    ? Name
    : never]: (typeof SETTINGS)[Name] extends { schema: infer Schema } ? Schema : never;
};

/** The settings config.ts checks, as one zod object. */
export const SettingsSchema = z.object(
  Object.fromEntries(
    Object.entries(SETTINGS as Record<string, Setting>).flatMap(([name, setting]) =>
      setting.schema ? [[name, setting.schema]] : [],
    ),
  ) as Checked,
);

const namesOf = (...kinds: SettingKind[]): SettingName[] =>
  (Object.keys(SETTINGS) as SettingName[]).filter((name) => kinds.includes(SETTINGS[name].kind));

/**
 * The plain (not secret) variables a deployment sets with `npm run deploy -- --var NAME=value`.
 * wrangler.toml has no `[vars]` and sets `keep_vars`, so a value set once stays through later
 * deploys. Development-only ones (ALLOW_LOOPBACK_FETCH) are not among them.
 */
export const DEPLOYMENT_VARIABLES: readonly SettingName[] = namesOf("var");
/** Every secret the worker reads. */
export const SECRET_NAMES: readonly SettingName[] = namesOf("secret", "generated-secret");
/** The secrets `npm run deploy` uploads from the shell when the worker lacks them. */
export const SHELL_SECRETS: readonly SettingName[] = namesOf("secret");
