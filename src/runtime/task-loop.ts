// The autonomous task loop: plan -> act (the chat turn's tool loop) -> reflect -> ... -> evaluate
// completion against the plan's success criteria. `advanceTask` does exactly one unit of work and
// returns the new state (plain data) plus the tool calls it made, so the caller persists each step
// before the next: a task cut off mid-step redoes only that step. Bounded by steps, consecutive
// counted failures, tokens and wall-clock time; a stop without success carries an honest report.
import type { Character } from "./character.ts";
import { renderCharacter } from "./providers/character-provider.ts";
import { AppError } from "./errors.ts";
import { ModelSession } from "./model-session.ts";
import { completeStructured } from "./structured-output.ts";
import {
  clip,
  EVALUATION_INSTRUCTIONS,
  evaluationReply,
  PLANNER_INSTRUCTIONS,
  PlanReply,
  planFromReply,
  REFLECTION_INSTRUCTIONS,
  ReflectionReply,
  renderPlan,
  renderProgress,
  revisePlan,
  stopReport,
  SUMMARY_INSTRUCTIONS,
  TASK_AGENT_INSTRUCTIONS,
} from "./task-plan.ts";
import { isTerminal, type AuditEntry, type StepRecord, type TaskEventBody, type TaskState, type TaskStopReason } from "./task-types.ts";
import { ToolExecutor } from "./tool-executor.ts";
import { runToolLoop } from "./tool-loop.ts";
import type { ChatMessage, ChatModel, ModelChoice, RuntimeEvent, ToolHost } from "./types.ts";

/** Steps not yet folded into the rolling summary before one is written. */
export const SUMMARY_EVERY_STEPS = 3;
/** Model rounds the tool loop may take inside one act step. */
export const ACT_MAX_ROUNDS = 6;
export const ACT_MAX_TOOL_FAILURES = 3;

export const TASK_SWITCH_NOTE =
  "Note: a different model has taken over this task. Tool state may have changed since earlier steps: " +
  "call the tools again before relying on results reported above.";

export interface TaskLoopDeps {
  model: ChatModel;
  models: ModelChoice;
  character: Character;
  /** Tools the agent can call (already connected). */
  tools: ToolHost;
  now: () => number;
  emit: (event: TaskEventBody) => void;
  /** Aborted when the task is cancelled; the current step stops and the task ends `cancelled`. */
  signal: AbortSignal;
  toolTimeoutMs: number;
  maxToolResultChars: number;
  /** A step's time limit (the tool loop's deadline). */
  stepTimeoutMs: number;
}

export interface TaskAdvance {
  state: TaskState;
  /** Tool calls made in this unit, for the audit trail. */
  audit: AuditEntry[];
}

/** One unit of work: a plan, a summary, an act step with its reflection, or the completion check. */
export async function advanceTask(previous: TaskState, deps: TaskLoopDeps): Promise<TaskAdvance> {
  if (isTerminal(previous.status)) return { state: previous, audit: [] };
  const state: TaskState = structuredClone(previous);
  const now = deps.now();
  if (state.status === "queued") {
    state.status = "running";
    state.startedAt = now;
    deps.emit({ type: "task_started" });
  }
  const stop = boundReached(state, deps, now);
  if (stop) return { state: finish(state, deps, stop.reason, stop.text), audit: [] };

  const session = new ModelSession({
    model: deps.model,
    choice: deps.models,
    events: { emit: (event) => onRuntimeEvent(event, deps) },
    now: deps.now,
    ids: { turnId: state.taskId, agentId: state.agentId, roomId: state.roomId },
    resume: { position: state.modelPosition, usage: { promptTokens: 0, completionTokens: 0, modelCalls: 0 } },
  });
  const audit: AuditEntry[] = [];
  try {
    switch (state.phase) {
      case "plan":
        await plan(state, deps, session);
        break;
      case "summarize":
        await summarize(state, deps, session);
        break;
      case "act":
        await act(state, deps, session, audit);
        break;
      case "evaluate":
        await evaluate(state, deps, session);
        break;
      case "done":
        break;
    }
  } catch (error) {
    addUsage(state, session);
    if (deps.signal.aborted) return { state: finish(state, deps, "cancelled", "the task was cancelled"), audit };
    // A model that stays invalid or unreachable ends the task; the record says how far it got.
    const failure = error instanceof AppError ? { code: error.code, message: error.message } : { code: "internal", message: "the task failed unexpectedly; see the worker logs" };
    state.error = failure;
    return { state: finish(state, deps, "error", `the model failed: ${failure.message}`), audit };
  }
  addUsage(state, session);
  if (session.position !== state.modelPosition) {
    state.modelPosition = session.position;
    state.modelSwitched = true;
  }
  if (deps.signal.aborted && !isTerminal(state.status)) return { state: finish(state, deps, "cancelled", "the task was cancelled"), audit };
  return { state, audit };
}

