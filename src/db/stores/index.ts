// Every data-access object of one environment, built in one place and once per env object (the
// worker's and each Durable Object's): `stores()` over the catalog (DB), and `agentData()` over the
// database that holds an agent's data (src/db/shards.ts): its memory stack (the embedder the
// configuration picks, the vector index: Vectorize when the VECTORS binding exists, else the local
// index in that database; hybrid retrieval; the embedding pipeline) and its inspector records.
// The HTTP routes that honour the caller's D1 bookmark get the same over a session of that database
// (`agentDataIn()`, `catalogIn()`, ../read-sessions.ts), built per request.
// Routes, rooms and clients ask here; nothing outside src/db/ builds drizzle.
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { withRecentVectors } from "../../runtime/retrieval/recent-vectors.ts";
import { createEmbedder } from "../../model/embedder.ts";
import type { SpendLedger } from "../../runtime/turn/spend.ts";
import type { MemoryStore } from "../../runtime/ports/memory.ts";
import type { MemoryRetriever } from "../../runtime/ports/retrieval.ts";
import type { Embedder, VectorIndex } from "../../runtime/ports/vectors.ts";
import {
  type ChatClientStore,
  createChatClientStore,
  SLACK_CLIENT,
  type SlackConfig,
  TELEGRAM_CLIENT,
  type TelegramConfig,
} from "./chat-client-store.ts";
import { createAgentServerStore, type AgentServerStore } from "./agent-server-store.ts";
import { createAgentStore, type AgentStore } from "./agent-store.ts";
import { createD1MemoryStore } from "../memory/d1-memory-store.ts";
import { openDb, type Db } from "../db.ts";
import { createDiscordSettingsStore, type DiscordSettingsStore } from "./discord-settings-store.ts";
import { createEmbeddingPipeline, type EmbeddingPipeline } from "../memory/embedding-pipeline.ts";
import { createHybridSearch } from "../memory/hybrid-search.ts";
import { createLocalVectorIndex } from "../memory/local-vector-index.ts";
import { createMcpCredentialStore, type McpCredentialStore } from "./mcp-credential-store.ts";
import { createMediaPostStore, type MediaPostStore } from "./post-store.ts";
import { createMessageHistory, type MessageHistory } from "../memory/message-history.ts";
import { databaseReachable } from "../ping.ts";
import { createProposalStore, type ProposalStore } from "./proposal-store.ts";
import { createSecretBox } from "../secret-box.ts";
import { createSkillStore, type SkillStore } from "./skill-store.ts";
import { createD1SpendLedger } from "./spend-ledger.ts";
import {
  createEvaluatorFailures,
  createModelFailures,
  type EvaluatorFailures,
  type ModelFailures,
} from "./failure-counts.ts";
import { createDmNoticeStore, type DmNoticeStore } from "./dm-notice-store.ts";
import { createTokenStore, type TokenStore } from "./token-store.ts";
import { createTurnInspectionStore, type TurnInspectionStore } from "./turn-inspection-store.ts";
import { createVectorizeIndex, type VectorizeIndex } from "../memory/vectorize-index.ts";
import { failuresNamed } from "../database-failures.ts";
import { CATALOG_DB, type DatabaseName, databaseBinding, memoryDatabases } from "../shards.ts";
import { type AgentPlacement, createAgentPlacement } from "./agent-placement.ts";
import type { DatabaseSessions, SessionUse } from "../read-sessions.ts";

/** What lives in the catalog (DB) whatever the deployment: agents, tokens, configs, usage. */
export interface Stores {
  /** The catalog's handle, for the usage queries; agents' memories are in `agentData()`'s. */
  catalog: Db;
  agents: AgentStore;
  /** Which database holds each agent's data (src/db/shards.ts). */
  placement: AgentPlacement;
  tokens: TokenStore;
  /** Model spend against the daily ceiling. */
  spend: SpendLedger;
  /** After-reply evaluators that failed, per day (for /health). */
  evaluatorFailures: EvaluatorFailures;
  modelFailures: ModelFailures;
  posts: MediaPostStore;
  /** MCP servers added to one agent at runtime. */
  mcpServers: AgentServerStore;
  /** OAuth credentials of MCP servers; null without SECRETS_KEY (they are only kept sealed). */
  mcpCredentials: McpCredentialStore | null;
  discord: DiscordSettingsStore;
  /** The webhook chat clients' bindings (default agent, allowed chats or channels). */
  telegram: ChatClientStore<TelegramConfig>;
  slack: ChatClientStore<SlackConfig>;
  /** Skills added to an agent after its character was written. */
  skills: SkillStore;
  /** What agents asked to change about themselves. */
  proposals: ProposalStore;
  /** Who was told an agent does not take their DMs. */
  dmNotices: DmNoticeStore;
  /** A cheap round trip to the catalog, for /health. */
  reachable(): Promise<boolean>;
}

/** One database's agent data: memories and their vectors, rooms, the inspector's records. */
export interface AgentData {
  /** Which database this is. */
  database: DatabaseName;
  /** For the query functions of memory-repo.ts and knowledge.ts; only src/db/memory/ imports drizzle. */
  db: Db;
  /** What replied turns kept for the turn inspector. */
  inspections: TurnInspectionStore;
  /** The runtime's MemoryStore (messages, facts, rooms, relationships). */
  memories: MemoryStore;
  messages: MessageHistory;
  embedder: Embedder;
  index: VectorIndex;
  retriever: MemoryRetriever;
  pipeline: EmbeddingPipeline;
  /** A cheap round trip to this database. */
  reachable(): Promise<boolean>;
}

const cache = new WeakMap<object, Stores>();
const dataCache = new WeakMap<object, Map<DatabaseName, AgentData>>();

