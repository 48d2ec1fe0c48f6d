// D1 tables, declared once with drizzle; `npm run db:generate` turns changes into migrations.
// Every memory belongs to one agent (cascade on delete); messages also carry their room, facts and
// descriptions their user. JSON columns are re-validated on read (src/db/memory/rows.ts).
import { sql } from "drizzle-orm";
import {
  blob,
  foreignKey,
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";

export const agents = sqliteTable("agents", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  username: text("username"),
  format: text("format", { enum: ["v1", "v0"] }).notNull(),
  /** The normalized character without its secrets (JSON). */
  character: text("character").notNull(),
  /** The character's secrets, AES-GCM encrypted with SECRETS_KEY (null when it has none). */
  secrets: text("secrets"),
  /** The memory database holding the agent's data (`MEMORY_DB_<n>`); null: this one (shards.ts). */
  shard: text("shard"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * A small integer per agent, never reused and never deleted (not even with its agent): the FTS5
 * index keys an agent's memories as `num << 40 | seq`, so a search reads one agent's rowid range
 * instead of AND-ing a per-agent token that every one of its rows carries (migration 0009).
 * Filled by a trigger on `agents`.
 */
export const agentNumbers = sqliteTable("agent_numbers", {
  num: integer("num").primaryKey({ autoIncrement: true }),
  agentId: text("agent_id").notNull().unique(),
});

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  name: text("name"),
  source: text("source").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const rooms = sqliteTable(
  "rooms",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    id: text("id").notNull(),
    source: text("source").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.id] })],
);

export const participants = sqliteTable(
  "participants",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    roomId: text("room_id").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.agentId, t.roomId, t.userId] }),
    index("participants_user_idx").on(t.userId),
  ],
);

export const MEMORY_TYPES = [
  "message",
  "fact",
  "description",
  "lore",
  "document",
  "fragment",
  "summary",
] as const;

export const memories = sqliteTable(
  "memories",
  {
    // An explicit, never-reused rowid: the FTS5 index (migrations/0009) is keyed by it (with the
    // agent's number above it), so it must survive VACUUM, which may renumber implicit rowids.
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    /** Unique within its agent only: the same id in two agents is two memories (migration 0013). */
    id: text("id").notNull(),
    type: text("type", { enum: MEMORY_TYPES }).notNull(),
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    roomId: text("room_id"),
    userId: text("user_id"),
    /** A fragment's document. */
    parentId: text("parent_id"),
    content: text("content").notNull(),
    metadata: text("metadata").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
    /** When its vector was written; null while it waits for the embedding queue. */
    embeddedAt: integer("embedded_at"),
  },
  (t) => [
    // A memory by id is always an agent's memory by id; nothing looks an id up across agents.
    uniqueIndex("memories_agent_id_unique").on(t.agentId, t.id),
    // Room history, newest first: the hot query of every turn.
    index("memories_room_idx").on(t.agentId, t.roomId, t.type, t.createdAt),
    // What the agent knows about a user (facts, descriptions).
    index("memories_user_idx").on(t.agentId, t.userId, t.type, t.createdAt),
    // Lore, documents, summaries of one agent.
    index("memories_type_idx").on(t.agentId, t.type, t.createdAt),
    // A document's fragments, in order.
    index("memories_parent_idx").on(t.agentId, t.parentId),
    // Facts shared with everyone, newest first: every turn's "what you know about them" reads
    // them, and without this index that read walked all of the agent's memories (json_extract
    // on each), so a turn grew with the agent's memory. Queries must spell the condition as here
    // (a literal 'fact') for SQLite to use it.
    index("memories_shared_facts_idx")
      .on(t.agentId, t.createdAt)
      .where(sql`${t.type} = 'fact' AND json_extract(${t.metadata}, '$.shared') = 1`),
    // The embedding queue: only rows still waiting are in this index.
    index("memories_pending_idx")
      .on(t.agentId, t.roomId)
      .where(sql`${t.embeddedAt} IS NULL AND ${t.type} != 'document'`),
  ],
);

