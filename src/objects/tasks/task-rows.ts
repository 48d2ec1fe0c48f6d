// The shapes of the task store's JSON columns (task-store.ts): a task's whole state, its audit
// entries and its events, checked when read back (src/db/json-column.ts; stored-shapes.ts says why).
// Fields added to the task state after the first tasks were stored get the defaults those tasks had.
import { PrincipalShape } from "../../runtime/access/principal-shape.ts";
import { PlacePolicyShape } from "../../runtime/access/place-policy.ts";
import { z } from "zod";
import type {
  AuditEntry,
  TaskEvent,
  TaskPhase,
  TaskSource,
  TaskState,
  TaskStatus,
  TaskStopReason,
} from "../../runtime/tasks/task-types.ts";
import {
  ApprovalDecisionShape,
  CheckpointShape,
  DecisionShape,
  everyOf,
  TurnUsageShape,
} from "../shared/stored-shapes.ts";

const TaskStatusShape = everyOf<TaskStatus>({
  queued: "queued",
  running: "running",
  awaiting_approval: "awaiting_approval",
  needs_input: "needs_input",
  awaiting_delegate: "awaiting_delegate",
  completed: "completed",
  failed: "failed",
  exhausted: "exhausted",
  cancelled: "cancelled",
});

const StopReasonShape = everyOf<TaskStopReason>({
  completed: "completed",
  max_steps: "max_steps",
  max_failures: "max_failures",
  budget_tokens: "budget_tokens",
  place_budget: "place_budget",
  wall_clock: "wall_clock",
  cancelled: "cancelled",
  error: "error",
});

const PhaseShape = everyOf<TaskPhase>({
  plan: "plan",
  act: "act",
  summarize: "summarize",
  evaluate: "evaluate",
  done: "done",
});
const SourceShape = everyOf<TaskSource>({
  api: "api",
  schedule: "schedule",
  discord: "discord",
  delegation: "delegation",
});
const CriterionShape = z.looseObject({
  criterion: z.string(),
  met: z.boolean(),
  evidence: z.string(),
});
const ToolArguments = z.record(z.string(), z.unknown());
const ModelUsageShape = z.looseObject({
  promptTokens: z.number(),
  completionTokens: z.number(),
  modelCalls: z.number(),
});
const ToolOutputShape = z.union([
  z.looseObject({
    ok: z.literal(true),
    content: z.string(),
    data: z.unknown().optional(),
    usage: ModelUsageShape.optional(),
  }),
  z.looseObject({ ok: z.literal(false), error: z.string(), usage: ModelUsageShape.optional() }),
]);
const Strings = z.array(z.string());
const TaskSpecShape = z.looseObject({
  goal: z.string(),
  inputs: z.looseObject({
    provided: Strings,
    missing: z.array(
      z.looseObject({ input: z.string(), question: z.string(), required: z.boolean() }),
    ),
  }),
  constraints: Strings,
  outputRequirements: Strings,
  risks: Strings,
});
const TaskInputShape = z.looseObject({
  inputId: z.string(),
  question: z.string(),
  inputs: Strings,
  requestedAt: z.number(),
  expiresAt: z.number(),
});
const TaskDelegationShape = z.looseObject({
  step: z.number(),
  stepStartedAt: z.number(),
  callId: z.string(),
  agentId: z.string(),
  goal: z.string(),
  requestedAt: z.number(),
  expiresAt: z.number(),
  checkpoint: CheckpointShape,
  childTaskId: z.string().nullable(),
  output: ToolOutputShape.nullable(),
});
const TaskParentShape = z.looseObject({
  agentId: z.string(),
  taskId: z.string(),
  step: z.number(),
  callId: z.string(),
});

const StepRecordShape = z.looseObject({
  step: z.number(),
  planStep: z.number(),
  title: z.string(),
  approach: z.string().nullable(),
  outcome: z.enum(["succeeded", "failed"]),
  output: z.string(),
  reflection: z.string(),
  failureAnalysis: z.string().nullable(),
  countedAsFailure: z.boolean(),
  toolCalls: z.number(),
  model: z.string().nullable(),
  startedAt: z.number(),
  finishedAt: z.number(),
});

const TaskApprovalShape = z.looseObject({
  approvalId: z.string(),
  step: z.number(),
  stepStartedAt: z.number(),
  tool: z.string(),
  arguments: ToolArguments,
  requestedAt: z.number(),
  expiresAt: z.number(),
  checkpoint: CheckpointShape,
  decision: DecisionShape.nullable(),
});

