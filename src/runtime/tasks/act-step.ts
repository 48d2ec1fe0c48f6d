// One act step of a task: the step runs through the chat turn's tool loop (same tools,
// validation, timeouts, failover), then a structured reflection compares the outcome with the
// step's check (step-reflection.ts). A step pauses (the task holds no slot) at a tool that needs a
// person's approval, or at delegate_task, whose task the host starts on the other agent; it
// carries on from that point with the answer.
import { addUsage, delegateTaskTool, delegatesOf, delegationRefusal } from "../turn/delegation.ts";
import { requesterKey } from "../access/principal.ts";
import { placeToolHost } from "../access/place-tools.ts";
import { renderCharacter } from "../context/character-provider.ts";
import type { ModelSession } from "../turn/model-session.ts";
import type { TaskLoopDeps } from "./task-deps.ts";
import { renderPlan, renderProgress, TASK_AGENT_INSTRUCTIONS } from "./task-plan.ts";
import { reflectOnStep } from "./step-reflection.ts";
import { renderSpec } from "./task-spec.ts";
import { DELEGATE_WAIT_MS, type AuditEntry, type TaskState } from "./task-types.ts";
import { ToolExecutor } from "../turn/tool-executor.ts";
import { runToolLoop, type ToolLoopInput } from "../turn/tool-loop.ts";
import type { ToolCallRecord } from "../turn/turn-types.ts";
import type { RuntimeEvent } from "../ports/events.ts";
import type { ChatMessage, ChatModel } from "../ports/model.ts";
import type { ToolHost } from "../ports/tools.ts";

/** Steps not yet folded into the rolling summary before one is written. */
export const SUMMARY_EVERY_STEPS = 3;
/** Model rounds the tool loop may take inside one act step. */
export const ACT_MAX_ROUNDS = 6;
export const ACT_MAX_TOOL_FAILURES = 3;

export const TASK_SWITCH_NOTE =
  "Note: a different model has taken over this task. Tool state may have changed since earlier steps: " +
  "call the tools again before relying on results reported above.";

/** Runs the current plan step; true when there is none left (the completion check is next). */
export async function act(
  state: TaskState,
  deps: TaskLoopDeps,
  session: ModelSession,
  audit: AuditEntry[],
): Promise<boolean> {
  const plan = state.plan!;
  const current = plan.steps.findIndex((step) => step.status === "pending");
  if (current < 0) {
    state.phase = "evaluate";
    return true;
  }
  const step = startStep(state, deps, current);
  const loop = await runStepLoop(state, deps, session, step);
  if (deps.signal.aborted) return false;
  if (loop.kind === "paused") {
    pauseStep(state, deps, step, loop);
    return false;
  }
  state.modelSwitched = false;
  auditCalls(state, deps, step, loop.toolCalls, audit);
  const model = { client: sessionModel(session, deps), name: session.current };
  await reflectOnStep(state, deps, model, step, loop);
  const unsummarized = state.steps.length - state.summarizedThrough;
  state.phase = unsummarized >= SUMMARY_EVERY_STEPS ? "summarize" : "act";
  return false;
}

/** The step being run: a new one, or one that paused and carries on with its answer. */
interface ActStep {
  /** The plan step's index, and the step's number among the task's steps. */
  current: number;
  number: number;
  startedAt: number;
  /** The pause this run answers: a person's approval, or a delegated task's output. */
  approved: TaskState["approval"];
  delegated: TaskState["delegation"];
}

type StepLoop = Awaited<ReturnType<typeof runToolLoop>>;

function startStep(state: TaskState, deps: TaskLoopDeps, current: number): ActStep {
  // A step that paused (approval, delegated task) carries on where it stopped, with its answer.
  const approved = state.approval?.decision ? state.approval : null;
  const delegated = state.delegation?.output ? state.delegation : null;
  const resumed = approved ?? delegated;
  const number = resumed?.step ?? state.steps.length + 1;
  const startedAt = resumed?.stepStartedAt ?? deps.now();
  state.approval = approved ? null : state.approval;
  state.delegation = delegated ? null : state.delegation;
  if (!resumed)
    deps.emit({
      type: "step_started",
      step: number,
      planStep: current,
      title: state.plan!.steps[current]!.title,
      approach: state.retry?.approach ?? null,
    });
  return { current, number, startedAt, approved, delegated };
}

