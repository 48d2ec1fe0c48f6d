// One turn, in the phases the room journals: `receive` stores the inbound message (before anything
// that can fail); `respond` composes state, decides whether to answer and runs the model/tool loop,
// returning the reply (the caller journals it durably and answers at once); `afterReply` stores the
// reply in D1 and runs the evaluators, off the caller's critical path. Every phase is safe to
// repeat after an eviction: ids are derived from the turn, so nothing is written twice.
import type { Character } from "../character.ts";
import { AppError, ModelCallError, ModelNotConfiguredError } from "../util/errors.ts";
import { runEvaluators, type Evaluator } from "../after-reply/evaluators.ts";
import { ModelSession, type ObservedModelCall } from "./model-session.ts";
import {
  BUDGET_USED,
  dailyCeiling,
  PlaceBudgetUsed,
  readDayBudgets,
  type SpendLedger,
  type UsageRecord,
} from "./spend.ts";
import { composeState, type Provider, type TurnRetrieval } from "../context/compose-state.ts";
import { chatName } from "../context/history-provider.ts";
import { systemMessage, withContext } from "../context/prompt-layout.ts";
import { inboundMessageId, replyMessageId } from "./message-ids.ts";
import { withDelegatedUsage } from "./delegation.ts";
import { decideByRules, decideWithModel, type RespondDecision } from "./respond-decision.ts";
import type { TokenCounter } from "../util/tokens.ts";
import { ToolExecutor } from "./tool-executor.ts";
import { runToolLoop, type ToolLoopResult } from "./tool-loop.ts";
import {
  finishInspection,
  type InspectionDraft,
  inspectedMemories,
  noteCalls,
  PendingInspections,
  startInspection,
  type TurnInspectionSink,
} from "./turn-inspection.ts";
import { placeAllowsTool } from "../access/place-policy.ts";
import type {
  RespondOptions,
  RuntimeLimits,
  Spent,
  TurnInput,
  TurnOutcome,
  TurnPause,
  UsedMemory,
} from "./turn-types.ts";
import { originOf } from "../access/principal.ts";
import type { Clock, EventSink } from "../ports/events.ts";
import type { Memory, MemoryStore } from "../ports/memory.ts";
import type { ChatMessage, ChatModel, ModelChoice } from "../ports/model.ts";
import type { MemoryRetriever } from "../ports/retrieval.ts";
import type { ToolHost } from "../ports/tools.ts";
import { queryTerms } from "../retrieval/query-terms.ts";
import {
  boundedEmbedding,
  DEFAULT_EMBEDDING_BUDGET_MS,
  type BoundedEmbedding,
} from "../retrieval/query-embedding.ts";

export interface TurnRunnerDeps {
  /** null when no model backend is configured: turns then fail with `model_not_configured`. */
  model: ChatModel | null;
  /** Told each model call's content (a tracer recording it); absent: nobody is. */
  observeModel?: (call: ObservedModelCall) => void;
  modelNotConfiguredMessage: string;
  /** Deployment defaults; a character's settings override them. */
  models: ModelChoice;
  memory: MemoryStore;
  tools: ToolHost;
  providers: Provider[];
  evaluators: Evaluator[];
  clock: Clock;
  events: EventSink;
  tokens: TokenCounter;
  limits: RuntimeLimits;
  /** Long-term memory; null runs turns with the room's recent history only. */
  retriever?: MemoryRetriever | null;
  /** The store afterReply writes and evaluators read through, when it differs from `memory`. */
  afterReplyMemory?: MemoryStore;
  /** Where model spend is counted; without it there is no daily ceiling. */
  spend?: SpendLedger;
  /** Tokens an agent may spend per UTC day unless its character says otherwise; null: none. */
  dailyTokenLimit?: number | null;
  /** Where replied turns are kept for the turn inspector; absent: they are not. */
  inspections?: TurnInspectionSink;
}

