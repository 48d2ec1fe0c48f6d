// What an autonomous task is made of, as plain data: the goal and its bounds, the plan, every
// step attempted, the usage and the result. The whole state is persisted after every step, so a
// task cut off by eviction resumes from here without repeating a finished step.
import type { Principal } from "../access/principal.ts";
import type { PlacePolicy } from "../access/place-policy.ts";
import type { ApprovalDecision, ToolLoopCheckpoint, TurnUsage } from "../turn/turn-types.ts";
import type { ModelUsage, ToolOutput } from "../ports/tools.ts";

export interface TaskLimits {
  /** Act steps (attempts) in all, including retries. */
  maxSteps: number;
  /** Counted failures in a row before the task gives up. */
  maxFailures: number;
  /** Model tokens (prompt + completion) the task may spend. */
  budgetTokens: number;
  /** Time from the first step to the last. */
  wallClockMs: number;
}

export const DEFAULT_TASK_LIMITS: TaskLimits = {
  maxSteps: 12,
  maxFailures: 3,
  budgetTokens: 200_000,
  wallClockMs: 15 * 60_000,
};
export const MAX_TASK_STEPS = 50;
export const MAX_TASK_FAILURES = 10;
export const MAX_TASK_BUDGET_TOKENS = 2_000_000;
export const MAX_GOAL_CHARS = 4_000;
/** A plan has 1-5 steps; revisions keep the steps not done yet within this too. */
export const MAX_PLAN_STEPS = 5;
/** An agent's tasks run this many at once unless its `settings.tasks.concurrency` says otherwise. */
export const DEFAULT_TASK_CONCURRENCY = 2;
/** Tasks waiting for a free slot, per agent; beyond it a new task is refused (429). */
export const MAX_QUEUED_TASKS = 50;
/** A question the task cannot go on without is answered within this, or the task is cancelled. */
export const INPUT_WINDOW_MS = 24 * 60 * 60_000;
/** A step that delegated waits this long for the other agent's task, which is then cancelled. */
export const DELEGATE_WAIT_MS = 30 * 60_000;

/**
 * Paused states hold no running slot: `awaiting_approval` (a tool needs a person's yes),
 * `needs_input` (the spec lacks an input only a person can give), `awaiting_delegate` (a step
 * handed work to another agent's task and waits for its result).
 */
export type TaskStatus =
  | "queued"
  | "running"
  | "awaiting_approval"
  | "needs_input"
  | "awaiting_delegate"
  | "completed"
  | "failed"
  | "exhausted"
  | "cancelled";
export type TaskPhase = "plan" | "act" | "summarize" | "evaluate" | "done";
export type TaskStopReason =
  | "completed"
  | "max_steps"
  | "max_failures"
  | "budget_tokens"
  /** The place's budget (the member's or the server's day) is used: no further model call. */
  | "place_budget"
  | "wall_clock"
  | "cancelled"
  | "error";
export type TaskSource = "api" | "schedule" | "discord" | "delegation";

/**
 * The goal compiled before planning (by the small model, in a context of its own): what is asked,
 * what the request gives and lacks, what to respect, what the result must be, what could go wrong.
 */
export interface TaskSpec {
  goal: string;
  inputs: {
    provided: string[];
    /** `required`: the task cannot proceed without it (it pauses `needs_input` and asks). */
    missing: { input: string; question: string; required: boolean }[];
  };
  constraints: string[];
  outputRequirements: string[];
  risks: string[];
}

/** The question a `needs_input` task waits on, and the answer once given. */
export interface TaskInputRequest {
  /** 64 random bits in hex; a Discord button carries it. */
  inputId: string;
  question: string;
  /** The spec's missing inputs the answer covers. */
  inputs: string[];
  requestedAt: number;
  /** Unanswered by then: the task ends `cancelled` with its report. */
  expiresAt: number;
}

/** The task another agent started for one of this task's steps (delegate_task), and its result. */
export interface TaskDelegation {
  /** The step and tool call that delegated; the step carries on from `checkpoint`. */
  step: number;
  stepStartedAt: number;
  callId: string;
  agentId: string;
  goal: string;
  requestedAt: number;
  expiresAt: number;
  checkpoint: ToolLoopCheckpoint;
  /** Set once the other agent's object accepted the task. */
  childTaskId: string | null;
  /** What the step's tool call returns: the child's result (or why there is none). */
  output: ToolOutput | null;
  /** delegate_task itself needed a person's approval: their decision, kept for the audit trail. */
  approval?: ApprovalDecision;
}