/** The step's prompt: the task's goal, spec, plan and progress, and what this step is to do. */
function stepMessages(state: TaskState, deps: TaskLoopDeps, current: number): ChatMessage[] {
  const plan = state.plan!;
  const planStep = plan.steps[current]!;
  const retry = state.retry
    ? `\n\nThe previous attempt at this step failed. Analysis: ${state.retry.analysis}\nTake a different approach: ${state.retry.approach}`
    : "";
  const switched = state.modelSwitched ? `\n\n${TASK_SWITCH_NOTE}` : "";
  return [
    { role: "system", content: `${renderCharacter(deps.character)}\n\n${TASK_AGENT_INSTRUCTIONS}` },
    {
      role: "user",
      content: `Goal: ${state.goal}\n\n${state.spec ? `${renderSpec(state.spec)}\n\n` : ""}${renderPlan(plan, current)}\n\nProgress so far:\n${renderProgress(state)}${switched}\n\nNow do step ${current + 1}: ${planStep.title} (done when: ${planStep.doneWhen})${retry}`,
    },
  ];
}

/** The step through the chat turn's tool loop, bounded by the step's timeout and the task's cancel. */
async function runStepLoop(
  state: TaskState,
  deps: TaskLoopDeps,
  session: ModelSession,
  step: ActStep,
): Promise<StepLoop> {
  const host = taskTools(deps, state);
  const executor = new ToolExecutor({
    host,
    tools: await host.list(),
    approvalRequired: deps.character.settings.toolApproval,
    defaultTimeoutMs: deps.toolTimeoutMs,
    maxResultChars: deps.maxToolResultChars,
    now: deps.now,
  });
  const controller = new AbortController();
  const onCancel = () => controller.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onCancel, { once: true });
  const timer = setTimeout(() => controller.abort(new Error("step timeout")), deps.stepTimeoutMs);
  try {
    return await runToolLoop({
      session,
      executor,
      events: { emit: (event) => onRuntimeEvent(event, deps, step.number) },
      now: deps.now,
      ids: {
        turnId: `${state.taskId}:${step.number}`,
        agentId: state.agentId,
        roomId: state.roomId,
        userId: taskUserOf(state),
        ...(state.chain.length > 0 ? { delegation: { chain: state.chain } } : {}),
        ...(state.requester ? { principal: state.requester } : {}),
        ...(state.place ? { place: state.place } : {}),
      },
      messages: stepMessages(state, deps, step.current),
      turnStart: 1,
      tools: executor.tools.map(({ name, description, parameters }) => ({
        name,
        description,
        parameters,
      })),
      temperature: deps.character.settings.temperature,
      maxOutputTokens: deps.character.settings.maxOutputTokens,
      maxSteps: ACT_MAX_ROUNDS,
      maxConsecutiveFailures: ACT_MAX_TOOL_FAILURES,
      signal: controller.signal,
      // Someone can always be asked: on Discord the person who started the task, elsewhere
      // whoever holds the API (POST .../approval). A gated tool never runs on the model's say-so.
      canAskApproval: true,
      // delegate_task goes to the host (AgentTasks), which starts the other agent's task.
      defer: (tool, args) =>
        tool === "delegate_task" &&
        delegationRefusal({
          caller: state.agentId,
          delegates: delegatesOf(deps.character),
          chain: state.chain,
          target: String(args.agentId),
        }) === null,
      ...resumeFrom(step),
    });
  } finally {
    clearTimeout(timer);
    deps.signal.removeEventListener("abort", onCancel);
  }
}

/** Where a paused step's loop carries on, with the answer that ended the pause. */
function resumeFrom(step: ActStep): Pick<ToolLoopInput, "resume"> {
  const { approved, delegated } = step;
  if (approved)
    return { resume: { checkpoint: approved.checkpoint, decision: approved.decision!.value } };
  if (delegated)
    return {
      resume: {
        checkpoint: delegated.checkpoint,
        output: delegated.output!,
        ...(delegated.approval ? { decision: delegated.approval } : {}),
      },
    };
  return {};
}