export interface TurnRunner {
  receive(input: TurnInput): Promise<void>;
  /** A turn on a surface that cannot ask a person: tools needing approval are refused. */
  respond(character: Character, input: TurnInput): Promise<TurnOutcome>;
  /** Like respond, but may stop at a tool call that needs approval, and resume from that stop. */
  respondOrPause(
    character: Character,
    input: TurnInput,
    options: RespondOptions,
  ): Promise<TurnOutcome | TurnPause>;
  afterReply(character: Character, input: TurnInput, outcome: TurnOutcome): Promise<void>;
  /**
   * Whether the place's budget (the member's or the server's day) is used for this input: read
   * before work a turn would pay for ahead of its model call (a voice note's transcription).
   */
  placeBudgetUsed(input: TurnInput): Promise<boolean>;
}

export function createTurnRunner(deps: TurnRunnerDeps): TurnRunner {
  // A replied turn's draft waits here for its afterReply (lost with an eviction in between: that
  // turn is then not kept for inspection, which costs nothing else).
  const pending = deps.inspections ? new PendingInspections() : null;
  return {
    async placeBudgetUsed(input) {
      if (!deps.spend || !input.place?.budgets) return false;
      const used = await readDayBudgets(deps.spend, {
        agentId: input.agentId,
        principal: input.principal,
        place: input.place,
        ceiling: null,
        now: deps.clock.now(),
      });
      return used !== null;
    },
    async receive(input) {
      const memory: Memory = {
        id: inboundMessageId(input.turnId),
        type: "message",
        agentId: input.agentId,
        roomId: input.roomId,
        userId: input.userId,
        content: {
          text: input.text,
          role: "user",
          source: input.source,
          ...(input.userName ? { userName: input.userName } : {}),
          ...(input.attachments.length > 0 ? { attachments: input.attachments } : {}),
        },
        metadata: {
          turnId: input.turnId,
          tokens: deps.tokens.count(input.text),
          receivedAt: input.receivedAt,
          // Kept, but out of later prompts: the filter declined it before any model.
          ...(input.place?.filtered ? { filtered: input.place.filtered } : {}),
        },
        // Stored at processing time from the room's monotonic clock, so a room's messages sort in
        // the order turns actually ran, with no two sharing a timestamp.
        createdAt: deps.clock.now(),
      };
      await deps.memory.saveInbound({ memory, userName: input.userName, source: input.source });
    },

    async respond(character, input) {
      const outcome = await respondOrPause(deps, character, input, {}, pending);
      // Without canAskApproval the tool loop refuses such calls instead of pausing.
      if (outcome.status === "awaiting_approval")
        throw new AppError(
          "internal",
          500,
          "a turn paused on a surface that cannot ask for approval",
        );
      return outcome;
    },

    respondOrPause(character, input, options) {
      return respondOrPause(deps, character, input, options, pending);
    },

    async afterReply(character, input, outcome) {
      const memory = deps.afterReplyMemory ?? deps.memory;
      const draft = pending?.take(outcome.turnId);
      // The reply and its spend are stored before the evaluators that may read the conversation
      // run; the interaction count runs alongside them (a store may send the three together), and
      // so does the turn's record for the inspector.
      const stored = Promise.all([
        draft && outcome.status === "replied"
          ? recordInspection(deps, input, outcome, draft)
          : null,
        outcome.replyMemory ? memory.saveMemory(outcome.replyMemory) : null,
        outcome.spent || outcome.spentTokens
          ? recordUsage(
              deps,
              usageRecord(
                deps,
                input,
                outcome.spent ?? {
                  inputTokens: outcome.spentTokens ?? 0,
                  outputTokens: 0,
                  modelCalls: 0,
                },
                {
                  model: outcome.model,
                  tools: outcome.toolCalls,
                  error: outcome.stopReason === "timeout" ? "turn_timeout" : null,
                  lateEmbeddings: outcome.queryEmbedding === "late" ? 1 : 0,
                },
              ),
            )
          : null,
      ]);
      const small = deps.model
        ? { client: deps.model, name: modelChoiceFor(character, deps.models).small }
        : null;
      const context = {
        character,
        input,
        outcome,
        memory,
        clock: deps.clock,
        model: small,
        retriever: deps.retriever ?? null,
        interactions: null,
      };
      await runEvaluators(deps.evaluators, context, {
        timeoutMs: deps.limits.evaluatorTimeoutMs,
        events: deps.events,
        stored,
      });
    },
  };
}

