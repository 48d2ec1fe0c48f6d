// Every data-access object of one environment, built in one place and once per env object (the
// worker's and each Durable Object's): one drizzle handle over D1, the stores on it, and the
// memory stack (the embedder the configuration picks, the vector index: Vectorize when the VECTORS
// binding exists, else the local index in D1; hybrid retrieval; the embedding pipeline).
// Routes, rooms and clients ask here; nothing outside src/db/ and src/memory/ builds drizzle.
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
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
import { createD1MemoryStore } from "../../memory/d1-memory-store.ts";
import { openDb, type Db } from "../db.ts";
import { createDiscordSettingsStore, type DiscordSettingsStore } from "./discord-settings-store.ts";
import {
  createEmbeddingPipeline,
  type EmbeddingPipeline,
} from "../../memory/embedding-pipeline.ts";
import { createHybridSearch } from "../../memory/hybrid-search.ts";
import { createLocalVectorIndex } from "../../memory/local-vector-index.ts";
import { createMcpCredentialStore, type McpCredentialStore } from "./mcp-credential-store.ts";
import { createMediaPostStore, type MediaPostStore } from "./post-store.ts";
import { createMessageHistory, type MessageHistory } from "../../memory/message-history.ts";
import { databaseReachable } from "../ping.ts";
import { createProposalStore, type ProposalStore } from "./proposal-store.ts";
import { createSecretBox } from "../secret-box.ts";
import { createSkillStore, type SkillStore } from "./skill-store.ts";
import { createD1SpendLedger } from "./spend-ledger.ts";
import { createEvaluatorFailures, type EvaluatorFailures } from "./evaluator-failures.ts";
import { createTokenStore, type TokenStore } from "./token-store.ts";
import { createTurnInspectionStore, type TurnInspectionStore } from "./turn-inspection-store.ts";
import { createVectorizeIndex } from "../../memory/vectorize-index.ts";

export interface Stores {
  /** For the query functions of memory-repo.ts and knowledge.ts; only src/memory/ imports drizzle. */
  db: Db;
  agents: AgentStore;
  tokens: TokenStore;
  /** Model spend against the daily ceiling. */
  spend: SpendLedger;
  /** After-reply evaluators that failed, per day (for /health). */
  evaluatorFailures: EvaluatorFailures;
  /** What replied turns kept for the turn inspector. */
  inspections: TurnInspectionStore;
  /** The runtime's MemoryStore (messages, facts, rooms, relationships). */
  memories: MemoryStore;
  messages: MessageHistory;
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
  embedder: Embedder;
  index: VectorIndex;
  retriever: MemoryRetriever;
  pipeline: EmbeddingPipeline;
  /** A cheap round trip to D1, for /health. */
  reachable(): Promise<boolean>;
}

const cache = new WeakMap<object, Stores>();

export function stores(env: Env): Stores {
  const cached = cache.get(env);
  if (cached) return cached;
  const config = loadConfig(env);
  const db = openDb(env.DB);
  const box = config.secretsKey ? createSecretBox(config.secretsKey) : null;
  const vectorize = config.vectors ? createVectorizeIndex(config.vectors) : null;
  const index = vectorize ?? createLocalVectorIndex(db);
  // Without EMBEDDING_MODEL, the embedder whose size the index already holds keeps serving it.
  const embedder = createEmbedder(config, () => index.dimensions());
  const built: Stores = {
    db,
    agents: createAgentStore(db, box),
    tokens: createTokenStore(db),
    spend: createD1SpendLedger(db),
    evaluatorFailures: createEvaluatorFailures(db),
    inspections: createTurnInspectionStore(db),
    memories: createD1MemoryStore(db),
    messages: createMessageHistory(db),
    posts: createMediaPostStore(db),
    mcpServers: createAgentServerStore(db),
    mcpCredentials: box ? createMcpCredentialStore(db, box) : null,
    discord: createDiscordSettingsStore(db),
    telegram: createChatClientStore(db, TELEGRAM_CLIENT),
    slack: createChatClientStore(db, SLACK_CLIENT),
    skills: createSkillStore(db),
    proposals: createProposalStore(db),
    embedder,
    index,
    retriever: createHybridSearch({ db, index, embedder, vectorWeight: vectorWeightFor(embedder) }),
    pipeline: createEmbeddingPipeline({
      db,
      embedder,
      index,
      now: () => Date.now(),
      deleteLegacyVectors: vectorize ? (ids) => vectorize.deleteLegacy(ids) : undefined,
    }),
    reachable: () => databaseReachable(db),
  };
  cache.set(env, built);
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
