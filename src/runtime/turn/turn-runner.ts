// One turn, in the phases the room journals: `receive` stores the inbound message (before anything
// that can fail); `respond` runs admission, context, the respond decision and the model/tool loop
// (turn/phases/), returning the reply (the caller journals it durably and answers at once);
// `afterReply` stores the reply and runs the evaluators, off the caller's critical path. Every
// phase is safe to repeat after an eviction: ids are derived from the turn, so nothing is written
// twice. This file only coordinates: each phase is a file of its own.
import type { Character } from "../character.ts";
import { AppError, ModelCallError } from "../util/errors.ts";
import { ModelSession } from "./model-session.ts";
import { admitTurn, type TurnMemory } from "./phases/admission.ts";
import { afterReply } from "./phases/after-reply.ts";
import { composeTurnContext } from "./phases/context.ts";
import { modelAndTools } from "./phases/model-and-tools.ts";
import { receiveMessage } from "./phases/receive.ts";
import { decideToRespond, endWith, turnOutcome, type TurnEnd } from "./phases/reply.ts";
import { recordTurnUsage, spentSince, type TurnCharge } from "./phases/usage.ts";
import { BUDGET_USED, readDayBudgets } from "./spend.ts";
import { beforeDeadline, isTimedOut, startDeadline, TIMED_OUT } from "./turn-deadline.ts";
import { modelChoiceFor, type TurnIds, type TurnRunnerDeps } from "./turn-deps.ts";
import {
  type InspectionDraft,
  noteCalls,
  PendingInspections,
  startInspection,
} from "./turn-inspection.ts";
import type { RespondOptions, TurnInput, TurnOutcome, TurnPause } from "./turn-types.ts";

export type { TurnRunnerDeps } from "./turn-deps.ts";
export { modelChoiceFor } from "./turn-deps.ts";

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
    receive: (input) => receiveMessage(deps, input),
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
    respondOrPause: (character, input, options) =>
      respondOrPause(deps, character, input, options, pending),
    afterReply: (character, input, outcome) =>
      afterReply(deps, pending, { character, input, outcome }),
  };
}

/** One run of a turn, as its phases fill it in. */
interface TurnRun {
  deps: TurnRunnerDeps;
  input: TurnInput;
  ids: TurnIds;
  started: number;
  /** What the turn inspector is told, when turns are kept for it. */
  draft: InspectionDraft | null;
  /** A resumed turn's usage when it paused (that part was counted then). */
  resumed: ModelSession["usage"] | undefined;
  session: ModelSession | null;
  retrieval: TurnMemory | null;
}

/** How the turn ends for its caller, and what it is charged now (a reply: in afterReply). */
type Settled =
  | { outcome: TurnOutcome | TurnPause; charge: TurnCharge | null }
  | { error: AppError; charge: TurnCharge | null };

async function respondOrPause(
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  options: RespondOptions,
  pending: PendingInspections | null,
): Promise<TurnOutcome | TurnPause> {
  const started = deps.clock.now();
  const run: TurnRun = {
    deps,
    input,
    ids: { turnId: input.turnId, agentId: input.agentId, roomId: input.roomId },
    started,
    draft: pending ? startInspection(started, options.resume !== undefined) : null,
    resumed: options.resume?.checkpoint.usage,
    session: null,
    retrieval: null,
  };
  deps.events.emit({
    type: "run_started",
    ...run.ids,
    userId: input.userId,
    source: input.source,
    at: started,
  });
  const deadline = startDeadline(deps.limits.turnTimeoutMs);
  let settled: Settled;
  try {
    settled = settle(run, await runPhases(run, character, options, deadline.signal));
  } catch (error) {
    settled = failed(run, error);
  } finally {
    deadline.clear();
  }
  if (settled.charge) await recordTurnUsage(deps, input, settled.charge);
  if ("error" in settled) throw settled.error;
  if (run.draft && settled.outcome.status === "replied") pending?.set(input.turnId, run.draft);
  return settled.outcome;
}