async function respondOrPause(
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  options: RespondOptions,
  pending: PendingInspections | null,
): Promise<TurnOutcome | TurnPause> {
  const started = deps.clock.now();
  const draft = pending ? startInspection(started, options.resume !== undefined) : null;
  const ids = { turnId: input.turnId, agentId: input.agentId, roomId: input.roomId };
  deps.events.emit({
    type: "run_started",
    ...ids,
    userId: input.userId,
    source: input.source,
    at: started,
  });
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error("turn timeout")),
    deps.limits.turnTimeoutMs,
  );
  let session: ModelSession | null = null;
  const resume = options.resume
    ? { position: options.resume.checkpoint.modelIndex, usage: options.resume.checkpoint.usage }
    : undefined;
  try {
    // A message the rules already decline (a channel message nobody addressed to the agent) is
    // stored and left there: no model, budget or context is needed to say no.
    const rules = options.resume ? null : decideByRules(input, character);
    if (rules && rules !== "ask" && !rules.respond) {
      // Still the caller's own work first (the inbound write, its version check): a declined
      // message counts as handled only once it is stored.
      await options.beforeModel;
      emitEnded(deps, ids, started, "ignored", null);
      return ignoredOutcome(input, { promptTokens: 0, completionTokens: 0, modelCalls: 0 });
    }
    if (!deps.model) throw new ModelNotConfiguredError(deps.modelNotConfiguredMessage);
    // The query's embedding is the longest wait before the model: it starts now, beside the
    // preparation below, the budget's read and the context's reads, and holds the turn at most
    // its budget. A greeting (no query terms) and a resumed turn retrieve nothing.
    const retrieval =
      deps.retriever && !options.resume
        ? turnRetrieval(deps.retriever, deps.limits, character, input.text)
        : null;
    if (retrieval && queryTerms(input.text).length > 0) void retrieval.queryVector();
    // What only a turn that goes on needs (its tools connected, its attachments read).
    const extra = (await options.prepare?.()) ?? options.attachments;
    // The daily budget is read while the context is composed; the model is asked only once it
    // (and the caller's own work) has passed. A turn resuming after an approval was admitted when
    // it started.
    const budget =
      deps.spend && !options.resume
        ? readBudgets(deps.spend, deps, character, input, started)
        : null;
    // The caller's verdict wins over the budget's: the ceiling comes from a character the caller
    // may find stale (its version check), and a refusal at a stale ceiling would hide that, so a
    // raised ceiling would never be read. The caller starts again on the current character.
    const admitted = Promise.allSettled([options.beforeModel, budget]).then(([own, spent]) => {
      if (own.status === "rejected") throw own.reason;
      if (spent.status === "rejected") throw spent.reason;
      if (spent.value) throw spent.value;
    });
    // Awaited before the first model request; until then a rejection is not unhandled.
    admitted.catch(() => undefined);
    const choice = modelChoiceFor(character, deps.models);
    session = new ModelSession({
      model: deps.model,
      choice,
      events: draft ? noteCalls(deps.events, draft) : deps.events,
      now: () => deps.clock.now(),
      ids,
      resume,
      observe: deps.observeModel,
    });
    const outcome = await respondWith(
      deps,
      deps.model,
      character,
      input,
      session,
      controller.signal,
      options,
      // A resumed turn was answered when it started.
      {
        admitted,
        rules: rules ?? { respond: true, reason: "resumed" },
        extra,
        draft,
        retrieval,
      },
    );
    if (retrieval && outcome.status !== "awaiting_approval")
      outcome.queryEmbedding = retrieval.embedding.outcome();
    emitEnded(
      deps,
      ids,
      started,
      outcome.status === "awaiting_approval" ? "paused" : outcome.status,
      session,
    );
    // A reply's spend is counted after the reply (afterReply), off the caller's path. A pause
    // records its part now, without tools: the resumed part's outcome lists every call of the turn.
    const spent = spentSince(session, resume);
    if (outcome.status === "awaiting_approval")
      await recordUsage(
        deps,
        usageRecord(deps, input, spent, {
          model: session.current,
          tools: [],
          error: null,
          lateEmbeddings: retrieval?.embedding.outcome() === "late" ? 1 : 0,
        }),
      );
    else {
      outcome.spent = spent;
      outcome.spentTokens = spent.inputTokens + spent.outputTokens;
      if (draft && outcome.status === "replied") pending?.set(input.turnId, draft);
    }
    return outcome;
  } catch (error) {
    if (error instanceof PlaceBudgetUsed) return budgetUsed(deps, input, ids, started, error);
    if (controller.signal.aborted && session) {
      deps.events.emit({
        type: "run_timed_out",
        ...ids,
        at: deps.clock.now(),
        limitMs: deps.limits.turnTimeoutMs,
      });
      const outcome = buildReply(
        deps,
        input,
        session,
        {
          text: "I ran out of time on this one before I could finish. Please try again.",
          stopReason: "timeout",
          toolCalls: [],
          model: null,
        },
        [],
      );
      emitEnded(deps, ids, started, "replied", session);
      outcome.spent = spentSince(session, resume);
      outcome.spentTokens = outcome.spent.inputTokens + outcome.spent.outputTokens;
      if (draft) pending?.set(input.turnId, draft);
      return outcome;
    }
    emitEnded(deps, ids, started, "failed", session);
    const failure = error instanceof AppError ? error : null;
    if (session)
      await recordUsage(
        deps,
        usageRecord(deps, input, spentSince(session, resume), {
          model: session.current,
          tools: [],
          error: failure?.code ?? "internal",
        }),
      );
    deps.events.emit({
      type: "run_failed",
      ...ids,
      at: deps.clock.now(),
      code: failure?.code ?? "internal",
      reason: error instanceof Error ? error.message : String(error),
      ...(error instanceof ModelCallError
        ? { model: { name: error.model, cause: error.failureCause } }
        : {}),
    });
    // Unknown errors may carry internals (SQL, stack details): the caller gets a plain message.
    throw (
      failure ?? new AppError("internal", 500, "the turn failed unexpectedly; see the worker logs")
    );
  } finally {
    clearTimeout(timer);
  }
}