/** The task (on another agent) whose step started this one. */
export interface TaskParent {
  agentId: string;
  taskId: string;
  step: number;
  callId: string;
}

export interface PlanStep {
  title: string;
  doneWhen: string;
  status: "pending" | "done";
}

export interface TaskPlan {
  steps: PlanStep[];
  successCriteria: string[];
  /** 1 for the first plan; each revision adds one. */
  revision: number;
}

/**
 * One tool call made while working on a task, or (with `kind`) a record of the task's own: the
 * spec that could not be compiled, the parent task that delegated this one.
 */
export interface AuditEntry {
  /** Absent: a tool call. */
  kind?: "spec" | "delegated_by";
  step: number;
  callId: string;
  tool: string;
  arguments: unknown;
  /** What the tool returned (or its error), cut to MAX_TOOL_RECORD_CHARS. */
  result: string;
  ok: boolean;
  cached: boolean;
  durationMs: number;
  model: string;
  at: number;
  /** For a tool that needs a person's approval: what they decided. */
  approval?: ApprovalDecision;
  /** Another agent's model use answering this call (ask_agent, delegate_task). */
  usage?: ModelUsage;
  /** delegate_task, and a delegated task's first entry: the task at the other end. */
  link?: { agentId: string; taskId: string };
}

/**
 * A step stopped at a tool call that needs a person's approval: who must answer, by when, and
 * everything the step needs to carry on exactly there (plain data, persisted with the task).
 */
export interface TaskApproval {
  /** 64 random bits in hex; a Discord button carries it. */
  approvalId: string;
  /** The act step (1-based attempt number) that paused, and when it started. */
  step: number;
  stepStartedAt: number;
  tool: string;
  arguments: Record<string, unknown>;
  requestedAt: number;
  /** No answer by then counts as a denial. */
  expiresAt: number;
  checkpoint: ToolLoopCheckpoint;
  decision: { value: ApprovalDecision; by: string | null; at: number } | null;
}

export interface StepRecord {
  /** 1-based attempt number across the task. */
  step: number;
  /** Index of the plan step it worked on. */
  planStep: number;
  title: string;
  /** The different approach this attempt was told to take after a failure, if any. */
  approach: string | null;
  outcome: "succeeded" | "failed";
  /** The agent's own report of the step. */
  output: string;
  reflection: string;
  failureAnalysis: string | null;
  /** A first failure of a plan step is retried differently before it counts. */
  countedAsFailure: boolean;
  toolCalls: number;
  model: string | null;
  startedAt: number;
  finishedAt: number;
}

export interface CriterionCheck {
  criterion: string;
  met: boolean;
  evidence: string;
}

export interface TaskResult {
  text: string;
  criteria: CriterionCheck[];
}

export interface TaskState {
  taskId: string;
  agentId: string;
  roomId: string;
  goal: string;
  limits: TaskLimits;
  source: TaskSource;
  scheduleId: string | null;
  /** Who started it where a person can be asked (`discord:<user id>`); only they may approve. */
  requestedBy: string | null;
  /**
   * Whom it acts for (src/runtime/access/): the token, member, schedule or agent that started it.
   * Who may answer or cancel it, what its facts may share and whom it remembers as derive from it.
   * Null for tasks stored before it was kept.
   */
  requester: Principal | null;
  /**
   * The rules of the chat place it was started from (tools, roles, budgets), as admission resolved
   * them: applied at every model call and every tool call of every step. Null: no place (an API
   * token's task), or a task stored before it was kept.
   */
  place: PlacePolicy | null;
  /** The agents whose requests led here (delegation), oldest first; empty when a person asked. */
  chain: string[];
  /** The task whose step delegated this one (delegate_task), if any. */
  parent: TaskParent | null;
  status: TaskStatus;
  phase: TaskPhase;
  /** The compiled goal, before the plan; `raw_goal` when it could not be compiled. */
  spec: TaskSpec | null;
  specSource: "compiled" | "raw_goal" | null;
  /** The question a `needs_input` task waits on. */
  input: TaskInputRequest | null;
  plan: TaskPlan | null;
  steps: StepRecord[];
  consecutiveFailures: number;
  /** Failed attempts at the current plan step (the first is retried without counting). */
  failuresOnCurrent: number;
  /** What the next attempt at the current plan step should do differently. */
  retry: { analysis: string; approach: string } | null;
  /** Rolling summary of the steps before `summarizedThrough`, to keep prompts small. */
  summary: string;
  summarizedThrough: number;
  usage: TurnUsage;
  /** Place in the model fallback list; a change means tool state must be re-checked. */
  modelPosition: number;
  modelSwitched: boolean;
  /** The pending (or just answered) approval of the current step, if it stopped at one. */
  approval: TaskApproval | null;
  /** The current step's delegated task (pending, or just finished), if it handed one out. */
  delegation: TaskDelegation | null;
  /** Time spent waiting (approvals, input, delegated tasks), which the wall-clock bound does not count. */
  pausedMs: number;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  stopReason: TaskStopReason | null;
  result: TaskResult | null;
  /** On a stop without success: what was done, what failed and why. */
  report: string | null;
  error: { code: string; message: string } | null;
}