export const TaskStateShape: z.ZodType<TaskState> = z.looseObject({
  taskId: z.string(),
  agentId: z.string(),
  roomId: z.string(),
  goal: z.string(),
  limits: z.looseObject({
    maxSteps: z.number(),
    maxFailures: z.number(),
    budgetTokens: z.number(),
    wallClockMs: z.number(),
  }),
  source: SourceShape,
  scheduleId: z.string().nullable(),
  // Added with tool approval in tasks: tasks stored before it had none.
  requestedBy: z.string().nullable().default(null),
  // Added with the principal model (issue 38): earlier tasks had none.
  requester: PrincipalShape.nullable().default(null),
  // Added with one admission for every path to a model (issue 53): earlier tasks had none.
  place: PlacePolicyShape.nullable().default(null),
  // Added with delegation, parallel tasks and the compiled spec: earlier tasks had none.
  chain: Strings.default([]),
  parent: TaskParentShape.nullable().default(null),
  status: TaskStatusShape,
  phase: PhaseShape,
  spec: TaskSpecShape.nullable().default(null),
  specSource: z.enum(["compiled", "raw_goal"]).nullable().default(null),
  input: TaskInputShape.nullable().default(null),
  plan: z
    .looseObject({
      steps: z.array(
        z.looseObject({
          title: z.string(),
          doneWhen: z.string(),
          status: z.enum(["pending", "done"]),
        }),
      ),
      successCriteria: z.array(z.string()),
      revision: z.number(),
    })
    .nullable(),
  steps: z.array(StepRecordShape),
  consecutiveFailures: z.number(),
  failuresOnCurrent: z.number(),
  retry: z.looseObject({ analysis: z.string(), approach: z.string() }).nullable(),
  summary: z.string(),
  summarizedThrough: z.number(),
  usage: TurnUsageShape.and(z.looseObject({ delegated: ModelUsageShape.optional() })),
  modelPosition: z.number(),
  modelSwitched: z.boolean(),
  approval: TaskApprovalShape.nullable().default(null),
  delegation: TaskDelegationShape.nullable().default(null),
  pausedMs: z.number().default(0),
  createdAt: z.number(),
  startedAt: z.number().nullable(),
  finishedAt: z.number().nullable(),
  stopReason: StopReasonShape.nullable(),
  result: z.looseObject({ text: z.string(), criteria: z.array(CriterionShape) }).nullable(),
  report: z.string().nullable(),
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
});

export const AuditEntryShape: z.ZodType<AuditEntry> = z.looseObject({
  kind: z.enum(["spec", "delegated_by"]).optional(),
  step: z.number(),
  callId: z.string(),
  tool: z.string(),
  arguments: z.unknown(),
  result: z.string(),
  ok: z.boolean(),
  cached: z.boolean(),
  durationMs: z.number(),
  model: z.string(),
  at: z.number(),
  approval: ApprovalDecisionShape.optional(),
  usage: ModelUsageShape.optional(),
  link: z.looseObject({ agentId: z.string(), taskId: z.string() }).optional(),
});

/** An event's own fields, with the task id and time every stored event carries. */
function event<T extends string, F extends z.ZodRawShape>(type: T, fields: F) {
  return z.looseObject({ type: z.literal(type), taskId: z.string(), at: z.number(), ...fields });
}

export const TaskEventShape: z.ZodType<TaskEvent> = z.discriminatedUnion("type", [
  event("task_started", {}),
  event("spec", {
    source: z.enum(["compiled", "raw_goal"]),
    spec: TaskSpecShape,
    problem: z.string().nullable(),
  }),
  event("input_requested", { inputId: z.string(), question: z.string(), expiresAt: z.number() }),
  event("input_received", { by: z.string().nullable() }),
  event("delegated_by", {
    parentAgentId: z.string(),
    parentTaskId: z.string(),
    step: z.number(),
  }),
  event("delegate_started", {
    step: z.number(),
    agentId: z.string(),
    childTaskId: z.string(),
    goal: z.string(),
  }),
  event("delegate_finished", {
    step: z.number(),
    agentId: z.string(),
    childTaskId: z.string().nullable(),
    ok: z.boolean(),
    status: z.string(),
  }),
  event("plan", {
    revision: z.number(),
    steps: z.array(z.looseObject({ title: z.string(), doneWhen: z.string(), status: z.string() })),
    successCriteria: z.array(z.string()),
  }),
  event("step_started", {
    step: z.number(),
    planStep: z.number(),
    title: z.string(),
    approach: z.string().nullable(),
  }),
  event("tool_called", {
    step: z.number(),
    tool: z.string(),
    ok: z.boolean(),
    cached: z.boolean(),
    durationMs: z.number(),
  }),
  event("step_finished", {
    step: z.number(),
    outcome: z.enum(["succeeded", "failed"]),
    output: z.string(),
    countedAsFailure: z.boolean(),
  }),
  event("reflection", {
    step: z.number(),
    text: z.string(),
    failureAnalysis: z.string().nullable(),
    nextApproach: z.string().nullable(),
  }),
  event("summary", { text: z.string(), throughStep: z.number() }),
  event("approval_requested", {
    step: z.number(),
    tool: z.string(),
    arguments: ToolArguments,
    approvalId: z.string(),
    expiresAt: z.number(),
  }),
  event("approval_resolved", {
    step: z.number(),
    tool: z.string(),
    decision: ApprovalDecisionShape,
    by: z.string().nullable(),
  }),
  event("model_failover", { from: z.string(), to: z.string(), reason: z.string() }),
  event("evaluation", { complete: z.boolean(), criteria: z.array(CriterionShape) }),
  event("done", {
    status: TaskStatusShape,
    stopReason: StopReasonShape,
    result: z.string().nullable(),
    report: z.string().nullable(),
  }),
]);