async function respondWith(
  deps: TurnRunnerDeps,
  model: ChatModel,
  character: Character,
  input: TurnInput,
  session: ModelSession,
  signal: AbortSignal,
  options: RespondOptions,
  decided: {
    /** The caller's own work and the daily budget, awaited before the first model request. */
    admitted: Promise<unknown>;
    /** The respond rules' verdict, made once in respondOrPause. */
    rules: RespondDecision | "ask";
    /** What the attachments add to the person's message. */
    extra: { text: string; images: string[] } | undefined;
    /** What the turn inspector is told, when turns are kept for it. */
    draft: InspectionDraft | null;
    /** Long-term memory for this turn (its query's embedding already started); null without. */
    retrieval: (TurnRetrieval & { embedding: BoundedEmbedding }) | null;
  },
): Promise<TurnOutcome | TurnPause> {
  const { admitted, rules, extra, draft, retrieval } = decided;
  const executor = new ToolExecutor({
    host: deps.tools,
    // A place's settings (a server's allowed tools, role-gated ones) narrow what is offered.
    tools: (await deps.tools.list()).filter((tool) => placeAllowsTool(input.place, tool.name)),
    approvalRequired: character.settings.toolApproval,
    defaultTimeoutMs: deps.limits.toolTimeoutMs,
    maxResultChars: deps.limits.maxToolResultChars,
    now: () => deps.clock.now(),
    remembered: options.toolOutputs?.remembered,
    onOutput: options.toolOutputs?.record,
  });
  const definitions = executor.tools;
  const loop = {
    session,
    executor,
    events: draft ? noteCalls(deps.events, draft) : deps.events,
    now: () => deps.clock.now(),
    ids: {
      turnId: input.turnId,
      agentId: input.agentId,
      roomId: input.roomId,
      userId: input.userId,
      ...(input.delegation ? { delegation: input.delegation } : {}),
      ...(input.principal ? { principal: input.principal } : {}),
      ...(input.place ? { place: input.place } : {}),
    },
    tools: definitions.map(({ name: toolName, description, parameters }) => ({
      name: toolName,
      description,
      parameters,
    })),
    temperature: character.settings.temperature,
    maxOutputTokens: character.settings.maxOutputTokens,
    maxSteps: character.settings.maxSteps ?? deps.limits.maxSteps,
    maxConsecutiveFailures:
      character.settings.maxConsecutiveFailures ?? deps.limits.maxConsecutiveFailures,
    signal,
    canAskApproval: options.canAskApproval === true,
    observer: options.observer,
  };

  // A resumed turn carries on from its checkpoint: context and the decision to answer are made.
  if (options.resume) {
    const memories = options.resume.checkpoint.memories ?? [];
    await admitted;
    const result = await runToolLoop({
      ...loop,
      messages: [],
      turnStart: 0,
      resume: options.resume,
    });
    if (signal.aborted) throw new Error("turn timeout");
    return result.kind === "paused"
      ? pauseOf(input, result, memories)
      : buildReply(deps, input, session, result, memories);
  }

  const composing = deps.clock.now();
  const state = await composeState(
    deps.providers,
    {
      character,
      input,
      memory: deps.memory,
      clock: deps.clock,
      tokens: deps.tokens,
      tools: definitions,
      toolSources: deps.tools.sources?.() ?? [],
      historyTokens: character.settings.historyTokens ?? deps.limits.historyTokens,
      historyFetchLimit: deps.limits.historyFetchLimit,
      retrieval,
      signal,
    },
    { timeoutMs: deps.limits.providerTimeoutMs, events: deps.events, turnId: input.turnId },
  );
  deps.events.emit({
    type: "context_composed",
    turnId: input.turnId,
    agentId: input.agentId,
    roomId: input.roomId,
    at: deps.clock.now(),
    startedAt: composing,
    memories: state.memories.length,
    hits: legCounts(state.found),
    queryEmbedding: retrieval?.embedding.outcome() ?? "none",
  });

  await admitted;
  options.observer?.memories?.(state.memories);
  const decision =
    rules === "ask"
      ? (
          await decideWithModel({
            model,
            modelName: modelChoiceFor(character, deps.models).small,
            character,
            history: state.history,
            text: input.text,
            signal,
            cacheScope: input.agentId,
          })
        ).decision
      : rules;
  if (!decision.respond) return ignoredOutcome(input, { ...session.usage });
  options.observer?.replying?.();

  const name = chatName(input.userName ?? input.userId);
  const said = extra?.text ? `${input.text}\n\n${extra.text}` : input.text;
  const current: ChatMessage = {
    role: "user",
    content: withContext(said, state.context),
    ...(name ? { name } : {}),
    ...(extra && extra.images.length > 0 ? { images: extra.images } : {}),
  };
  const messages: ChatMessage[] = [
    { role: "system", content: systemMessage(state.sections) },
    ...state.history,
    current,
  ];
  if (draft) {
    draft.parts.push(...state.parts, { name: "message", text: said });
    draft.memories = inspectedMemories(state.memories, state.found);
  }
  const result = await runToolLoop({ ...loop, messages, turnStart: messages.length - 1 });
  if (signal.aborted) throw new Error("turn timeout");
  return result.kind === "paused"
    ? pauseOf(input, result, state.memories)
    : buildReply(deps, input, session, result, state.memories);
}