/** Runs a task to its end, persisting after every unit (tests, benchmarks, the Durable Object). */
export async function runTask(state: TaskState, deps: TaskLoopDeps, persist: (advance: TaskAdvance) => void | Promise<void>): Promise<TaskState> {
  let current = state;
  while (!isTerminal(current.status)) {
    const advance = await advanceTask(current, deps);
    await persist(advance);
    current = advance.state;
  }
  return current;
}

/** Ends a task that is not running: cancelled while queued, or it could not run at all (`error`). */
export function stopTask(state: TaskState, now: number, emit: (event: TaskEventBody) => void, reason: "cancelled" | "error", why: string): TaskState {
  if (isTerminal(state.status)) return state;
  return finish(structuredClone(state), { now: () => now, emit }, reason, why);
}

function boundReached(state: TaskState, deps: TaskLoopDeps, now: number): { reason: TaskStopReason; text: string } | null {
  const tokens = state.usage.promptTokens + state.usage.completionTokens;
  if (deps.signal.aborted) return { reason: "cancelled", text: "the task was cancelled" };
  if (tokens >= state.limits.budgetTokens) return { reason: "budget_tokens", text: `the token budget is spent (${tokens} of ${state.limits.budgetTokens})` };
  if (state.startedAt !== null && now - state.startedAt >= state.limits.wallClockMs) {
    return { reason: "wall_clock", text: `the time limit of ${Math.round(state.limits.wallClockMs / 1000)} s is reached` };
  }
  if (state.consecutiveFailures >= state.limits.maxFailures) {
    return { reason: "max_failures", text: `${state.consecutiveFailures} failures in a row (limit ${state.limits.maxFailures})` };
  }
  if (state.phase === "act" && state.steps.length >= state.limits.maxSteps) {
    return { reason: "max_steps", text: `all ${state.limits.maxSteps} steps are used` };
  }
  return null;
}

function finish(state: TaskState, deps: Pick<TaskLoopDeps, "now" | "emit">, reason: TaskStopReason, why: string): TaskState {
  state.phase = "done";
  state.stopReason = reason;
  state.finishedAt = deps.now();
  if (reason === "completed") {
    state.status = "completed";
  } else {
    state.status = reason === "cancelled" ? "cancelled" : reason === "max_failures" || reason === "error" ? "failed" : "exhausted";
    state.report = stopReport(state, why);
  }
  deps.emit({ type: "done", status: state.status, stopReason: reason, result: state.result?.text ?? null, report: state.report });
  return state;
}

async function plan(state: TaskState, deps: TaskLoopDeps, session: ModelSession): Promise<void> {
  const reply = await completeStructured({
    model: sessionModel(session, deps),
    modelName: session.current,
    schema: PlanReply,
    signal: deps.signal,
    messages: [
      { role: "system", content: `${PLANNER_INSTRUCTIONS}\n\nTools the agent has:\n${await toolList(deps)}` },
      { role: "user", content: `Goal: ${state.goal}` },
    ],
  });
  state.plan = planFromReply(reply.value);
  state.phase = "act";
  emitPlan(state, deps);
}

async function summarize(state: TaskState, deps: TaskLoopDeps, session: ModelSession): Promise<void> {
  const messages: ChatMessage[] = [
    { role: "system", content: SUMMARY_INSTRUCTIONS },
    { role: "user", content: `Goal: ${state.goal}\n\n${renderProgress(state)}` },
  ];
  // No tool state in a summary: a fallback model starts from the same messages.
  const response = await session.complete({ messages, temperature: 0, signal: deps.signal }, () => messages);
  const text = (response.text ?? "").trim();
  // An empty summary would lose the steps it replaces: keep them in the prompt instead.
  if (text) {
    state.summary = clip(text, 2_000);
    state.summarizedThrough = state.steps.length;
    deps.emit({ type: "summary", text: state.summary, throughStep: state.summarizedThrough });
  }
  state.phase = "act";
}