export type TaskEventBody =
  | { type: "task_started" }
  | { type: "spec"; source: "compiled" | "raw_goal"; spec: TaskSpec; problem: string | null }
  | { type: "input_requested"; inputId: string; question: string; expiresAt: number }
  | { type: "input_received"; by: string | null }
  | { type: "delegated_by"; parentAgentId: string; parentTaskId: string; step: number }
  | { type: "delegate_started"; step: number; agentId: string; childTaskId: string; goal: string }
  | {
      type: "delegate_finished";
      step: number;
      agentId: string;
      childTaskId: string | null;
      ok: boolean;
      status: string;
    }
  | {
      type: "plan";
      revision: number;
      steps: { title: string; doneWhen: string; status: string }[];
      successCriteria: string[];
    }
  | { type: "step_started"; step: number; planStep: number; title: string; approach: string | null }
  | {
      type: "tool_called";
      step: number;
      tool: string;
      ok: boolean;
      cached: boolean;
      durationMs: number;
    }
  | {
      type: "step_finished";
      step: number;
      outcome: "succeeded" | "failed";
      output: string;
      countedAsFailure: boolean;
    }
  | {
      type: "reflection";
      step: number;
      text: string;
      failureAnalysis: string | null;
      nextApproach: string | null;
    }
  | { type: "summary"; text: string; throughStep: number }
  | {
      type: "approval_requested";
      step: number;
      tool: string;
      arguments: Record<string, unknown>;
      approvalId: string;
      expiresAt: number;
    }
  | {
      type: "approval_resolved";
      step: number;
      tool: string;
      decision: ApprovalDecision;
      by: string | null;
    }
  | { type: "model_failover"; from: string; to: string; reason: string }
  | { type: "evaluation"; complete: boolean; criteria: CriterionCheck[] }
  | {
      type: "done";
      status: TaskStatus;
      stopReason: TaskStopReason;
      result: string | null;
      report: string | null;
    };

export type TaskEvent = TaskEventBody & { taskId: string; at: number };

export interface NewTask {
  taskId: string;
  agentId: string;
  roomId: string;
  goal: string;
  limits: TaskLimits;
  source: TaskSource;
  scheduleId?: string | null;
  requestedBy?: string | null;
  requester?: Principal | null;
  place?: PlacePolicy | null;
  chain?: string[];
  parent?: TaskParent | null;
  now: number;
}

export function newTaskState(task: NewTask): TaskState {
  return {
    taskId: task.taskId,
    agentId: task.agentId,
    roomId: task.roomId,
    goal: task.goal,
    limits: task.limits,
    source: task.source,
    scheduleId: task.scheduleId ?? null,
    requestedBy: task.requestedBy ?? null,
    requester: task.requester ?? null,
    place: task.place ?? null,
    chain: task.chain ?? [],
    parent: task.parent ?? null,
    status: "queued",
    phase: "plan",
    spec: null,
    specSource: null,
    input: null,
    plan: null,
    steps: [],
    consecutiveFailures: 0,
    failuresOnCurrent: 0,
    retry: null,
    summary: "",
    summarizedThrough: 0,
    usage: { promptTokens: 0, completionTokens: 0, modelCalls: 0 },
    modelPosition: 0,
    modelSwitched: false,
    approval: null,
    delegation: null,
    pausedMs: 0,
    createdAt: task.now,
    startedAt: null,
    finishedAt: null,
    stopReason: null,
    result: null,
    report: null,
    error: null,
  };
}

/** Waiting for a person or another agent: not runnable, and holding no running slot. */
export function isPaused(status: TaskStatus): boolean {
  return (
    status === "awaiting_approval" || status === "needs_input" || status === "awaiting_delegate"
  );
}

export function isTerminal(status: TaskStatus): boolean {
  return (
    status === "completed" ||
    status === "failed" ||
    status === "exhausted" ||
    status === "cancelled"
  );
}
