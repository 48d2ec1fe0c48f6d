// Wires the platform into the runtime's interfaces for one room object: the D1 stores,
// the configured model backend, long-term memory (retrieval, embeddings), the built-in tools, the
// plugins (src/plugins/room-plugins.ts), the system clock and the structured log.
// This is the only place that knows which concrete implementation backs each interface.
import { loadConfig, MODEL_NOT_CONFIGURED_MESSAGE, type Config } from "../../config.ts";
import type { Env } from "../../env.ts";
import { errorField, log } from "../../log.ts";
import type { AgentStore } from "../../db/stores/agent-store.ts";
import type { MessageHistory } from "../../memory/message-history.ts";
import { createOpenAIChatModel } from "../../model/openai-chat.ts";
import { createWorkersAIChatModel } from "../../model/workers-ai-chat.ts";
import { combineToolHosts, createBuiltinToolHost } from "../../runtime/turn/builtin-tools.ts";
import {
  createDelegationToolHost,
  type DelegationToolHost,
} from "../../runtime/turn/delegation.ts";
import { interactionEvaluator } from "../../runtime/after-reply/evaluators.ts";
import {
  reflectionEvaluator,
  summaryEvaluator,
} from "../../runtime/after-reply/memory-evaluators.ts";
import {
  knowledgeProvider,
  recallProvider,
  userFactsProvider,
} from "../../runtime/context/memory-providers.ts";
import { agentData, stores } from "../../db/stores/index.ts";
import type { Db } from "../../db/db.ts";
import { CATALOG_DB, type DatabaseName, memoryDatabases } from "../../db/shards.ts";
import type { EmbeddingPipeline } from "../../memory/embedding-pipeline.ts";
import { createEventBus, type EventBus } from "../../runtime/util/events.ts";
import { traceConfig } from "../../telemetry/otlp.ts";
import { createTurnTracer, type TurnTracer } from "../../telemetry/turn-spans.ts";
import { characterProvider } from "../../runtime/context/character-provider.ts";
import { historyProvider } from "../../runtime/context/history-provider.ts";
import { timeProvider } from "../../runtime/context/time-provider.ts";
import { toolsProvider } from "../../runtime/context/tools-provider.ts";
import { loadTokenCounter } from "../../runtime/util/tokens.ts";
import { createTurnRunner, type TurnRunner } from "../../runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../runtime/turn/turn-types.ts";
import type { Clock } from "../../runtime/ports/events.ts";
import type { ChatModel, ModelChoice } from "../../runtime/ports/model.ts";
import type { ToolHost } from "../../runtime/ports/tools.ts";
import type { SpendLedger } from "../../runtime/turn/spend.ts";
import { createRoomHistoryStore, type RoomHistoryStore } from "../conversation/history-cache.ts";
import { McpConnections } from "../../mcp/connections.ts";
import { createRoomPlugins } from "../../plugins/room-plugins.ts";
import type { PluginHost } from "../../plugins/plugin-host.ts";
import { mcpPlatform, type McpPlatform } from "../../mcp/platform.ts";
import { ensureSchema } from "../../db/schema-ready.ts";
import { createAgentAsker } from "../conversation/agent-calls.ts";

export interface RoomRuntime {
  runner: TurnRunner;
  events: EventBus;
  /** Turns the events into spans when traces are on (OTEL_EXPORTER_OTLP_ENDPOINT); else null. */
  tracer: TurnTracer | null;
  config: Config;
  history: RoomHistoryStore;
  agents: AgentStore;
  messages: MessageHistory;
  embeddings: EmbeddingPipeline;
  /** The database holding the agent's memories (edits and upkeep of the room's messages). */
  memoryDb: Db;
  /** Which database that is (src/db/shards.ts). */
  memoryDatabase: DatabaseName;
  /** This room's MCP connections (also part of the runner's tools). */
  mcp: McpConnections;
  mcpPlatform: McpPlatform;
  /** The chat model outside turns (the agent writing an Instagram caption, autonomous tasks). */
  chat: { model: ChatModel | null; models: ModelChoice };
  /** Every tool the agent can call (built-ins, plugins, MCP): autonomous tasks use them too. */
  tools: ToolHost;
  /** The agent's plugins: prepared with the character before each turn or task step. */
  plugins: PluginHost;
  /** Where model spend is counted against the daily ceiling. */
  spend: SpendLedger;
  /** ask_agent: told the agent's character (its `delegates`) before each turn or task step. */
  delegation: DelegationToolHost;
}

export interface RoomRuntimeOptions {
  /** Resolves once the room's pending reply writes have reached D1. */
  settled: () => Promise<void>;
  /** Keeps the object alive for work after a turn (exporting its spans). */
  waitUntil?: (work: Promise<unknown>) => void;
}

/** Never returns the same millisecond twice: timestamps double as the room's message order. */
export function createMonotonicClock(): Clock {
  let last = 0;
  return {
    now() {
      last = Math.max(Date.now(), last + 1);
      return last;
    },
  };
}

/** How long a turn waits for a move's fence to lift before it goes ahead (and is refused). */
export const MOVE_FENCE_WAIT_MS = 30_000;
const FENCE_POLL_MS = 250;

/**
 * Whether the agent's memories now live in another database than the runtime's (a move switched;
 * src/db/moves/). Read fresh, not from the isolate's placement cache: a room must not write to a
 * database the agent left. While a move's fence holds the agent's writes, the turn waits for the
 * switch (up to MOVE_FENCE_WAIT_MS) rather than be refused. Only a deployment with memory
 * databases pays the read.
 */