async function act(state: TaskState, deps: TaskLoopDeps, session: ModelSession, audit: AuditEntry[]): Promise<void> {
  const plan = state.plan!;
  const current = plan.steps.findIndex((step) => step.status === "pending");
  if (current < 0) {
    // Every step is done: check completion in this same unit.
    state.phase = "evaluate";
    return evaluate(state, deps, session);
  }
  const planStep = plan.steps[current]!;
  const number = state.steps.length + 1;
  const startedAt = deps.now();
  deps.emit({ type: "step_started", step: number, planStep: current, title: planStep.title, approach: state.retry?.approach ?? null });

  const definitions = await deps.tools.list();
  const executor = new ToolExecutor({ host: deps.tools, tools: definitions, defaultTimeoutMs: deps.toolTimeoutMs, maxResultChars: deps.maxToolResultChars, now: deps.now });
  const retry = state.retry ? `\n\nThe previous attempt at this step failed. Analysis: ${state.retry.analysis}\nTake a different approach: ${state.retry.approach}` : "";
  const switched = state.modelSwitched ? `\n\n${TASK_SWITCH_NOTE}` : "";
  const messages: ChatMessage[] = [
    { role: "system", content: `${renderCharacter(deps.character)}\n\n${TASK_AGENT_INSTRUCTIONS}` },
    {
      role: "user",
      content: `Goal: ${state.goal}\n\n${renderPlan(plan, current)}\n\nProgress so far:\n${renderProgress(state)}${switched}\n\nNow do step ${current + 1}: ${planStep.title} (done when: ${planStep.doneWhen})${retry}`,
    },
  ];
  const controller = new AbortController();
  const onCancel = () => controller.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onCancel, { once: true });
  const timer = setTimeout(() => controller.abort(new Error("step timeout")), deps.stepTimeoutMs);
  let loop: Awaited<ReturnType<typeof runToolLoop>>;
  try {
    loop = await runToolLoop({
      session,
      executor,
      events: { emit: (event) => onRuntimeEvent(event, deps, number) },
      now: deps.now,
      ids: { turnId: `${state.taskId}:${number}`, agentId: state.agentId, roomId: state.roomId, userId: `task:${state.source}` },
      messages,
      turnStart: 1,
      tools: definitions.map(({ name, description, parameters }) => ({ name, description, parameters })),
      temperature: deps.character.settings.temperature,
      maxOutputTokens: deps.character.settings.maxOutputTokens,
      maxSteps: ACT_MAX_ROUNDS,
      maxConsecutiveFailures: ACT_MAX_TOOL_FAILURES,
      signal: controller.signal,
    });
  } finally {
    clearTimeout(timer);
    deps.signal.removeEventListener("abort", onCancel);
  }
  if (deps.signal.aborted) return;
  // The tool loop never pauses here (no approvals can be asked for), so it always replies.
  if (loop.kind !== "reply") throw new AppError("internal", 500, "a task step paused unexpectedly");
  state.modelSwitched = false;
  for (const record of loop.toolCalls) {
    audit.push({
      step: number,
      callId: record.id,
      tool: record.name,
      arguments: record.arguments,
      result: record.output,
      ok: record.ok,
      cached: record.cached,
      durationMs: record.durationMs,
      model: record.model,
      at: deps.now(),
    });
  }

  const reflection = await completeStructured({
    model: sessionModel(session, deps),
    modelName: session.current,
    schema: ReflectionReply,
    signal: deps.signal,
    messages: [
      { role: "system", content: REFLECTION_INSTRUCTIONS },
      {
        role: "user",
        content:
          `Goal: ${state.goal}\n\n${renderPlan(plan, current)}\n\nStep ${current + 1}: ${planStep.title} (done when: ${planStep.doneWhen})\n` +
          `Tool calls:\n${renderCalls(loop.toolCalls)}\nThe agent's report: ${loop.text}\nHow the step ended: ${loop.stopReason}`,
      },
    ],
  });
  const verdict = reflection.value;
  // The model's claim is not enough: a step whose tool loop hit a bound, or whose every tool call
  // failed, did not succeed whatever the reflection says.
  const allToolsFailed = loop.toolCalls.length > 0 && loop.toolCalls.every((call) => !call.ok);
  const succeeded = verdict.succeeded && loop.stopReason === "completed" && !allToolsFailed;
  const failureAnalysis = succeeded ? null : verdict.failureAnalysis || failureFromCalls(loop.toolCalls, loop.stopReason) || verdict.reflection;
  const counted = !succeeded && state.failuresOnCurrent >= 1;
  const record: StepRecord = {
    step: number,
    planStep: current,
    title: planStep.title,
    approach: state.retry?.approach ?? null,
    outcome: succeeded ? "succeeded" : "failed",
    output: clip(loop.text, 4_000),
    reflection: verdict.reflection,
    failureAnalysis,
    countedAsFailure: counted,
    toolCalls: loop.toolCalls.length,
    model: loop.model,
    startedAt,
    finishedAt: deps.now(),
  };
  state.steps.push(record);
  deps.emit({ type: "step_finished", step: number, outcome: record.outcome, output: record.output, countedAsFailure: counted });
  deps.emit({ type: "reflection", step: number, text: verdict.reflection, failureAnalysis, nextApproach: succeeded ? null : (verdict.nextApproach ?? null) });

  if (succeeded) {
    planStep.status = "done";
    state.consecutiveFailures = 0;
    state.failuresOnCurrent = 0;
    state.retry = null;
    if (verdict.revisedRemainingSteps) {
      state.plan = revisePlan(plan, current, verdict.revisedRemainingSteps);
      emitPlan(state, deps);
    }
  } else {
    state.failuresOnCurrent += 1;
    if (counted) state.consecutiveFailures += 1;
    state.retry = {
      analysis: failureAnalysis ?? "the step did not succeed",
      approach: verdict.nextApproach || "do not repeat what failed; use another tool, other arguments or another way to reach the step's check",
    };
  }
  const unsummarized = state.steps.length - state.summarizedThrough;
  state.phase = unsummarized >= SUMMARY_EVERY_STEPS ? "summarize" : "act";
}

