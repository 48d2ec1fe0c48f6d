// The reflection after a task's act step: a structured reply compares the step's outcome with its
// check. The model's claim is not enough: a step whose tool loop hit a bound, or whose every tool
// call failed, did not succeed. A failure records its analysis and the different approach the
// next attempt must take; a success may revise the plan's remaining steps.
import type { ChatModel } from "../ports/model.ts";
import { completeStructured } from "../turn/structured-output.ts";
import type { ToolLoopResult } from "../turn/tool-loop.ts";
import type { TaskLoopDeps } from "./task-deps.ts";
import {
  clip,
  REFLECTION_INSTRUCTIONS,
  ReflectionReply,
  renderPlan,
  revisePlan,
} from "./task-plan.ts";
import type { StepRecord, TaskState } from "./task-types.ts";

/** Which step is reflected on: its plan step's index, its number, when it started. */
export interface StepSpan {
  current: number;
  number: number;
  startedAt: number;
}

/**
 * The structured reflection on the step's outcome against its check, recorded; a failure keeps
 * its analysis and the different approach the next attempt must take.
 */
export async function reflectOnStep(
  state: TaskState,
  deps: TaskLoopDeps,
  model: { client: ChatModel; name: string },
  step: StepSpan,
  loop: Extract<ToolLoopResult, { kind: "reply" }>,
): Promise<void> {
  const plan = state.plan!;
  const { current, number } = step;
  const planStep = plan.steps[current]!;
  const reflection = await completeStructured({
    model: model.client,
    modelName: model.name,
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
    startedAt: step.startedAt,
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
  if (succeeded) stepSucceeded(state, deps, current, verdict.revisedRemainingSteps);
  else stepFailed(state, counted, failureAnalysis, verdict.nextApproach);
}

function stepSucceeded(
  state: TaskState,
  deps: TaskLoopDeps,
  current: number,
  revisedRemainingSteps: Parameters<typeof revisePlan>[2] | undefined,
): void {
  const plan = state.plan!;
  plan.steps[current]!.status = "done";
  state.consecutiveFailures = 0;
  state.failuresOnCurrent = 0;
  state.retry = null;
  if (revisedRemainingSteps) {
    state.plan = revisePlan(plan, current, revisedRemainingSteps);
    emitPlan(state, deps);
  }
}

function stepFailed(
  state: TaskState,
  counted: boolean,
  failureAnalysis: string | null,
  nextApproach: string | null | undefined,
): void {
  state.failuresOnCurrent += 1;
  if (counted) state.consecutiveFailures += 1;
  state.retry = {
    analysis: failureAnalysis ?? "the step did not succeed",
    approach:
      nextApproach ||
      "do not repeat what failed; use another tool, other arguments or another way to reach the step's check",
  };
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
