// What callers hand an agent's AgentTasks object over RPC and what it answers: plain data, so it
// crosses the boundary intact (class identity does not survive RPC).
import type { ApprovalDecision } from "../runtime/turn-types.ts";
import type {
  AuditEntry,
  TaskEvent,
  TaskLimits,
  TaskSource,
  TaskState,
} from "../runtime/task-types.ts";
import type { DeliveryTarget } from "./reply-surface.ts";
import type { ApprovalAnswer } from "./room-types.ts";
import type { ScheduleRecord, ScheduleSpec } from "./task-store.ts";

export interface CreateTaskRequest {
  goal: string;
  roomId?: string;
  limits: TaskLimits;
  source: TaskSource;
  scheduleId?: string;
  /** Where its progress and result go (a surface's target: a Discord interaction). */
  delivery?: DeliveryTarget;
  /** The Discord user who started it (`discord:<id>`): only they may answer its approvals. */
  requestedBy?: string;
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