async function evaluate(state: TaskState, deps: TaskLoopDeps, session: ModelSession): Promise<void> {
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
        content: `Goal: ${state.goal}\n\nSuccess criteria:\n${plan.successCriteria.map((c, i) => `${i + 1}. ${c}`).join("\n")}\n\nWork recorded:\n${renderProgress(state)}`,
      },
    ],
  });
  const criteria = plan.successCriteria.map((criterion, i) => ({ criterion, met: reply.value.criteria[i]!.met, evidence: reply.value.criteria[i]!.evidence }));
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
    steps: [...plan.steps, ...unmet.slice(0, 5).map((check) => ({ title: `Meet the criterion: ${check.criterion}`, doneWhen: check.criterion, status: "pending" as const }))],
    revision: plan.revision + 1,
  };
  state.result = { text: reply.value.result, criteria };
  emitPlan(state, deps);
  state.phase = "act";
}

/** The session as a ChatModel, so structured replies also fail over and count in the usage. */
function sessionModel(session: ModelSession, deps: TaskLoopDeps): ChatModel {
  return {
    backend: deps.model.backend,
    complete: (request) =>
      session.complete(
        { messages: request.messages, temperature: request.temperature, maxOutputTokens: request.maxOutputTokens, signal: request.signal },
        () => request.messages,
      ),
  };
}

function onRuntimeEvent(event: RuntimeEvent, deps: TaskLoopDeps, step?: number): void {
  if (event.type === "tool_called" && step !== undefined) {
    deps.emit({ type: "tool_called", step, tool: event.tool, ok: event.ok, cached: event.cached, durationMs: event.durationMs });
  } else if (event.type === "model_failover") {
    deps.emit({ type: "model_failover", from: event.from, to: event.to, reason: event.reason });
  }
}

function emitPlan(state: TaskState, deps: TaskLoopDeps): void {
  const plan = state.plan!;
  deps.emit({ type: "plan", revision: plan.revision, steps: plan.steps.map((s) => ({ ...s })), successCriteria: [...plan.successCriteria] });
}

function addUsage(state: TaskState, session: ModelSession): void {
  state.usage.promptTokens += session.usage.promptTokens;
  state.usage.completionTokens += session.usage.completionTokens;
  state.usage.modelCalls += session.usage.modelCalls;
}

async function toolList(deps: TaskLoopDeps): Promise<string> {
  const tools = await deps.tools.list();
  return tools.length > 0 ? tools.map((tool) => `- ${tool.name}: ${clip(tool.description, 200)}`).join("\n") : "- none";
}

function renderCalls(calls: { name: string; arguments: unknown; ok: boolean; output: string }[]): string {
  if (calls.length === 0) return "none";
  return calls.map((call) => `- ${call.name}(${clip(JSON.stringify(call.arguments), 300)}) -> ${call.ok ? "ok" : "FAILED"}: ${clip(call.output, 500)}`).join("\n");
}

function failureFromCalls(calls: { name: string; ok: boolean; output: string }[], stopReason: string): string | null {
  const failed = calls.filter((call) => !call.ok);
  if (failed.length > 0) return failed.map((call) => `${call.name}: ${clip(call.output, 300)}`).join("; ");
  return stopReason === "completed" ? null : `the step ended with ${stopReason}`;
}
