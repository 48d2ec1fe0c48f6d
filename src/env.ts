// The worker's bindings and variables as wrangler.toml and secrets provide them, before
// validation: src/config.ts parses the variables once into a typed Config. Kept apart from
// config.ts so modules that only pass the bindings along need not import the parsing. The
// Durable Object namespaces are typed by their RPC interfaces (src/rpc.ts), not the classes,
// which import Env themselves.
import type {
  AgentRoomRpc,
  AgentTasksRpc,
  DiscordGatewayRpc,
  DiscordRestLimiterRpc,
  PostPublisherRpc,
  RateLimiterRpc,
  SchemaGateRpc,
} from "./rpc.ts";

export interface Env {
  ROOMS: DurableObjectNamespace<AgentRoomRpc>;
  LIMITS: DurableObjectNamespace<RateLimiterRpc>;
  TASKS: DurableObjectNamespace<AgentTasksRpc>;
  PUBLISHER: DurableObjectNamespace<PostPublisherRpc>;
  /** One object ("schema") that applies pending D1 migrations once per deploy. */
  SCHEMA: DurableObjectNamespace<SchemaGateRpc>;
  /** The Discord Gateway: a coordinator named by the application id and one object per shard. */
  GATEWAY?: DurableObjectNamespace<DiscordGatewayRpc>;
  /** Discord's REST rate limits shared by the bot's rooms (src/rate-limits/discord-rest-limiter.ts). */
  DISCORD_LIMITS?: DurableObjectNamespace<DiscordRestLimiterRpc>;
  /** The catalog (agents, tokens, configs) and, without memory databases, everything else. */
  DB: D1Database;
  /**
   * Memory databases (`MEMORY_DB_1` .. `MEMORY_DB_<n>`, optional): each agent's memories, vector
   * rows, rooms and inspector records live in one of them (src/db/shards.ts).
   */
  [memoryDb: `MEMORY_DB_${number}`]: D1Database | undefined;
  MEDIA: R2Bucket;
  /**
   * The MCP server's OAuth for hosts (@cloudflare/workers-oauth-provider): clients, grants and
   * tokens (hashed; grant props encrypted). Provisioned by `wrangler deploy`.
   */
  OAUTH_KV: KVNamespace;
  VECTORS?: Vectorize;
  AI?: Ai;
  OPENAI_API_KEY?: string;
  OPENAI_BASE_URL?: string;
  MODEL?: string;
  MODEL_FALLBACKS?: string;
  SMALL_MODEL?: string;
  /** `auto` (default: OpenAI's own endpoint only), `on` or `off`: send `prompt_cache_key`. */
  PROMPT_CACHE_KEY?: string;
  EMBEDDING_MODEL?: string;
  EMBEDDING_DIMENSIONS?: string;
  DISCORD_APPLICATION_ID?: string;
  DISCORD_PUBLIC_KEY?: string;
  DISCORD_BOT_TOKEN?: string;
  DISCORD_API_BASE?: string;
  DISCORD_OWNER_IDS?: string;
  /** "true": read channel messages over the Gateway too (needs DISCORD_BOT_TOKEN). */
  DISCORD_GATEWAY?: string;
  /** "auto" (default: the count GET /gateway/bot recommends) or a number of Gateway shards. */
  DISCORD_GATEWAY_SHARDS?: string;
  TELEGRAM_BOT_TOKEN?: string;
  /** setWebhook's secret_token; every webhook request carries it (X-Telegram-Bot-Api-Secret-Token). */
  TELEGRAM_WEBHOOK_SECRET?: string;
  TELEGRAM_API_BASE?: string;
  TELEGRAM_OWNER_IDS?: string;
  SLACK_BOT_TOKEN?: string;
  /** The Slack app's Signing Secret: every Events API, interaction and slash command request is signed with it. */
  SLACK_SIGNING_SECRET?: string;
  SLACK_API_BASE?: string;
  SLACK_OWNER_IDS?: string;
  /** The voice-note transcription model (default whisper-1, or Workers AI's Whisper). */
  TRANSCRIPTION_MODEL?: string;
  INSTAGRAM_USER_ID?: string;
  INSTAGRAM_ACCESS_TOKEN?: string;
  INSTAGRAM_GRAPH_BASE?: string;
  ADMIN_TOKEN?: string;
  SECRETS_KEY?: string;
  PUBLIC_BASE_URL?: string;
  MAX_CONTEXT_TOKENS?: string;
  RATE_LIMIT_PER_TOKEN?: string;
  RATE_LIMIT_PER_USER?: string;
  DAILY_TOKEN_LIMIT?: string;
  /** Days messages and summaries are kept, for characters that set no retentionDays (config.ts). */
  MEMORY_RETENTION_DAYS?: string;
  /** The share of turns (0-1) whose prompt text the turn inspector keeps in R2; default 1. */
  INSPECTOR_TEXT_SHARE?: string;
  SEED_CHARACTERS?: string;
  /** "false" ignores the AI binding (local development without a Cloudflare login, tests). */
  WORKERS_AI?: string;
  /** "false": leave the VECTORS binding unused (local development; see config.ts). */
  VECTORIZE?: string;
  ALLOW_LOOPBACK_FETCH?: string;
  /** The old name of ALLOW_LOOPBACK_FETCH, still honoured. */
  MCP_ALLOW_LOOPBACK?: string;
  /** Traces (src/telemetry/): the OpenTelemetry exporter variables, and our two switches. */
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_HEADERS?: string;
  OTEL_SERVICE_NAME?: string;
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?: string;
  OTEL_TRACE_PLAIN_IDS?: string;
}