/**
 * The local vector index, used when no Vectorize binding is configured: one float32 vector per
 * embedded memory, plus an int8 copy (`code`) that isolates cache and rank (vector-cache.ts). Deleted
 * with its memory.
 */
export const memoryVectors = sqliteTable(
  "memory_vectors",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    memoryId: text("memory_id").notNull(),
    agentId: text("agent_id").notNull(),
    type: text("type", { enum: MEMORY_TYPES }).notNull(),
    roomId: text("room_id"),
    userId: text("user_id"),
    dimensions: integer("dimensions").notNull(),
    vector: blob("vector", { mode: "buffer" }).notNull(),
    code: blob("code", { mode: "buffer" }).notNull(),
    /** The code's sign bits as the cache ranks them (vector-cache.ts), so a cold cache need not compute them; null in rows written before migration 0011. */
    bits: blob("bits", { mode: "buffer" }),
  },
  (t) => [
    uniqueIndex("memory_vectors_agent_memory_unique").on(t.agentId, t.memoryId),
    index("memory_vectors_agent_idx").on(t.agentId, t.seq),
    foreignKey({
      columns: [t.agentId, t.memoryId],
      foreignColumns: [memories.agentId, memories.id],
    }).onDelete("cascade"),
  ],
);

/** Vectors to remove from Vectorize, written by a trigger when an embedded memory is deleted. */
export const vectorDeletions = sqliteTable(
  "vector_deletions",
  {
    agentId: text("agent_id").notNull(),
    memoryId: text("memory_id").notNull(),
    deletedAt: integer("deleted_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.memoryId] })],
);

/**
 * Vectorize vectors written before migration 0013 under the memory id itself (ids were global
 * then), to delete: their memories were marked pending and get vectors under the per-agent scheme
 * (vectorize-index.ts). Filled once by the migration, drained by the sweeper and by
 * `npm run memory -- init`.
 */
export const legacyVectorIds = sqliteTable("legacy_vector_ids", {
  vectorId: text("vector_id").primaryKey(),
  agentId: text("agent_id").notNull(),
});

/** Facts about the vector index that must not change silently (its dimension, who embeds). */
export const vectorIndexMeta = sqliteTable("vector_index_meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const relationships = sqliteTable(
  "relationships",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    interactionCount: integer("interaction_count").notNull().default(0),
    lastInteraction: integer("last_interaction"),
    /** -1..1, written by a sentiment evaluator; null until one has run. */
    sentiment: real("sentiment"),
    /** The last turn counted, so a replayed turn is not counted twice. */
    lastTurnId: text("last_turn_id"),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.userId] })],
);

/** Which agent serves a Discord channel (set with `/agent`); unset channels use the client default. */
export const discordChannels = sqliteTable("discord_channels", {
  channelId: text("channel_id").primaryKey(),
  guildId: text("guild_id"),
  agentId: text("agent_id")
    .notNull()
    .references(() => agents.id, { onDelete: "cascade" }),
  updatedBy: text("updated_by").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** Per-client settings (`POST /clients/:clientId/config`), one JSON document per client. */
export const clientConfigs = sqliteTable("client_configs", {
  clientId: text("client_id").primaryKey(),
  config: text("config").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * API tokens minted with `POST /auth/tokens`. Only the SHA-256 of the secret is stored; the secret
 * is shown once, at minting. Revoked tokens stay listed (with `revokedAt`) as an audit trail.
 */
export const apiTokens = sqliteTable("api_tokens", {
  id: text("id").primaryKey(),
  /** Hex SHA-256 of the whole bearer token. */
  hash: text("hash").notNull().unique(),
  name: text("name").notNull(),
  /** JSON array of scopes. */
  scopes: text("scopes").notNull(),
  /** JSON array of agent ids the token may act for; null means every agent. */
  agents: text("agents"),
  /** This token's own rate rule ("100/min"); null means RATE_LIMIT_PER_TOKEN. */
  rateLimit: text("rate_limit"),
  /** The user-id prefix it may act as (`acme:`); null means any user outside reserved namespaces. */
  userPrefix: text("user_prefix"),
  createdBy: text("created_by").notNull(),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at"),
  revokedAt: integer("revoked_at"),
  lastUsedAt: integer("last_used_at"),
});

/** Model tokens spent per agent per UTC day, for the per-agent daily ceiling. */
export const modelUsageDaily = sqliteTable(
  "model_usage_daily",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    /** YYYY-MM-DD, UTC. */
    day: text("day").notNull(),
    tokens: integer("tokens").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.day] })],
);

