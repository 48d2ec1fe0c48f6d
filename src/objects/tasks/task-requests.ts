// What callers hand an agent's AgentTasks object over RPC and what it answers: plain data, so it
// crosses the boundary intact (class identity does not survive RPC).
import type { Principal } from "../../runtime/access/principal.ts";
import type { PlacePolicy } from "../../runtime/access/place-policy.ts";
import type { ApprovalDecision } from "../../runtime/turn/turn-types.ts";
import type {
  AuditEntry,
  TaskEvent,
  TaskLimits,
  TaskParent,
  TaskSource,
  TaskState,
} from "../../runtime/tasks/task-types.ts";
import type { ToolOutput } from "../../runtime/ports/tools.ts";
import type { DeliveryTarget } from "../shared/reply-surface.ts";
import type { ApprovalAnswer } from "../conversation/room-types.ts";
import type { ScheduleRecord, ScheduleSpec } from "./schedule-store.ts";

export interface CreateTaskRequest {
  goal: string;
  /** The creating request's trace context (W3C traceparent): the task's spans continue its trace. */
  traceparent?: string;
  roomId?: string;
  limits: TaskLimits;
  source: TaskSource;
  scheduleId?: string;
  /** Where its progress and result go (a surface's target: a Discord interaction). */
  delivery?: DeliveryTarget;
  /** The Discord user who started it (`discord:<id>`): only they may answer its approvals. */
  requestedBy?: string;
  /** Whom the task acts for (src/runtime/access/): who may answer and cancel it, and its reach. */
  requester?: Principal;
  /**
   * The chat place's rules, from admission (src/clients/chat/admission.ts): the task applies them
   * at every model and tool call. Absent for an API token's task.
   */
  place?: PlacePolicy;
  /** Delegated by another agent's task step (delegate_task): who asked, and the chain so far. */
  parent?: TaskParent;
  chain?: string[];
  /** Makes a delegated step's request idempotent: a repeat gets the task it started. */
  originKey?: string;
}

/** Accepted (202), or refused because the agent's queue is full (429). */
export type CreateTaskResult =
  | { ok: true; taskId: string }
  | { ok: false; code: "rate_limited"; message: string; retryAfterSeconds: number };

/** A question a `needs_input` task asked, answered (REST or a Discord modal). */
export type TaskInputResult =
  | { status: "resolved"; taskId: string }
  /** Discord: someone other than the person who started the task answered. */
  | { status: "not_yours" }
  /** Nothing waits for this answer: answered already, expired, cancelled or unknown. */
  | { status: "gone"; taskStatus: string | null }
  /** REST: the task waits for the person who started it on Discord. */
  | { status: "on_discord" };

/** Who clicked a question's Answer button: they see the question in a modal, if it is theirs. */
export type TaskQuestionOpen =
  | { status: "open"; question: string }
  | { status: "not_yours" }
  | { status: "gone" };

/** A modal's answer to a question, as the worker hands it to the task object. */
export interface TaskInputAnswer {
  inputId: string;
  text: string;
  userId: string;
  userName: string;
  /** The modal submission's own handle (its token is fresh, its @original is the question). */
  via: DeliveryTarget;
}

/** A delegated task finished: what its parent's step gets as the delegate_task output. */
export interface DelegationNotice {
  parentTaskId: string;
  callId: string;
  childAgentId: string;
  childTaskId: string;
  status: string;
  /** The child's result or why there is none, with its model use (`usage`). */
  output: ToolOutput;
}

/** A click on a task's Approve / Deny button: the same shape a room's approval click has. */
export type TaskApprovalClick = ApprovalAnswer;

export type TaskApprovalResult =
  | { status: "resolved"; taskId: string; tool: string; decision: ApprovalDecision }
  /** Discord: someone other than the person who started the task clicked. */
  | { status: "not_yours" }
  /** Nothing waits for this answer: answered already, expired, cancelled or unknown. */
  | { status: "gone"; taskStatus: string | null }
  /** REST: the task waits for the person who started it on Discord. */
  | { status: "on_discord" };

export type ScheduleRequest = Omit<ScheduleSpec, "scheduleId">;
export type ScheduleResult =
  | { ok: true; schedule: ScheduleRecord }
  | { ok: false; code: "validation" | "conflict"; message: string };

export interface TaskView {
  state: TaskState;
  audit: AuditEntry[];
}

/** A task's events after a client's cursor; finished when nothing more will come. */
export interface TaskEventsPage {
  events: { id: number; event: TaskEvent }[];
  finished: boolean;
}
