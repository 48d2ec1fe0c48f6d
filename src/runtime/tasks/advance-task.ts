// The autonomous task loop: spec -> plan -> act (the chat turn's tool loop) -> reflect -> ...
// -> evaluate completion against the plan's success criteria. `advanceTask` does exactly one unit
// of work and returns the new state (plain data) plus the audit entries it made, so the caller
// persists each step before the next: a task cut off mid-step redoes only that step. Bounded by
// steps, consecutive counted failures, tokens and wall-clock time; a stop without success carries
// an honest report. The first unit compiles the goal into a spec (task-spec.ts) and plans from it;
// a task pauses (holding no slot) for a missing input, a tool approval or a delegated step, and
// carries on once pause-answers.ts records the answer.
import { AppError } from "../util/errors.ts";
import { ModelSession } from "../turn/model-session.ts";
import { PlaceBudgetUsed } from "../turn/spend.ts";
import { completeStructured } from "../turn/structured-output.ts";
import { compileSpec, questionFor, renderSpec, requiredMissing } from "./task-spec.ts";
import {
  clip,
  EVALUATION_INSTRUCTIONS,
  evaluationReply,
  PLANNER_INSTRUCTIONS,
  PlanReply,
  planFromReply,
  renderProgress,
  stopReport,
  SUMMARY_INSTRUCTIONS,
} from "./task-plan.ts";
import type { TaskLoopDeps } from "./task-deps.ts";
import { act, onRuntimeEvent, sessionModel, taskTools } from "./act-step.ts";
import { emitPlan } from "./step-reflection.ts";
import {
  INPUT_WINDOW_MS,
  isPaused,
  isTerminal,
  type AuditEntry,
  type TaskEventBody,
  type TaskState,
  type TaskStopReason,
} from "./task-types.ts";
import type { ChatMessage, ChatModel } from "../ports/model.ts";

/** The loop's host interface, kept in its own file so act-step.ts needs no import of this one. */
export type { TaskLoopDeps } from "./task-deps.ts";
export {
  answerApproval,
  answerDelegation,
  answerInput,
  delegationStarted,
} from "./pause-answers.ts";

export interface TaskAdvance {
  state: TaskState;
  /** Tool calls made in this unit, for the audit trail. */
  audit: AuditEntry[];
}

/**
 * A queued task taking a running slot: `running` from now on (its host saves this before the first
 * unit, so a task working on its first unit is never counted as waiting).
 */
export function markStarted(
  previous: TaskState,
  now: number,
  emit: (event: TaskEventBody) => void,
): TaskState {
  if (previous.status !== "queued") return previous;
  emit({ type: "task_started" });
  return { ...previous, status: "running", startedAt: now };
}