/**
 * One row per unit of an agent's work (a turn, a task step, a caption): who it was for, where,
 * which model, what it spent, which tools ran. Written with the day's tokens above, in the turn's
 * own D1 trip; read by GET /agents/:id/usage and the per-person and per-server budgets.
 */
export const usageRecords = sqliteTable(
  "usage_records",
  {
    id: text("id").notNull(),
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    /** turn, task, caption. */
    kind: text("kind").notNull(),
    /** YYYY-MM-DD, UTC, of the first part recorded. */
    day: text("day").notNull(),
    roomId: text("room_id"),
    userId: text("user_id"),
    guildId: text("guild_id"),
    source: text("source"),
    model: text("model"),
    inputTokens: integer("input_tokens").notNull().default(0),
    outputTokens: integer("output_tokens").notNull().default(0),
    modelCalls: integer("model_calls").notNull().default(0),
    /** JSON array of {name, ok}, one per tool call. */
    tools: text("tools").notNull().default("[]"),
    toolCalls: integer("tool_calls").notNull().default(0),
    /** The error code of a failed unit; null otherwise. */
    error: text("error"),
    /** Query embeddings that missed the retrieval budget: searches by text alone. */
    lateEmbeddings: integer("late_embeddings").notNull().default(0),
    /** Of input_tokens, those the provider read from its prompt cache (priced apart). */
    cachedInputTokens: integer("cached_input_tokens").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    /** Units of work this row counts: 1, or a rolled-up row's count (src/db/stores/usage-rollup.ts). */
    units: integer("units").notNull().default(1),
    /**
     * A day's units of one (kind, room, user, guild, source, model, error) summed into one row after
     * USAGE_ROLLUP_AFTER_DAYS; its `tools` are [{name, units, calls, failed}] instead of one per call.
     */
    rolledUp: integer("rolled_up", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    primaryKey({ columns: [t.agentId, t.id] }),
    // The rollup's queue: only rows not yet rolled up are in this index.
    index("usage_records_unrolled_idx").on(t.agentId, t.day).where(sql`${t.rolledUp} = 0`),
    index("usage_records_day_idx").on(t.agentId, t.day),
    index("usage_records_user_idx").on(t.agentId, t.userId, t.day),
    index("usage_records_guild_idx").on(t.agentId, t.guildId, t.day),
    // A chat place's budgets, over every agent: a member's day, a server's day.
    index("usage_records_member_idx").on(t.userId, t.day),
    index("usage_records_server_idx").on(t.guildId, t.day),
  ],
);

/**
 * What a replied turn kept for the turn inspector (GET /agents/:id/turns/:turnId): its prompt's
 * sections, the memories used, tool calls and model timing, as JSON (`detail`, checked on read).
 * Written with the reply in the room's after-reply trip; pruned after TURN_INSPECTION_RETENTION_MS
 * by the hourly upkeep.
 */
export const turnInspections = sqliteTable(
  "turn_inspections",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    turnId: text("turn_id").notNull(),
    roomId: text("room_id").notNull(),
    /** Whose turn it was: a prefix token sees only its own users' turns. */
    userId: text("user_id").notNull(),
    detail: text("detail").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.agentId, t.turnId] }),
    index("turn_inspections_created_idx").on(t.createdAt),
  ],
);

/**
 * After-reply evaluators (fact extraction, summaries) that failed, per agent, UTC day and
 * evaluator: a reply looks fine while nothing is remembered (a SMALL_MODEL the endpoint does not
 * serve, say), so `/health` counts them and the playground says so.
 */