export function stores(env: Env): Stores {
  const cached = cache.get(env);
  if (cached) return cached;
  const config = loadConfig(env);
  const db = openDb(env.DB);
  const box = config.secretsKey ? createSecretBox(config.secretsKey) : null;
  const placement = createAgentPlacement(env, db);
  const homes = { placement, open: (name: DatabaseName) => dataOn(env, name).db };
  const built: Stores = {
    catalog: db,
    agents: createAgentStore(db, box, homes),
    placement,
    tokens: createTokenStore(db),
    spend: createD1SpendLedger(db),
    evaluatorFailures: createEvaluatorFailures(db),
    modelFailures: createModelFailures(db),
    posts: createMediaPostStore(db),
    mcpServers: createAgentServerStore(db),
    mcpCredentials: box ? createMcpCredentialStore(db, box) : null,
    discord: createDiscordSettingsStore(db),
    telegram: createChatClientStore(db, TELEGRAM_CLIENT),
    slack: createChatClientStore(db, SLACK_CLIENT),
    skills: createSkillStore(db),
    proposals: createProposalStore(db),
    dmNotices: createDmNoticeStore(db),
    reachable: () => databaseReachable(db),
  };
  cache.set(env, built);
  return built;
}

/** The data of the agents one database holds (DB itself, or a memory database). */
export function dataOn(env: Env, name: DatabaseName): AgentData {
  const perEnv = dataCache.get(env) ?? new Map<DatabaseName, AgentData>();
  dataCache.set(env, perEnv);
  const cached = perEnv.get(name);
  if (cached) return cached;
  const built = buildAgentData(env, name);
  perEnv.set(name, built);
  return built;
}

/** The data of one agent, in whichever database holds it. */
export async function agentData(env: Env, agentId: string): Promise<AgentData> {
  if (memoryDatabases(env).length === 0) return dataOn(env, CATALOG_DB);
  return dataOn(env, await stores(env).placement.of(agentId));
}

/**
 * One agent's data over this request's session of its database (../read-sessions.ts): a read
 * starts at the caller's bookmark, a write on the primary. Per request, since a session is one
 * caller's; the isolate's embedder, Vectorize index and recent query vectors are shared.
 */
export async function agentDataIn(
  env: Env,
  agentId: string,
  sessions: DatabaseSessions,
  use: SessionUse,
): Promise<AgentData> {
  const shared = await agentData(env, agentId);
  const name = shared.database;
  return buildAgentData(env, name, {
    binding: sessions.open(name, databaseBinding(env, name), use),
    shared,
  });
}

/** The catalog over this request's read session of it, for the usage and storage reads. */
export function catalogIn(env: Env, sessions: DatabaseSessions): Db {
  return openDb(sessions.open(CATALOG_DB, env.DB, "read"));
}

function buildAgentData(
  env: Env,
  name: DatabaseName,
  session?: { binding: D1Database; shared: AgentData },
): AgentData {
  const config = loadConfig(env);
  const binding = session?.binding ?? databaseBinding(env, name);
  // A memory database's failures are its own agents' 503s, named (database-failures.ts).
  const db = openDb(name === CATALOG_DB ? binding : failuresNamed(name, binding));
  // One Vectorize index serves every database (its rows carry the agent); the local index lives
  // beside the memories it indexes (its cache is the isolate's, so one per session costs nothing).
  const vectorize = config.vectors ? vectorizeOf(config.vectors) : null;
  const index = vectorize ?? createLocalVectorIndex(db);
  // Without EMBEDDING_MODEL, the embedder whose size the index already holds keeps serving it. It
  // remembers its recent texts' vectors for the search and the pipeline alike (a turn's message is
  // embedded once, for its query and its stored copy), across this isolate's sessions.
  const embedder =
    session?.shared.embedder ?? withRecentVectors(createEmbedder(config, () => index.dimensions()));
  const retriever = createHybridSearch({
    db,
    // A replica behind this isolate's vector cache does not prove a memory gone: only searches
    // on the primary make the cache forget a vector (VectorIndex.forget).
    index: session ? { ...index, forget: undefined } : index,
    embedder,
    vectorWeight: vectorWeightFor(embedder),
  });
  return {
    database: name,
    db,
    inspections: createTurnInspectionStore(db, {
      bucket: env.MEDIA,
      textShare: config.inspectorTextShare,
    }),
    memories: createD1MemoryStore(db),
    messages: createMessageHistory(db),
    embedder,
    index,
    retriever,
    pipeline: createEmbeddingPipeline({
      db,
      embedder,
      index,
      now: () => Date.now(),
      deleteLegacyVectors: vectorize ? (ids) => vectorize.deleteLegacy(ids) : undefined,
    }),
    reachable: () => databaseReachable(db),
  };
}

const vectorizeCache = new WeakMap<Vectorize, VectorizeIndex>();

/** One Vectorize index per binding (it remembers its dimension), shared by every database. */
function vectorizeOf(binding: Vectorize): VectorizeIndex {
  const cached = vectorizeCache.get(binding);
  if (cached) return cached;
  const built = createVectorizeIndex(binding);
  vectorizeCache.set(binding, built);
  return built;
}

/**
 * The hashed local embedder is lexical, like BM25 but without term weighting: on LoCoMo it scores
 * R@10 42 against FTS5's 63, and an equal vote lowers the fused result to 54. It keeps a small
 * vote (ties, misspellings, queries FTS5 finds nothing for). A semantic embedder votes fully.
 */
export const LOCAL_VECTOR_WEIGHT = 0.1;

function vectorWeightFor(embedder: Embedder): number {
  return embedder.kind === "local" ? LOCAL_VECTOR_WEIGHT : 1;
}