/**
 * The day's budgets before the model, in one read: the agent's ceiling (a 429), and the place's
 * (PlacePolicy.budgets: the member's, the server's), which end the turn unanswered.
 */
function readBudgets(
  spend: SpendLedger,
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  now: number,
): Promise<PlaceBudgetUsed | null> {
  return readDayBudgets(spend, {
    agentId: input.agentId,
    principal: input.principal,
    place: input.place,
    ceiling: dailyCeiling(character, deps.dailyTokenLimit ?? null),
    now,
  });
}

/**
 * A turn stopped by a place's budget: stored, not answered, and recorded with the budget's name,
 * which is how the next turn knows the member was told (one notice a day).
 */
async function budgetUsed(
  deps: TurnRunnerDeps,
  input: TurnInput,
  ids: { turnId: string; agentId: string; roomId: string },
  started: number,
  used: PlaceBudgetUsed,
): Promise<TurnOutcome> {
  emitEnded(deps, ids, started, "ignored", null);
  await recordUsage(
    deps,
    usageRecord(
      deps,
      input,
      { inputTokens: 0, outputTokens: 0, modelCalls: 0 },
      { model: null, tools: [], error: BUDGET_USED[used.scope] },
    ),
  );
  const outcome = ignoredOutcome(input, { promptTokens: 0, completionTokens: 0, modelCalls: 0 });
  if (used.notice) outcome.notice = used.notice;
  return outcome;
}

