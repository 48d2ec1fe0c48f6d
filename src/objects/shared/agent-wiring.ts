// Wires the platform into the runtime's interfaces for one room object: the D1 stores,
// the configured model backend, long-term memory (retrieval, embeddings), the built-in tools, the
// plugins the object was handed (shared/plugin-port.ts), the system clock and the structured log.
// This is the only place that knows which concrete implementation backs each interface.
import { loadConfig, MODEL_NOT_CONFIGURED_MESSAGE, type Config } from "../../config.ts";
import type { Env } from "../../env.ts";
import { errorField, log } from "../../log.ts";
import type { AgentStore } from "../../db/stores/agent-store.ts";
import type { MessageHistory } from "../../db/memory/message-history.ts";
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
import { type AgentData, agentData, type Stores, stores } from "../../db/stores/index.ts";
import type { Db } from "../../db/db.ts";
import type { DatabaseName } from "../../db/shards.ts";
import type { EmbeddingPipeline } from "../../db/memory/embedding-pipeline.ts";
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
import type { RoomPlugins, RoomPluginsFactory } from "./plugin-port.ts";
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
  plugins: RoomPlugins;
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
  /** Builds the agent's plugins: the deployment's own, handed in by src/durable-objects.ts. */
  plugins: RoomPluginsFactory;
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
  const { events, tracer } = observeTurns(env, options);
  countFailures(events, backends, agentId);
  const platform = mcpPlatform(env);
  const mcp = connectMcp(platform, agentId);
  let tools: ToolHost;
  const builtins = createBuiltinToolHost({
    memory,
    clock,
    listAll: () => tools.list(),
    sources: () => mcp.sources(),
  });
  // Plugins (Instagram publishing where configured, skills, the web reader, ...): one host.
  const plugins = options.plugins(env, agentId, { memory, clock });
  // ask_agent reaches another agent's room through the platform (agent-calls.ts).
  const delegation = createDelegationToolHost({ caller: agentId, asker: createAgentAsker(env) });
  tools = combineToolHosts([builtins, delegation, plugins.tools, mcp]);
  const chat = chatModelFor(config);
  const spend = backends.spend;
  const runner = await turnRunnerFor(
    { config, chat, memory, tools, plugins, data, spend },
    { clock, events, tracer },
  );
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

/** The room's event bus; with an OTLP endpoint configured, its events become spans too. */
function observeTurns(
  env: Env,
  options: RoomRuntimeOptions,
): { events: EventBus; tracer: TurnTracer | null } {
  const tracing = traceConfig(env);
  const keepAlive = options.waitUntil ?? ((work) => void work.catch(() => undefined));
  const tracer = tracing ? createTurnTracer(tracing, keepAlive) : null;
  const events = createEventBus(tracer ? { fields: tracer.fieldsFor } : {});
  if (tracer) events.subscribe(tracer.record);
  return { events, tracer };
}
/**
 * Counts a failed evaluator or model for /health, off the reply path (a count that fails is
 * logged), and logs a turn whose inspection was not recorded.
 */
function countFailures(events: EventBus, backends: Stores, agentId: string): void {
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
}

/** The room's MCP connections, over the deployment's MCP platform (src/mcp/platform.ts). */
function connectMcp(platform: McpPlatform, agentId: string): McpConnections {
  return new McpConnections({
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
}

/** What the turn runner is built from: the agent's configuration, model, memory and tools. */
interface RunnerParts {
  config: Config;
  chat: ChatModel | null;
  memory: RoomHistoryStore;
  tools: ToolHost;
  plugins: RoomPlugins;
  data: AgentData;
  spend: SpendLedger;
}

async function turnRunnerFor(
  { config, chat, memory, tools, plugins, data, spend }: RunnerParts,
  { clock, events, tracer }: { clock: Clock; events: EventBus; tracer: TurnTracer | null },
): Promise<TurnRunner> {
  return createTurnRunner({
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