export const evaluatorFailuresDaily = sqliteTable(
  "evaluator_failures_daily",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    /** YYYY-MM-DD, UTC. */
    day: text("day").notNull(),
    evaluator: text("evaluator").notNull(),
    count: integer("count").notNull().default(0),
    lastAt: integer("last_at").notNull(),
    /** Why the last one's model call failed (ModelFailureCause); null: not a model failure. */
    lastCause: text("last_cause"),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.day, t.evaluator] })],
);

/**
 * Turns whose model failed (after retries and fallbacks), counted per agent, UTC day, model and
 * cause (ModelFailureCause), so GET /health can say the model is down, since when, and what to
 * check. Names, causes and times only: never a failure's message, which may carry a remote body.
 */
export const modelFailuresDaily = sqliteTable(
  "model_failures_daily",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    /** YYYY-MM-DD, UTC. */
    day: text("day").notNull(),
    model: text("model").notNull(),
    cause: text("cause").notNull(),
    count: integer("count").notNull().default(0),
    lastAt: integer("last_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.day, t.model, t.cause] })],
);

/**
 * Who was told, once, that an agent does not take their direct messages on a platform
 * (src/clients/chat/dm-notice.ts): a refused DM after that gets silence, so a person who keeps
 * writing does not get the same sentence each time. `user_id` is `<platform>:<id>`.
 */
export const dmNotices = sqliteTable(
  "dm_notices",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    userId: text("user_id").notNull(),
    toldAt: integer("told_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.userId] })],
);

/**
 * The database's size once a UTC day, taken by the hourly upkeep (the last sample of the day
 * stays): /health and GET /agents/:id/storage read the growth rate and the days left to D1's limit
 * from two samples instead of scanning tables.
 */
export const databaseSizeDaily = sqliteTable("database_size_daily", {
  /** YYYY-MM-DD, UTC. */
  day: text("day").primaryKey(),
  bytes: integer("bytes").notNull(),
  sampledAt: integer("sampled_at").notNull(),
});

/**
 * MCP servers added to one agent at runtime (`POST /agents/:agentId/tools`). Servers in the
 * checked-in registry (mcp-servers.json) are not copied here; a character names those.
 */
export const agentMcpServers = sqliteTable(
  "agent_mcp_servers",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** The server's settings as JSON (url, transport, headers, auth); re-validated on read. */
    config: text("config").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.name] })],
);

/**
 * OAuth state per agent and MCP server, shared by every room of the agent: the registered client,
 * the tokens and the pending PKCE verifier, sealed together with SECRETS_KEY (AES-GCM).
 */
export const mcpCredentials = sqliteTable(
  "mcp_credentials",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    server: text("server").notNull(),
    /** Sealed JSON: client information, tokens, code verifier, discovery state, redirect URL. */
    sealed: text("sealed").notNull(),
    /** SHA-256 (hex) of the pending authorization's `state`, to find the row on the callback. */
    stateHash: text("state_hash"),
    stateExpiresAt: integer("state_expires_at"),
    /** When the access token expires (ms), to refresh ahead of time; null when unknown. */
    tokenExpiresAt: integer("token_expires_at"),
    /**
     * The room refreshing the token, until when (ms): refreshes go one at a time, since a server
     * that rotates refresh tokens refuses the second use of one (oauth-provider.ts).
     */
    refreshLeaseOwner: text("refresh_lease_owner"),
    refreshLeaseUntil: integer("refresh_lease_until"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.agentId, t.server] }),
    index("mcp_credentials_state_idx").on(t.stateHash),
  ],
);

export const MEDIA_POST_STATUSES = [
  "stored",
  "queued",
  "processing",
  "publishing",
  "published",
  "failed",
] as const;

/**
 * Instagram posts: the uploaded files (in R2) and where publishing stands. The publisher moves a
 * post queued -> processing (container created) -> publishing -> published, or failed, storing
 * each step before taking the next, so a restarted Durable Object resumes without publishing twice.
 */