/** One unit of work: a plan, a summary, an act step with its reflection, or the completion check. */
export async function advanceTask(previous: TaskState, deps: TaskLoopDeps): Promise<TaskAdvance> {
  // Terminal, or waiting for a person or another agent: nothing to do until pause-answers.ts
  // records the answer.
  if (isTerminal(previous.status) || isPaused(previous.status))
    return { state: previous, audit: [] };
  const state: TaskState = structuredClone(previous);
  const now = deps.now();
  if (state.status === "queued") Object.assign(state, markStarted(state, now, deps.emit));
  const stop = boundReached(state, deps, now);
  if (stop) return { state: finish(state, deps, stop.reason, stop.text), audit: [] };

  const session = new ModelSession({
    model: deps.model,
    choice: deps.models,
    events: { emit: (event) => onRuntimeEvent(event, deps) },
    now: deps.now,
    ...(deps.admitModelCall ? { admit: deps.admitModelCall } : {}),
    ids: { turnId: state.taskId, agentId: state.agentId, roomId: state.roomId },
    // A task's prompts continue one another, not the room's turns.
    cacheScope: `${state.agentId}:task:${state.taskId}`,
    resume: {
      position: state.modelPosition,
      usage: { promptTokens: 0, completionTokens: 0, modelCalls: 0 },
    },
  });
  const audit: AuditEntry[] = [];
  try {
    switch (state.phase) {
      case "plan":
        // The spec first (its own small-model context); a missing required input pauses here.
        if (!state.spec) await specify(state, deps, audit);
        if (state.status !== "needs_input") await plan(state, deps, session);
        break;
      case "summarize":
        await summarize(state, deps, session);
        break;
      case "act":
        // Every step is done: check completion in this same unit.
        if (await act(state, deps, session, audit)) await evaluate(state, deps, session);
        break;
      case "evaluate":
        await evaluate(state, deps, session);
        break;
      case "done":
        break;
    }
  } catch (error) {
    addUsage(state, session);
    if (deps.signal.aborted)
      return { state: finish(state, deps, "cancelled", "the task was cancelled"), audit };
    // The place's day is used (the member's or the server's budget): no further model call.
    if (error instanceof PlaceBudgetUsed)
      return { state: finish(state, deps, "place_budget", error.message), audit };
    // A model that stays invalid or unreachable ends the task; the record says how far it got.
    const failure =
      error instanceof AppError
        ? { code: error.code, message: error.message }
        : { code: "internal", message: "the task failed unexpectedly; see the worker logs" };
    state.error = failure;
    return { state: finish(state, deps, "error", `the model failed: ${failure.message}`), audit };
  }
  addUsage(state, session);
  if (session.position !== state.modelPosition) {
    state.modelPosition = session.position;
    state.modelSwitched = true;
  }
  if (deps.signal.aborted && !isTerminal(state.status))
    return { state: finish(state, deps, "cancelled", "the task was cancelled"), audit };
  return { state, audit };
}

/**
 * Runs a task to its end, or to a pause (a person's approval or answer, a delegated step),
 * persisting after every unit (tests, benchmarks).
 */
export async function runTask(
  state: TaskState,
  deps: TaskLoopDeps,
  persist: (advance: TaskAdvance) => void | Promise<void>,
): Promise<TaskState> {
  let current = state;
  while (!isTerminal(current.status) && !isPaused(current.status)) {
    const advance = await advanceTask(current, deps);
    await persist(advance);
    current = advance.state;
  }
  return current;
}

/** Ends a task that is not running: cancelled while queued, or it could not run at all (`error`). */
export function stopTask(
  state: TaskState,
  now: number,
  emit: (event: TaskEventBody) => void,
  reason: "cancelled" | "error",
  why: string,
): TaskState {
  if (isTerminal(state.status)) return state;
  return finish(structuredClone(state), { now: () => now, emit }, reason, why);
}

function boundReached(
  state: TaskState,
  deps: TaskLoopDeps,
  now: number,
): { reason: TaskStopReason; text: string } | null {
  const tokens = spentTokens(state);
  if (deps.signal.aborted) return { reason: "cancelled", text: "the task was cancelled" };
  if (tokens >= state.limits.budgetTokens)
    return {
      reason: "budget_tokens",
      text: `the token budget is spent (${tokens} of ${state.limits.budgetTokens})`,
    };
  // Time spent waiting for a person's approval is not the task's working time.
  if (
    state.startedAt !== null &&
    now - state.startedAt - state.pausedMs >= state.limits.wallClockMs
  ) {
    return {
      reason: "wall_clock",
      text: `the time limit of ${Math.round(state.limits.wallClockMs / 1000)} s is reached`,
    };
  }
  if (state.consecutiveFailures >= state.limits.maxFailures) {
    return {
      reason: "max_failures",
      text: `${state.consecutiveFailures} failures in a row (limit ${state.limits.maxFailures})`,
    };
  }
  // A step resuming after an approval or a delegated task was counted when it started.
  if (
    state.phase === "act" &&
    !state.approval?.decision &&
    !state.delegation?.output &&
    state.steps.length >= state.limits.maxSteps
  ) {
    return { reason: "max_steps", text: `all ${state.limits.maxSteps} steps are used` };
  }
  return null;
}