/** Admission, context, the respond decision, model and tools: how far the turn got. */
async function runPhases(
  run: TurnRun,
  character: Character,
  options: RespondOptions,
  signal: AbortSignal,
): Promise<TurnEnd> {
  const { deps, input, draft } = run;
  const admission = await admitTurn(deps, character, input, options, run.started);
  if (admission.kind === "declined") return admission;
  run.retrieval = admission.retrieval;
  const events = draft ? noteCalls(deps.events, draft) : deps.events;
  const checkpoint = options.resume?.checkpoint;
  const session = new ModelSession({
    model: admission.model,
    choice: modelChoiceFor(character, deps.models),
    events,
    now: () => deps.clock.now(),
    ids: run.ids,
    resume: checkpoint ? { position: checkpoint.modelIndex, usage: checkpoint.usage } : undefined,
    observe: deps.observeModel,
  });
  run.session = session;
  const loop = await beforeDeadline(
    signal,
    modelAndTools(deps, character, input, { session, events, signal, options }),
  );
  if (isTimedOut(loop)) return TIMED_OUT;
  // A resumed turn carries on from its checkpoint: context and the decision to answer are made.
  if (options.resume) {
    if (isTimedOut(await beforeDeadline(signal, admission.verdict))) return TIMED_OUT;
    const memories = options.resume.checkpoint.memories ?? [];
    return endWith(await loop.run({ resume: options.resume }), memories);
  }
  const { retrieval, extra } = admission;
  const context = await composeTurnContext(deps, character, input, {
    tools: loop.tools,
    retrieval,
    extra,
    signal,
  });
  const verdict = await beforeDeadline(signal, admission.verdict);
  if (isTimedOut(verdict)) return TIMED_OUT;
  if (verdict) return { kind: "budget_used", used: verdict };
  options.observer?.memories?.(context.memories);
  const decision = await decideToRespond(deps, character, input, {
    model: admission.model,
    rules: admission.rules,
    history: context.history,
    signal,
  });
  if (isTimedOut(decision)) return TIMED_OUT;
  if (!decision.respond) return { kind: "ignored" };
  options.observer?.replying?.();
  if (draft) context.inspect(draft);
  return endWith(await loop.run({ messages: context.messages }), context.memories);
}

/** The outcome of a turn that ran to an end, with what a pause or a used budget is charged. */
function settle(run: TurnRun, end: TurnEnd): Settled {
  const { deps, input, session, retrieval } = run;
  const outcome = turnOutcome(deps, input, session, end);
  if (end.kind === "declined" || end.kind === "budget_used") {
    emitEnded(run, "ignored", null);
    if (end.kind === "declined") return { outcome, charge: null };
    // Recorded with the budget's name, which is how the next turn knows the member was told.
    const spent = { inputTokens: 0, outputTokens: 0, modelCalls: 0 };
    const error = BUDGET_USED[end.used.scope];
    return { outcome, charge: { spent, model: null, tools: [], error } };
  }
  if (end.kind === "timed_out")
    deps.events.emit({
      type: "run_timed_out",
      ...run.ids,
      at: deps.clock.now(),
      limitMs: deps.limits.turnTimeoutMs,
    });
  else if (retrieval && outcome.status !== "awaiting_approval")
    outcome.queryEmbedding = retrieval.embedding.outcome();
  emitEnded(run, outcome.status === "awaiting_approval" ? "paused" : outcome.status, session);
  const spent = spentSince(session, run.resumed);
  // A pause records its part now, without tools: the resumed part's outcome lists every call of
  // the turn. A reply's spend is counted after the reply (afterReply), off the caller's path.
  if (outcome.status === "awaiting_approval") {
    const late = retrieval?.embedding.outcome() === "late" ? 1 : 0;
    const model = session?.current ?? null;
    return { outcome, charge: { spent, model, tools: [], error: null, lateEmbeddings: late } };
  }
  outcome.spent = spent;
  outcome.spentTokens = spent.inputTokens + spent.outputTokens;
  return { outcome, charge: null };
}

/** A turn that failed: its events, its charge, and the error its caller gets. */
function failed(run: TurnRun, error: unknown): Settled {
  const { deps, session } = run;
  emitEnded(run, "failed", session);
  const failure = error instanceof AppError ? error : null;
  const code = failure?.code ?? "internal";
  deps.events.emit({
    type: "run_failed",
    ...run.ids,
    at: deps.clock.now(),
    code,
    reason: error instanceof Error ? error.message : String(error),
    ...(error instanceof ModelCallError
      ? { model: { name: error.model, cause: error.failureCause } }
      : {}),
  });
  const spent = spentSince(session, run.resumed);
  return {
    // Unknown errors may carry internals (SQL, stack details): the caller gets a plain message.
    error:
      failure ?? new AppError("internal", 500, "the turn failed unexpectedly; see the worker logs"),
    charge: session ? { spent, model: session.current, tools: [], error: code } : null,
  };
}

function emitEnded(
  run: TurnRun,
  status: "replied" | "ignored" | "failed" | "paused",
  session: ModelSession | null,
): void {
  const { deps } = run;
  const usage = session?.usage ?? { promptTokens: 0, completionTokens: 0, modelCalls: 0 };
  deps.events.emit({
    type: "run_ended",
    ...run.ids,
    at: deps.clock.now(),
    durationMs: deps.clock.now() - run.started,
    status,
    modelCalls: usage.modelCalls,
    usage: {
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedPromptTokens: usage.cachedPromptTokens ?? 0,
    },
  });
}