export const mediaPosts = sqliteTable(
  "media_posts",
  {
    id: text("id").primaryKey(),
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    status: text("status", { enum: MEDIA_POST_STATUSES }).notNull(),
    caption: text("caption").notNull().default(""),
    /** The agent is to write the caption (in character) before the post is published. */
    captionPending: integer("caption_pending", { mode: "boolean" }).notNull().default(false),
    altText: text("alt_text"),
    /** JSON: [{key, kind, contentType, bytes, sha256, width?, height?}] in post order. */
    items: text("items").notNull(),
    /** The Graph API container to publish (a carousel's parent) and its children (JSON). */
    containerId: text("container_id"),
    children: text("children"),
    mediaId: text("media_id"),
    permalink: text("permalink"),
    /** JSON {code, message, graphCode?, graphSubcode?} when failed. */
    error: text("error"),
    /** Transient failures and status polls so far, for backoff and the give-up bound. */
    attempts: integer("attempts").notNull().default(0),
    processingSince: integer("processing_since"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("media_posts_agent_idx").on(t.agentId, t.createdAt)],
);

/**
 * Skills added to one agent after its character was written: through the API, or by the agent
 * itself once a person approved its proposal. A character's own `settings.skills` stay in the file.
 */
export const agentSkills = sqliteTable(
  "agent_skills",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description").notNull(),
    body: text("body").notNull(),
    /** `api` (POST /agents/:agentId/skills) or `agent` (an approved save_skill proposal). */
    source: text("source", { enum: ["api", "agent"] }).notNull(),
    proposalId: text("proposal_id"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.name] })],
);

export const PROPOSAL_KINDS = ["skill", "tool"] as const;
/** `expired`: nobody answered in time (src/db/stores/proposal-store.ts, PENDING_PROPOSAL_TTL_MS). */
export const PROPOSAL_STATUSES = ["pending", "approved", "denied", "expired"] as const;

/**
 * What an agent asked to change about itself (a skill to keep, an MCP server from the catalog),
 * waiting for a person's yes or no. The change and where it was asked are JSON, checked on read.
 */
export const proposals = sqliteTable(
  "proposals",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    /** 16 hex characters, derived from the turn and the change: a replayed turn files it once. */
    id: text("id").notNull(),
    kind: text("kind", { enum: PROPOSAL_KINDS }).notNull(),
    status: text("status", { enum: PROPOSAL_STATUSES }).notNull(),
    /** JSON: {kind: "skill", skill} or {kind: "tool", server, reason}. */
    change: text("change").notNull(),
    /** JSON: {surface, roomId, userId, turnId}. */
    origin: text("origin").notNull(),
    createdAt: integer("created_at").notNull(),
    decidedAt: integer("decided_at"),
    /** Who decided: `token:<id>`, `discord:<user id>` or `settings` (auto-approved). */
    decidedBy: text("decided_by"),
  },
  (t) => [
    primaryKey({ columns: [t.agentId, t.id] }),
    index("proposals_agent_status_idx").on(t.agentId, t.status, t.createdAt),
  ],
);

/** Servers of the catalog (mcp-servers.json) added to one agent by an approved request_tool. */
export const agentCatalogServers = sqliteTable(
  "agent_catalog_servers",
  {
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.name] })],
);

/**
 * An agent being moved to another database (`npm run memory -- move`, src/db/moves/): where from
 * and to, the phase, and where the copy stands, so a move interrupted anywhere resumes from here
 * (or rolls back). In the catalog only.
 */
export const agentMoves = sqliteTable("agent_moves", {
  agentId: text("agent_id")
    .primaryKey()
    .references(() => agents.id, { onDelete: "cascade" }),
  source: text("source").notNull(),
  target: text("target").notNull(),
  /** copy, sync, verify (src/db/moves/agent-move.ts). */
  phase: text("phase").notNull(),
  /** The table being copied (an index into MOVED_TABLES), and the last key copied there. */
  tableIndex: integer("table_index").notNull().default(0),
  cursor: text("cursor"),
  startedAt: integer("started_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Agents whose data must not change in this database: moved away, or being switched. Triggers on
 * every table of an agent's data refuse a write for a fenced agent (migration 0023), so a writer
 * that still thinks the agent lives here fails loudly instead of writing where nobody reads.
 */
export const agentFences = sqliteTable("agent_fences", {
  agentId: text("agent_id").primaryKey(),
  since: integer("since").notNull(),
});