function ignoredOutcome(input: TurnInput, usage: TurnOutcome["usage"]): TurnOutcome {
  return {
    turnId: input.turnId,
    status: "ignored",
    reply: null,
    actions: [],
    toolCalls: [],
    usage,
    model: null,
    stopReason: "ignored",
    memories: [],
    messageId: inboundMessageId(input.turnId),
    replyId: null,
    replyMemory: null,
  };
}

function pauseOf(
  input: TurnInput,
  paused: Extract<ToolLoopResult, { kind: "paused" }>,
  memories: UsedMemory[],
): TurnPause {
  return {
    turnId: input.turnId,
    status: "awaiting_approval",
    tool: paused.tool,
    arguments: paused.arguments,
    checkpoint: { ...paused.checkpoint, memories },
  };
}

function buildReply(
  deps: TurnRunnerDeps,
  input: TurnInput,
  session: ModelSession,
  result: {
    text: string;
    stopReason: TurnOutcome["stopReason"];
    toolCalls: TurnOutcome["toolCalls"];
    model: string | null;
  },
  memories: UsedMemory[],
): TurnOutcome {
  const actions = [
    "REPLY",
    ...new Set(result.toolCalls.filter((call) => call.ok).map((call) => call.name)),
  ];
  const usage = withDelegatedUsage(session.usage, result.toolCalls);
  const reply: Memory = {
    id: replyMessageId(input.turnId),
    type: "message",
    agentId: input.agentId,
    roomId: input.roomId,
    userId: input.userId,
    content: {
      text: result.text,
      role: "agent",
      source: input.source,
      actions,
      inReplyTo: inboundMessageId(input.turnId),
    },
    metadata: {
      turnId: input.turnId,
      tokens: deps.tokens.count(result.text),
      model: result.model,
      stopReason: result.stopReason,
      usage,
      toolCalls: result.toolCalls.map((call) => ({
        name: call.name,
        ok: call.ok,
        cached: call.cached,
      })),
      // Which memories informed the reply (their text stays in the memories themselves).
      memories: memories.map(({ id, type, score }) => ({ id, type, score })),
    },
    createdAt: deps.clock.now(),
  };
  return {
    turnId: input.turnId,
    status: "replied",
    reply: { text: result.text },
    actions,
    toolCalls: result.toolCalls,
    usage,
    model: result.model,
    stopReason: result.stopReason,
    memories,
    messageId: inboundMessageId(input.turnId),
    replyId: reply.id,
    replyMemory: reply,
  };
}

/**
 * The turn's view of long-term memory: budgets from the context size, the query embedded once and
 * waited for at most the memory settings' embedding budget.
 */
function turnRetrieval(
  retriever: MemoryRetriever,
  limits: RuntimeLimits,
  character: Character,
  text: string,
): TurnRetrieval & { embedding: BoundedEmbedding } {
  const memory = character.settings.memory;
  const embedding = boundedEmbedding(
    () => retriever.embedQuery(text),
    memory.embeddingBudgetMs ?? DEFAULT_EMBEDDING_BUDGET_MS,
  );
  return {
    retriever,
    embedding,
    queryVector: () => embedding.vector(),
    budgets: {
      facts: memory.factsTokens ?? Math.round(limits.contextTokens * 0.1),
      knowledge: memory.knowledgeTokens ?? Math.round(limits.contextTokens * 0.25),
      recall: memory.recallTokens ?? Math.round(limits.contextTokens * 0.15),
    },
    threshold: memory.threshold,
  };
}

export function modelChoiceFor(character: Character, defaults: ModelChoice): ModelChoice {
  return {
    primary: character.settings.model ?? defaults.primary,
    fallbacks: character.settings.modelFallbacks ?? defaults.fallbacks,
    small: character.settings.smallModel ?? defaults.small,
  };
}

/** How many of the prompt's memories each search leg found. */
function legCounts(
  found: ReadonlyArray<{ matchedBy: ReadonlyArray<"text" | "vector" | "neighbour"> | null }>,
): { text: number; vector: number; neighbour: number } {
  const hits = { text: 0, vector: 0, neighbour: 0 };
  for (const { matchedBy } of found) for (const leg of matchedBy ?? []) hits[leg] += 1;
  return hits;
}

