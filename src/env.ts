// The worker's bindings and variables as wrangler.toml and secrets provide them, before
// validation: src/config.ts parses the variables once into a typed Config. The variables are
// declared in src/settings.ts; only the bindings are listed here. Kept apart from
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
import type { SettingVariables } from "./settings.ts";

/** The bindings wrangler.toml declares, and every variable and secret of settings.ts. */
export interface Env extends SettingVariables {
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
}