/** The step stops (the task holds no slot): a delegated task to wait for, or an approval to ask. */
function pauseStep(
  state: TaskState,
  deps: TaskLoopDeps,
  step: ActStep,
  loop: Extract<StepLoop, { kind: "paused" }>,
): void {
  const requestedAt = deps.now();
  if (loop.reason === "deferred") {
    state.delegation = {
      step: step.number,
      stepStartedAt: step.startedAt,
      callId: loop.checkpoint.pendingCalls[0]!.id,
      agentId: String(loop.arguments.agentId),
      goal: String(loop.arguments.goal),
      requestedAt,
      expiresAt: requestedAt + (deps.delegateWaitMs ?? DELEGATE_WAIT_MS),
      checkpoint: loop.checkpoint,
      childTaskId: null,
      output: null,
      ...(loop.approval ? { approval: loop.approval } : {}),
    };
    state.status = "awaiting_delegate";
    return;
  }
  state.approval = {
    approvalId: deps.newApprovalId(),
    step: step.number,
    stepStartedAt: step.startedAt,
    tool: loop.tool,
    arguments: loop.arguments,
    requestedAt,
    expiresAt: requestedAt + deps.approvalWindowMs,
    checkpoint: loop.checkpoint,
    decision: null,
  };
  state.status = "awaiting_approval";
  deps.emit({
    type: "approval_requested",
    step: step.number,
    tool: loop.tool,
    arguments: loop.arguments,
    approvalId: state.approval.approvalId,
    expiresAt: state.approval.expiresAt,
  });
}

/** The step's tool calls in the task's audit, with what other agents spent answering them. */
function auditCalls(
  state: TaskState,
  deps: TaskLoopDeps,
  step: ActStep,
  calls: ToolCallRecord[],
  audit: AuditEntry[],
): void {
  const { delegated } = step;
  for (const record of calls) {
    // What other agents spent answering (ask_agent, delegate_task) is reported with the task's.
    if (record.usage) state.usage.delegated = addUsage(state.usage.delegated, record.usage);
    const link =
      delegated && record.id === delegated.callId && delegated.childTaskId
        ? { link: { agentId: delegated.agentId, taskId: delegated.childTaskId } }
        : {};
    audit.push({
      step: step.number,
      callId: record.id,
      tool: record.name,
      arguments: record.arguments,
      result: record.output,
      ok: record.ok,
      cached: record.cached,
      durationMs: record.durationMs,
      model: record.model,
      at: deps.now(),
      ...(record.approval ? { approval: record.approval } : {}),
      ...(record.usage ? { usage: record.usage } : {}),
      ...link,
    });
  }
}

/**
 * The tools of a task's step: the agent's, delegate_task when it has delegates, and of those only
 * what the place it was started from allows (listed and callable), at every step. An allowed
 * delegate_task call never reaches `call` (the loop defers it); a refused one gets the reason.
 */
export function taskTools(deps: TaskLoopDeps, state: TaskState): ToolHost {
  return placeToolHost(agentTaskTools(deps, state), state.place);
}

function agentTaskTools(deps: TaskLoopDeps, state: TaskState): ToolHost {
  const delegates = delegatesOf(deps.character);
  if (delegates.length === 0) return deps.tools;
  const definition = delegateTaskTool(delegates);
  return {
    list: async () => [
      ...(await deps.tools.list()).filter((tool) => tool.name !== definition.name),
      definition,
    ],
    sources: () => deps.tools.sources?.() ?? [],
    async call(name, args, ctx) {
      if (name !== definition.name) return deps.tools.call(name, args, ctx);
      const refusal = delegationRefusal({
        caller: state.agentId,
        delegates,
        chain: state.chain,
        target: String(args.agentId),
      });
      return { ok: false, error: refusal ?? "delegate_task works only inside a task step" };
    },
  };
}

export function sessionModel(session: ModelSession, deps: TaskLoopDeps): ChatModel {
  return {
    backend: deps.model.backend,
    complete: (request) =>
      session.complete(
        {
          messages: request.messages,
          temperature: request.temperature,
          maxOutputTokens: request.maxOutputTokens,
          signal: request.signal,
        },
        () => request.messages,
      ),
  };
}

export function onRuntimeEvent(event: RuntimeEvent, deps: TaskLoopDeps, step?: number): void {
  if (event.type === "tool_called" && step !== undefined) {
    deps.emit({
      type: "tool_called",
      step,
      tool: event.tool,
      ok: event.ok,
      cached: event.cached,
      durationMs: event.durationMs,
    });
  } else if (event.type === "model_failover") {
    deps.emit({ type: "model_failover", from: event.from, to: event.to, reason: event.reason });
  }
}

/**
 * Whom a task's steps speak and remember as: `task:<requester>`, one per requester (a token, a
 * member), so what one requester's tasks remember never reaches another's. `task:` is reserved,
 * so nobody can speak as it over REST. Tasks stored before requesters were kept keep their old
 * user, `task:<source>`.
 */
export function taskUserOf(state: Pick<TaskState, "requester" | "source">): string {
  return state.requester ? `task:${requesterKey(state.requester)}` : `task:${state.source}`;
}
