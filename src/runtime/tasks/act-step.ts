// One act step of a task and its reflection: the step runs through the chat turn's tool loop
// (same tools, validation, timeouts, failover), then a structured reflection compares the outcome
// with the step's check. A failure records its analysis and the different approach the next
// attempt must take; a plan step's first failure is retried that way before it counts. A step
// pauses (the task holds no slot) at a tool that needs a person's approval, or at delegate_task,
// whose task the host starts on the other agent; it carries on from that point with the answer.
import { addUsage, delegateTaskTool, delegatesOf, delegationRefusal } from "../turn/delegation.ts";
import { requesterKey } from "../access/principal.ts";
import { placeToolHost } from "../access/place-tools.ts";
import { renderCharacter } from "../context/character-provider.ts";
import type { ModelSession } from "../turn/model-session.ts";
import { completeStructured } from "../turn/structured-output.ts";
import type { TaskLoopDeps } from "./task-deps.ts";
import {
  clip,
  REFLECTION_INSTRUCTIONS,
  ReflectionReply,
  renderPlan,
  renderProgress,
  revisePlan,
  TASK_AGENT_INSTRUCTIONS,
} from "./task-plan.ts";
import { renderSpec } from "./task-spec.ts";
import {
  DELEGATE_WAIT_MS,
  type AuditEntry,
  type StepRecord,
  type TaskState,
} from "./task-types.ts";
import { ToolExecutor } from "../turn/tool-executor.ts";
import { runToolLoop } from "../turn/tool-loop.ts";
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
  const planStep = plan.steps[current]!;
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
      title: planStep.title,
      approach: state.retry?.approach ?? null,
    });

  const host = taskTools(deps, state);
  const executor = new ToolExecutor({
    host,
    tools: await host.list(),
    approvalRequired: deps.character.settings.toolApproval,
    defaultTimeoutMs: deps.toolTimeoutMs,
    maxResultChars: deps.maxToolResultChars,
    now: deps.now,
  });
  const definitions = executor.tools;
  const retry = state.retry
    ? `\n\nThe previous attempt at this step failed. Analysis: ${state.retry.analysis}\nTake a different approach: ${state.retry.approach}`
    : "";
  const switched = state.modelSwitched ? `\n\n${TASK_SWITCH_NOTE}` : "";
  const messages: ChatMessage[] = [
    { role: "system", content: `${renderCharacter(deps.character)}\n\n${TASK_AGENT_INSTRUCTIONS}` },
    {
      role: "user",
      content: `Goal: ${state.goal}\n\n${state.spec ? `${renderSpec(state.spec)}\n\n` : ""}${renderPlan(plan, current)}\n\nProgress so far:\n${renderProgress(state)}${switched}\n\nNow do step ${current + 1}: ${planStep.title} (done when: ${planStep.doneWhen})${retry}`,
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
      ids: {
        turnId: `${state.taskId}:${number}`,
        agentId: state.agentId,
        roomId: state.roomId,
        userId: taskUserOf(state),
        ...(state.chain.length > 0 ? { delegation: { chain: state.chain } } : {}),
        ...(state.requester ? { principal: state.requester } : {}),
        ...(state.place ? { place: state.place } : {}),
      },
      messages,
      turnStart: 1,
      tools: definitions.map(({ name, description, parameters }) => ({
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
      ...(approved
        ? { resume: { checkpoint: approved.checkpoint, decision: approved.decision!.value } }
        : delegated
          ? {
              resume: {
                checkpoint: delegated.checkpoint,
                output: delegated.output!,
                ...(delegated.approval ? { decision: delegated.approval } : {}),
              },
            }
          : {}),
    });
  } finally {
    clearTimeout(timer);
    deps.signal.removeEventListener("abort", onCancel);
  }
  if (deps.signal.aborted) return false;
  if (loop.kind === "paused" && loop.reason === "deferred") {
    const requestedAt = deps.now();
    state.delegation = {
      step: number,
      stepStartedAt: startedAt,
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
    return false;
  }
  if (loop.kind === "paused") {
    const requestedAt = deps.now();
    state.approval = {
      approvalId: deps.newApprovalId(),
      step: number,
      stepStartedAt: startedAt,
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
      step: number,
      tool: loop.tool,
      arguments: loop.arguments,
      approvalId: state.approval.approvalId,
      expiresAt: state.approval.expiresAt,
    });
    return false;
  }
  state.modelSwitched = false;
  for (const record of loop.toolCalls) {
    // What other agents spent answering (ask_agent, delegate_task) is reported with the task's.
    if (record.usage) state.usage.delegated = addUsage(state.usage.delegated, record.usage);
    const link =
      delegated && record.id === delegated.callId && delegated.childTaskId
        ? { link: { agentId: delegated.agentId, taskId: delegated.childTaskId } }
        : {};
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
      ...(record.approval ? { approval: record.approval } : {}),
      ...(record.usage ? { usage: record.usage } : {}),
      ...link,
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
  const failureAnalysis = succeeded
    ? null
    : verdict.failureAnalysis ||
      failureFromCalls(loop.toolCalls, loop.stopReason) ||
      verdict.reflection;
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
  deps.emit({
    type: "step_finished",
    step: number,
    outcome: record.outcome,
    output: record.output,
    countedAsFailure: counted,
  });
  deps.emit({
    type: "reflection",
    step: number,
    text: verdict.reflection,
    failureAnalysis,
    nextApproach: succeeded ? null : (verdict.nextApproach ?? null),
  });

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
      approach:
        verdict.nextApproach ||
        "do not repeat what failed; use another tool, other arguments or another way to reach the step's check",
    };
  }
  const unsummarized = state.steps.length - state.summarizedThrough;
  state.phase = unsummarized >= SUMMARY_EVERY_STEPS ? "summarize" : "act";
  return false;
}

/**
 * The tools of a task step: the agent's, plus delegate_task when it has delegates. An allowed
 * delegate_task call never reaches `call` (the loop defers it); a refused one gets the reason.
 */
/**
 * The tools of a task's step: the agent's, delegate_task when it has delegates, and of those only
 * what the place it was started from allows (listed and callable), at every step.
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

export function emitPlan(state: TaskState, deps: TaskLoopDeps): void {
  const plan = state.plan!;
  deps.emit({
    type: "plan",
    revision: plan.revision,
    steps: plan.steps.map((s) => ({ ...s })),
    successCriteria: [...plan.successCriteria],
  });
}

function renderCalls(
  calls: { name: string; arguments: unknown; ok: boolean; output: string }[],
): string {
  if (calls.length === 0) return "none";
  return calls
    .map(
      (call) =>
        `- ${call.name}(${clip(JSON.stringify(call.arguments), 300)}) -> ${call.ok ? "ok" : "FAILED"}: ${clip(call.output, 500)}`,
    )
    .join("\n");
}

function failureFromCalls(
  calls: { name: string; ok: boolean; output: string }[],
  stopReason: string,
): string | null {
  const failed = calls.filter((call) => !call.ok);
  if (failed.length > 0)
    return failed.map((call) => `${call.name}: ${clip(call.output, 300)}`).join("; ");
  return stopReason === "completed" ? null : `the step ended with ${stopReason}`;
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