/** What this run spent (a resumed turn's earlier part was counted when it paused). */
function spentSince(
  session: ModelSession,
  resume:
    | {
        usage: {
          promptTokens: number;
          completionTokens: number;
          cachedPromptTokens?: number;
          modelCalls?: number;
        };
      }
    | undefined,
): Spent {
  const now = session.usage;
  const before = resume?.usage;
  return {
    inputTokens: Math.max(0, now.promptTokens - (before?.promptTokens ?? 0)),
    cachedInputTokens: Math.max(
      0,
      (now.cachedPromptTokens ?? 0) - (before?.cachedPromptTokens ?? 0),
    ),
    outputTokens: Math.max(0, now.completionTokens - (before?.completionTokens ?? 0)),
    modelCalls: Math.max(0, now.modelCalls - (before?.modelCalls ?? 0)),
  };
}

/** The turn's usage record (src/runtime/turn/spend.ts): who it was for, where, what it spent. */
function usageRecord(
  deps: TurnRunnerDeps,
  input: TurnInput,
  spent: Spent,
  detail: {
    model: string | null;
    tools: ReadonlyArray<{ name: string; ok: boolean }>;
    error: string | null;
    /** 1 when the query's embedding missed its budget (the turn searched by text alone). */
    lateEmbeddings?: number;
  },
): UsageRecord {
  const origin = input.principal ? originOf(input.principal) : null;
  return {
    id: input.turnId,
    agentId: input.agentId,
    kind: "turn",
    roomId: input.roomId,
    userId: input.userId,
    guildId: origin?.kind === "member" ? (origin.guildId ?? null) : null,
    source: input.source,
    model: detail.model,
    ...spent,
    cachedInputTokens: spent.cachedInputTokens ?? 0,
    tools: detail.tools.map(({ name, ok }) => ({ name, ok })),
    error: detail.error,
    lateEmbeddings: detail.lateEmbeddings ?? 0,
    at: deps.clock.now(),
  };
}

/** The inspector's record of a replied turn; losing it is logged, never a failed turn. */
async function recordInspection(
  deps: TurnRunnerDeps,
  input: TurnInput,
  outcome: TurnOutcome,
  draft: InspectionDraft,
): Promise<void> {
  if (!deps.inspections) return;
  const ids = { agentId: input.agentId, roomId: input.roomId, userId: input.userId };
  try {
    await deps.inspections.record(
      finishInspection(draft, outcome, ids, deps.tokens, deps.clock.now()),
    );
  } catch (error) {
    deps.events.emit({
      type: "inspection_not_recorded",
      turnId: input.turnId,
      agentId: input.agentId,
      roomId: input.roomId,
      at: deps.clock.now(),
      reason: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Counting never fails a turn: a lost count only makes the ceiling more lenient (and is logged). */
async function recordUsage(deps: TurnRunnerDeps, usage: UsageRecord): Promise<void> {
  if (!deps.spend) return;
  const tokens = usage.inputTokens + usage.outputTokens;
  if (tokens <= 0 && usage.modelCalls === 0 && usage.error === null) return;
  try {
    await deps.spend.record(usage);
  } catch (error) {
    deps.events.emit({
      type: "spend_not_recorded",
      agentId: usage.agentId,
      tokens,
      at: deps.clock.now(),
      reason: error instanceof Error ? error.message : String(error),
    });
  }
}

function emitEnded(
  deps: TurnRunnerDeps,
  ids: { turnId: string; agentId: string; roomId: string },
  started: number,
  status: "replied" | "ignored" | "failed" | "paused",
  session: ModelSession | null,
): void {
  const usage = session?.usage ?? { promptTokens: 0, completionTokens: 0, modelCalls: 0 };
  deps.events.emit({
    type: "run_ended",
    ...ids,
    at: deps.clock.now(),
    durationMs: deps.clock.now() - started,
    status,
    modelCalls: usage.modelCalls,
    usage: {
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedPromptTokens: usage.cachedPromptTokens ?? 0,
    },
  });
}