function finish(
  state: TaskState,
  deps: Pick<TaskLoopDeps, "now" | "emit">,
  reason: TaskStopReason,
  why: string,
): TaskState {
  state.phase = "done";
  // A pending approval, question or delegation ends with the task: nothing is left to answer.
  state.approval = null;
  state.input = null;
  state.delegation = null;
  state.stopReason = reason;
  state.finishedAt = deps.now();
  if (reason === "completed") {
    state.status = "completed";
  } else {
    state.status =
      reason === "cancelled"
        ? "cancelled"
        : reason === "max_failures" || reason === "error"
          ? "failed"
          : "exhausted";
    state.report = stopReport(state, why);
  }
  deps.emit({
    type: "done",
    status: state.status,
    stopReason: reason,
    result: state.result?.text ?? null,
    report: state.report,
  });
  return state;
}

async function plan(state: TaskState, deps: TaskLoopDeps, session: ModelSession): Promise<void> {
  const reply = await completeStructured({
    model: sessionModel(session, deps),
    modelName: session.current,
    schema: PlanReply,
    signal: deps.signal,
    messages: [
      {
        role: "system",
        content: `${PLANNER_INSTRUCTIONS}\n\nTools the agent has:\n${await toolList(deps, state)}`,
      },
      { role: "user", content: `Goal: ${state.goal}\n\n${renderSpec(state.spec!)}` },
    ],
  });
  state.plan = planFromReply(reply.value);
  state.phase = "act";
  emitPlan(state, deps);
}

async function summarize(
  state: TaskState,
  deps: TaskLoopDeps,
  session: ModelSession,
): Promise<void> {
  const messages: ChatMessage[] = [
    { role: "system", content: SUMMARY_INSTRUCTIONS },
    { role: "user", content: `Goal: ${state.goal}\n\n${renderProgress(state)}` },
  ];
  // No tool state in a summary: a fallback model starts from the same messages.
  const response = await session.complete(
    { messages, temperature: 0, signal: deps.signal },
    () => messages,
  );
  const text = (response.text ?? "").trim();
  // An empty summary would lose the steps it replaces: keep them in the prompt instead.
  if (text) {
    state.summary = clip(text, 2_000);
    state.summarizedThrough = state.steps.length;
    deps.emit({ type: "summary", text: state.summary, throughStep: state.summarizedThrough });
  }
  state.phase = "act";
}

async function evaluate(
  state: TaskState,
  deps: TaskLoopDeps,
  session: ModelSession,
): Promise<void> {
  const plan = state.plan!;
  const reply = await completeStructured({
    model: sessionModel(session, deps),
    modelName: session.current,
    schema: evaluationReply(plan.successCriteria.length),
    signal: deps.signal,
    messages: [
      { role: "system", content: EVALUATION_INSTRUCTIONS },
      {
        role: "user",
        content: `Goal: ${state.goal}\n\n${renderSpec(state.spec!)}\n\nSuccess criteria:\n${plan.successCriteria.map((c, i) => `${i + 1}. ${c}`).join("\n")}\n\nWork recorded:\n${renderProgress(state)}`,
      },
    ],
  });
  const criteria = plan.successCriteria.map((criterion, i) => ({
    criterion,
    met: reply.value.criteria[i]!.met,
    evidence: reply.value.criteria[i]!.evidence,
  }));
  const complete = criteria.every((check) => check.met);
  deps.emit({ type: "evaluation", complete, criteria });
  if (complete) {
    state.result = { text: reply.value.result, criteria };
    finish(state, deps, "completed", "done");
    return;
  }
  // Not there yet: the unmet criteria become the next steps, and the miss counts as a failure.
  const unmet = criteria.filter((check) => !check.met);
  state.consecutiveFailures += 1;
  state.plan = {
    ...plan,
    steps: [
      ...plan.steps,
      ...unmet.slice(0, 5).map((check) => ({
        title: `Meet the criterion: ${check.criterion}`,
        doneWhen: check.criterion,
        status: "pending" as const,
      })),
    ],
    revision: plan.revision + 1,
  };
  state.result = { text: reply.value.result, criteria };
  emitPlan(state, deps);
  state.phase = "act";
}