export async function movedAway(env: Env, agentId: string, runtime: RoomRuntime): Promise<boolean> {
  if (memoryDatabases(env).length === 0 && runtime.memoryDatabase === CATALOG_DB) return false;
  const placement = stores(env).placement;
  const until = Date.now() + MOVE_FENCE_WAIT_MS;
  let now = await placement.current(agentId);
  while (now.fenced && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, FENCE_POLL_MS));
    now = await placement.current(agentId);
  }
  return now.home !== runtime.memoryDatabase;
}

export async function createRoomRuntime(
  env: Env,
  agentId: string,
  options: RoomRuntimeOptions,
): Promise<RoomRuntime> {
  // An object woken by its alarm right after a deploy may run before any request: it too waits
  // for D1 to have this code's migrations (once per isolate, shared with the worker).
  await ensureSchema(env);
  const config = loadConfig(env);
  const clock = createMonotonicClock();
  const backends = stores(env);
  // The agent's memories, in whichever database holds them (src/db/shards.ts).
  const data = await agentData(env, agentId);
  const memory = createRoomHistoryStore(data.memories, options);
  // With an OTLP endpoint configured, the turns' events become spans (src/telemetry/).
  const tracing = traceConfig(env);
  const tracer = tracing
    ? createTurnTracer(tracing, options.waitUntil ?? ((work) => void work.catch(() => undefined)))
    : null;
  const events = createEventBus(tracer ? { fields: tracer.fieldsFor } : {});
  if (tracer) events.subscribe(tracer.record);
  // A failed evaluator or model is counted for /health, off the reply path; a count that fails is
  // logged.
  events.subscribe((event) => {
    if (event.type === "inspection_not_recorded") {
      log.warn("turn_inspection_not_recorded", { agentId, turnId: event.turnId });
      return;
    }
    // A turn whose model failed is counted for /health too ("ok" while every turn fails misleads).
    if (event.type === "run_failed" && event.model) {
      const { name, cause } = event.model;
      const failure = { agentId: event.agentId, model: name, cause, at: event.at };
      backends.modelFailures.record(failure).catch((error: unknown) => {
        log.warn("model_failure_not_counted", { agentId, error: errorField(error) });
      });
      return;
    }
    if (event.type !== "evaluator_failed") return;
    const failure = {
      agentId: event.agentId,
      evaluator: event.evaluator,
      at: event.at,
      cause: event.cause,
    };
    backends.evaluatorFailures.record(failure).catch((error: unknown) => {
      log.warn("evaluator_failure_not_counted", { agentId, error: errorField(error) });
    });
  });
  let tools: ToolHost;
  const platform = mcpPlatform(env);
  const mcp = new McpConnections({
    agentId,
    fetch: platform.fetch,
    oauthFetch: platform.oauthFetch,
    urlPolicy: platform.urlPolicy,
    credentials: platform.credentials,
    redirectUrl: platform.redirectUrl,
    clientMetadataUrl: platform.clientMetadataUrl,
    secret: platform.secret,
    secretOrigins: platform.secretOrigins,
    now: () => Date.now(),
  });
  const builtins = createBuiltinToolHost({
    memory,
    clock,
    listAll: () => tools.list(),
    sources: () => mcp.sources(),
  });
  // Plugins (Instagram publishing where configured, skills, the web reader, ...): one host.
  const plugins = createRoomPlugins(env, agentId, { memory, clock });
  // ask_agent reaches another agent's room through the platform (agent-calls.ts).
  const delegation = createDelegationToolHost({ caller: agentId, asker: createAgentAsker(env) });
  tools = combineToolHosts([builtins, delegation, plugins.tools, mcp]);
  const chat = chatModelFor(config);
  const spend = backends.spend;
  const runner = createTurnRunner({
    model: chat,
    observeModel: tracer?.observe,
    modelNotConfiguredMessage: MODEL_NOT_CONFIGURED_MESSAGE,
    models: config.models,
    memory,
    tools,
    providers: [
      characterProvider,
      timeProvider,
      userFactsProvider,
      knowledgeProvider,
      recallProvider,
      toolsProvider,
      historyProvider,
      ...plugins.providers,
    ],
    evaluators: [
      interactionEvaluator,
      reflectionEvaluator,
      summaryEvaluator,
      ...plugins.evaluators,
    ],
    retriever: data.retriever,
    // Evaluators run inside the room's after-reply chain; reads there must not wait on it.
    afterReplyMemory: memory.inChain,
    clock,
    events,
    tokens: await loadTokenCounter(),
    limits: { ...DEFAULT_LIMITS, contextTokens: config.maxContextTokens },
    spend,
    dailyTokenLimit: config.dailyTokenLimit,
    inspections: data.inspections,
  });
  return {
    runner,
    events,
    tracer,
    config,
    history: memory,
    agents: backends.agents,
    messages: data.messages,
    embeddings: data.pipeline,
    memoryDb: data.db,
    memoryDatabase: data.database,
    mcp,
    mcpPlatform: platform,
    chat: { model: chat, models: config.models },
    tools,
    plugins,
    spend,
    delegation,
  };
}

function chatModelFor(config: Config): ChatModel | null {
  switch (config.model.kind) {
    case "openai":
      // Late-bound so tests (and anything else) that replace globalThis.fetch are honoured.
      return createOpenAIChatModel({
        apiKey: config.model.apiKey,
        baseURL: config.model.baseURL,
        promptCacheKey: config.model.promptCacheKey,
        fetch: (input, init) => fetch(input, init),
      });
    case "workers-ai":
      return createWorkersAIChatModel({ ai: config.model.ai });
    case "none":
      return null;
  }
}
