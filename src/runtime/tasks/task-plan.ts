// The prompts and reply schemas of a task's thinking steps: the plan (1-5 steps with success
// criteria), the reflection after each step, and the completion check. Every reply is validated
// with zod by completeStructured (an invalid one is re-asked, never trusted). Also the honest
// report of a task that stopped without success, built from the record rather than the model.
import { z } from "zod";
import {
  MAX_PLAN_STEPS,
  type PlanStep,
  type StepRecord,
  type TaskPlan,
  type TaskState,
} from "./task-types.ts";

const Text = (max: number) => z.string().trim().min(1).max(max);

export const PlanReply = z.object({
  steps: z
    .array(z.object({ title: Text(300), doneWhen: Text(500) }))
    .min(1)
    .max(MAX_PLAN_STEPS),
  successCriteria: z.array(Text(500)).min(1).max(MAX_PLAN_STEPS),
});

export const ReflectionReply = z.object({
  succeeded: z.boolean(),
  reflection: Text(2_000),
  failureAnalysis: z.string().trim().max(2_000).optional(),
  nextApproach: z.string().trim().max(2_000).optional(),
  /** Replaces the plan's steps that are not done yet (after this one). */
  revisedRemainingSteps: z
    .array(z.object({ title: Text(300), doneWhen: Text(500) }))
    .max(MAX_PLAN_STEPS)
    .optional(),
});
export type ReflectionReply = z.infer<typeof ReflectionReply>;

/** One verdict per success criterion, in the plan's order, each with its evidence. */
export function evaluationReply(criteria: number) {
  return z.object({
    criteria: z
      .array(z.object({ met: z.boolean(), evidence: Text(1_000) }))
      .length(criteria, `must have exactly ${criteria} entries, one per criterion in order`),
    result: Text(8_000),
  });
}

export const PLANNER_INSTRUCTIONS =
  "You plan work for an autonomous agent. Break the goal into 1 to 5 concrete steps that the agent can do with its tools, " +
  "each with a check that says when it is done, and list 1 to 5 success criteria for the whole goal. " +
  'Reply with only JSON: {"steps":[{"title":"...","doneWhen":"..."}],"successCriteria":["..."]}';

export const REFLECTION_INSTRUCTIONS =
  "You review one step of an autonomous task. Compare what the step produced with its done-when check and the plan. " +
  "Say honestly whether the step succeeded. If it failed, analyse why (the error, not the symptom) and propose a different approach " +
  "for the next attempt. If the rest of the plan should change, give the revised remaining steps. " +
  'Reply with only JSON: {"succeeded":true|false,"reflection":"...","failureAnalysis":"...","nextApproach":"...","revisedRemainingSteps":[{"title":"...","doneWhen":"..."}]} ' +
  "(failureAnalysis, nextApproach and revisedRemainingSteps are optional).";

export const EVALUATION_INSTRUCTIONS =
  "You check whether an autonomous task reached its goal. For each success criterion, in order, say whether the work recorded " +
  "below meets it and quote the evidence from that record; a claim without evidence is not met. Then write the result for the person who " +
  'asked. Reply with only JSON: {"criteria":[{"met":true|false,"evidence":"..."}],"result":"..."}';

export const SUMMARY_INSTRUCTIONS =
  "Summarize the progress of an autonomous task so far in at most 150 words: what was found or done that later steps need, and what failed. Plain text.";

export const TASK_AGENT_INSTRUCTIONS =
  "# Working on a task\nYou are working autonomously on a task, one step at a time. Use your tools to do the current step. " +
  "When the step is done, reply with a short report of what you did and found (include the facts later steps need). " +
  "If you cannot do it, say so plainly and why. Do not claim work you did not do.";

export function renderPlan(plan: TaskPlan, current: number | null): string {
  const lines = plan.steps.map(
    (step, i) =>
      `${i + 1}. [${i === current ? "current" : step.status}] ${step.title} (done when: ${step.doneWhen})`,
  );
  return `Plan:\n${lines.join("\n")}\nSuccess criteria:\n${plan.successCriteria.map((c) => `- ${c}`).join("\n")}`;
}

/** The work so far as the model sees it: the rolling summary, then the steps it does not cover. */
export function renderProgress(state: TaskState): string {
  const parts: string[] = [];
  if (state.summary) parts.push(`Summary of earlier steps:\n${state.summary}`);
  for (const step of state.steps.slice(state.summarizedThrough)) parts.push(renderStep(step));
  return parts.length > 0 ? parts.join("\n\n") : "Nothing done yet.";
}

export function renderStep(step: StepRecord): string {
  const head = `Step ${step.step} (${step.title}): ${step.outcome}`;
  const failure = step.failureAnalysis ? `\nWhy it failed: ${step.failureAnalysis}` : "";
  return `${head}\nReport: ${step.output}${failure}`;
}

export function planFromReply(reply: z.infer<typeof PlanReply>): TaskPlan {
  return {
    steps: reply.steps.map((step) => ({ ...step, status: "pending" as const })),
    successCriteria: reply.successCriteria,
    revision: 1,
  };
}

/** The plan with its not-done steps after `current` replaced (kept within MAX_PLAN_STEPS pending). */
export function revisePlan(
  plan: TaskPlan,
  current: number,
  remaining: { title: string; doneWhen: string }[],
): TaskPlan {
  const kept = plan.steps.slice(0, current + 1);
  const pending: PlanStep[] = remaining
    .slice(0, MAX_PLAN_STEPS)
    .map((step) => ({ ...step, status: "pending" }));
  return { ...plan, steps: [...kept, ...pending], revision: plan.revision + 1 };
}

/**
 * What a stopped task did, from its own record (never from the model, which may not have been
 * reachable): steps done with their reports, failures with their analyses, steps not reached.
 */
export function stopReport(state: TaskState, reason: string): string {
  const lines = [`Stopped: ${reason}.`];
  const done = state.plan?.steps.filter((step) => step.status === "done") ?? [];
  const succeeded = state.steps.filter((step) => step.outcome === "succeeded");
  const failed = state.steps.filter((step) => step.outcome === "failed");
  const notDone = state.plan?.steps.filter((step) => step.status !== "done") ?? [];
  lines.push(`Done (${done.length} of ${state.plan?.steps.length ?? 0} plan steps):`);
  if (succeeded.length === 0) lines.push("- nothing");
  for (const step of succeeded) lines.push(`- ${step.title}: ${clip(step.output, 300)}`);
  if (failed.length > 0) {
    lines.push("Failed:");
    for (const step of failed)
      lines.push(
        `- step ${step.step}, ${step.title}: ${clip(step.failureAnalysis ?? step.output, 300)}`,
      );
  }
  if (notDone.length > 0) {
    lines.push("Not done:");
    for (const step of notDone) lines.push(`- ${step.title}`);
  }
  return lines.join("\n");
}

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 3)}...`;
}