/**
 * Compiles the goal into the task's spec (task-spec.ts): a spec that stays invalid falls back to
 * the raw goal, said in the audit trail; a required input it lacks pauses the task with the question.
 */
async function specify(state: TaskState, deps: TaskLoopDeps, audit: AuditEntry[]): Promise<void> {
  const started = deps.now();
  const compiled = await compileSpec({
    goal: state.goal,
    model: admittedModel(deps),
    modelName: deps.models.small,
    cacheScope: state.agentId,
    tools: await toolList(deps, state),
    signal: deps.signal,
  });
  state.usage.promptTokens += compiled.usage.promptTokens;
  state.usage.completionTokens += compiled.usage.completionTokens;
  if (compiled.usage.cachedPromptTokens)
    state.usage.cachedPromptTokens =
      (state.usage.cachedPromptTokens ?? 0) + compiled.usage.cachedPromptTokens;
  state.usage.modelCalls += compiled.usage.modelCalls;
  state.spec = compiled.spec;
  state.specSource = compiled.source;
  deps.emit({
    type: "spec",
    source: compiled.source,
    spec: compiled.spec,
    problem: compiled.problem,
  });
  if (compiled.source === "raw_goal") {
    audit.push({
      kind: "spec",
      step: 0,
      callId: `${state.taskId}:spec`,
      tool: "compile_spec",
      arguments: { goal: state.goal },
      result: clip(
        `The spec stayed invalid after one re-ask (${compiled.problem}); the task plans from the raw goal.`,
        2_000,
      ),
      ok: false,
      cached: false,
      durationMs: deps.now() - started,
      model: deps.models.small,
      at: deps.now(),
    });
  }
  const missing = requiredMissing(compiled.spec);
  if (missing.length === 0) return;
  const now = deps.now();
  state.input = {
    inputId: deps.newApprovalId(),
    question: questionFor(compiled.spec),
    inputs: missing.map((item) => item.input),
    requestedAt: now,
    expiresAt: now + (deps.inputWindowMs ?? INPUT_WINDOW_MS),
  };
  state.status = "needs_input";
  deps.emit({
    type: "input_requested",
    inputId: state.input.inputId,
    question: state.input.question,
    expiresAt: state.input.expiresAt,
  });
}

/** Tokens the task spent, its own and what other agents spent on its behalf. */
export function spentTokens(state: TaskState): number {
  const delegated = state.usage.delegated;
  return (
    state.usage.promptTokens +
    state.usage.completionTokens +
    (delegated ? delegated.promptTokens + delegated.completionTokens : 0)
  );
}

/** The session as a ChatModel, so structured replies also fail over and count in the usage. */
function addUsage(state: TaskState, session: ModelSession): void {
  state.usage.promptTokens += session.usage.promptTokens;
  state.usage.completionTokens += session.usage.completionTokens;
  state.usage.modelCalls += session.usage.modelCalls;
  if (session.usage.cachedPromptTokens !== undefined)
    state.usage.cachedPromptTokens =
      (state.usage.cachedPromptTokens ?? 0) + session.usage.cachedPromptTokens;
}

async function toolList(deps: TaskLoopDeps, state: TaskState): Promise<string> {
  const tools = await taskTools(deps, state).list();
  return tools.length > 0
    ? tools.map((tool) => `- ${tool.name}: ${clip(tool.description, 200)}`).join("\n")
    : "- none";
}

/** The task's model outside a session (the spec's small model), asked for admission per call too. */
function admittedModel(deps: TaskLoopDeps): ChatModel {
  const { model, admitModelCall } = deps;
  if (!admitModelCall) return model;
  return {
    backend: model.backend,
    complete: async (request) => {
      await admitModelCall();
      return model.complete(request);
    },
  };
}
