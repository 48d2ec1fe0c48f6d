// A task as the API shows it (GET, DELETE and the answers to its pauses): status, the compiled
// spec, the pending approval or question, the delegated step and the task that delegated this
// one, plan, steps, audit trail, result or report, and usage (with what other agents spent).
import { z } from "@hono/zod-openapi";
import type { AuditEntry, TaskState } from "../../../runtime/tasks/task-types.ts";

const Usage = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  modelCalls: z.number(),
});

export const TASK_STATUSES = [
  "queued",
  "running",
  "awaiting_approval",
  "needs_input",
  "awaiting_delegate",
  "completed",
  "failed",
  "exhausted",
  "cancelled",
] as const;

export const TaskResponse = z
  .object({
    taskId: z.string(),
    agentId: z.string(),
    roomId: z.string(),
    goal: z.string(),
    status: z.enum(TASK_STATUSES),
    phase: z.string(),
    source: z.string(),
    scheduleId: z.string().nullable(),
    spec: z
      .object({
        goal: z.string(),
        inputs: z.object({
          provided: z.array(z.string()),
          missing: z.array(
            z.object({ input: z.string(), question: z.string(), required: z.boolean() }),
          ),
        }),
        constraints: z.array(z.string()),
        outputRequirements: z.array(z.string()),
        risks: z.array(z.string()),
      })
      .nullable()
      .openapi({
        description:
          "The goal compiled before planning: what is asked, the inputs given and missing, constraints, what the output must be, risks",
      }),
    specSource: z.enum(["compiled", "raw_goal"]).nullable().openapi({
      description:
        "`raw_goal`: the spec stayed invalid after one re-ask, so the task planned from the goal as written",
    }),
    input: z
      .object({ question: z.string(), requestedAt: z.number(), expiresAt: z.number() })
      .nullable()
      .openapi({
        description:
          "While `needs_input`: the question to answer (POST …/input), and until when (no answer cancels the task)",
      }),
    approval: z
      .object({
        tool: z.string(),
        arguments: z.record(z.string(), z.unknown()),
        requestedAt: z.number(),
        expiresAt: z.number(),
        requestedBy: z.string().nullable(),
      })
      .nullable()
      .openapi({
        description:
          "While `awaiting_approval`: the tool call waiting for a person's yes, and until when (no answer counts as a denial)",
      }),
    delegation: z
      .object({
        agentId: z.string(),
        goal: z.string(),
        childTaskId: z.string().nullable(),
        requestedAt: z.number(),
        expiresAt: z.number(),
      })
      .nullable()
      .openapi({
        description:
          "While `awaiting_delegate`: the task a step handed to another agent (delegate_task), and until when the step waits",
      }),
    parent: z
      .object({ agentId: z.string(), taskId: z.string(), step: z.number() })
      .nullable()
      .openapi({ description: "The task (of another agent) whose step delegated this one" }),
    chain: z.array(z.string()).openapi({
      description: "The agents whose requests led to this task, oldest first (delegation)",
    }),
    limits: z.object({
      maxSteps: z.number(),
      maxFailures: z.number(),
      budgetTokens: z.number(),
      wallClockMs: z.number(),
    }),
    plan: z.unknown(),
    steps: z.array(z.unknown()),
    audit: z.array(z.unknown()),
    result: z.unknown(),
    report: z.string().nullable(),
    stopReason: z.string().nullable(),
    error: z.unknown(),
    usage: Usage.extend({
      delegated: Usage.optional().openapi({
        description:
          "What other agents spent on this task's requests (counted against their own daily ceilings and this agent's)",
      }),
    }),
    createdAt: z.number(),
    startedAt: z.number().nullable(),
    finishedAt: z.number().nullable(),
  })
  .openapi("Task");

export function taskJson(state: TaskState, audit: AuditEntry[]) {
  const delegation = state.status === "awaiting_delegate" ? state.delegation : null;
  return {
    taskId: state.taskId,
    agentId: state.agentId,
    roomId: state.roomId,
    goal: state.goal,
    status: state.status,
    phase: state.phase,
    source: state.source,
    scheduleId: state.scheduleId,
    spec: state.spec,
    specSource: state.specSource,
    input:
      state.status === "needs_input" && state.input
        ? {
            question: state.input.question,
            requestedAt: state.input.requestedAt,
            expiresAt: state.input.expiresAt,
          }
        : null,
    approval:
      state.status === "awaiting_approval" && state.approval
        ? {
            tool: state.approval.tool,
            arguments: state.approval.arguments,
            requestedAt: state.approval.requestedAt,
            expiresAt: state.approval.expiresAt,
            requestedBy: state.requestedBy,
          }
        : null,
    delegation: delegation
      ? {
          agentId: delegation.agentId,
          goal: delegation.goal,
          childTaskId: delegation.childTaskId,
          requestedAt: delegation.requestedAt,
          expiresAt: delegation.expiresAt,
        }
      : null,
    parent: state.parent
      ? { agentId: state.parent.agentId, taskId: state.parent.taskId, step: state.parent.step }
      : null,
    chain: state.chain,
    limits: state.limits,
    plan: state.plan,
    steps: state.steps,
    audit,
    result: state.result,
    report: state.report,
    stopReason: state.stopReason,
    error: state.error,
    usage: state.usage,
    createdAt: state.createdAt,
    startedAt: state.startedAt,
    finishedAt: state.finishedAt,
  };
}
