// An agent's tasks, their event log, audit trail and schedules in the AgentTasks Durable Object's
// SQLite. A task's whole state is one JSON row, rewritten after every step together with that
// step's tool calls (one synchronous block, so both commit or neither). Events get monotonically
// increasing ids: the SSE endpoint replays from a client's Last-Event-ID. A task paused for a
// person's approval on Discord also keeps where its Approve / Deny prompt was posted.
import { z } from "zod";
import {
  isTerminal,
  type AuditEntry,
  type TaskEvent,
  type TaskEventBody,
  type TaskState,
} from "../runtime/task-types.ts";
import type { DeliveryTarget, PostedPrompt } from "./reply-surface.ts";
import { DeliveryTargetShape, PostedPromptShape, readStored } from "./stored-json.ts";
import { AuditEntryShape, TaskEventShape, TaskStateShape } from "./stored-tasks.ts";

/** A task that crashed its object this many times in one step is failed instead of retried forever. */
export const MAX_STEP_ATTEMPTS = 3;
/** Finished tasks (and their events and audit) are kept this long. */
export const TASK_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export interface ScheduleSpec {
  scheduleId: string;
  kind: "cron" | "at" | "every";
  /** The cron expression, the ISO time, or the interval in seconds. */
  when: string;
  goal: string;
  roomId: string | null;
}

export interface ScheduleRecord extends ScheduleSpec {
  /** The agents SDK's schedule row that fires it. */
  sdkScheduleId: string;
  createdAt: number;
  runs: number;
  skipped: number;
  lastRunAt: number | null;
  lastTaskId: string | null;
  lastStatus: string | null;
  /** A one-time (`at`) schedule is done once it fired. */
  active: boolean;
}

export interface StoredTask {
  state: TaskState;
  attempts: number;
  delivery: DeliveryTarget | null;
  delivered: boolean;
  /** The Approve / Deny prompt of an approval, once posted (message null: it could not be). */
  prompt: ApprovalPrompt | null;
}

export interface ApprovalPrompt {
  approvalId: string;
  message: PostedPrompt | null;
}

const ScheduleSpecShape: z.ZodType<ScheduleSpec> = z.looseObject({
  scheduleId: z.string(),
  kind: z.enum(["cron", "at", "every"]),
  when: z.string(),
  goal: z.string(),
  roomId: z.string().nullable(),
});
const ApprovalPromptShape: z.ZodType<ApprovalPrompt> = z.looseObject({
  approvalId: z.string(),
  message: PostedPromptShape.nullable(),
});

const TaskRow = z.object({
  state: z.string(),
  attempts: z.number(),
  delivery: z.string().nullable(),
  delivered: z.number(),
  approval_prompt: z.string().nullable(),
});
const EventRow = z.object({ id: z.number(), task_id: z.string(), data: z.string() });
const ScheduleRow = z.object({
  schedule_id: z.string(),
  spec: z.string(),
  sdk_schedule_id: z.string(),
  created_at: z.number(),
  runs: z.number(),
  skipped: z.number(),
  last_run_at: z.number().nullable(),
  last_task_id: z.string().nullable(),
  last_status: z.string().nullable(),
  active: z.number(),
});

export class TaskStore {
  private readonly sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  migrate(): void {
    this.sql.exec(`CREATE TABLE IF NOT EXISTS tasks (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      task_id TEXT NOT NULL UNIQUE,
      status TEXT NOT NULL,
      state TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      delivery TEXT,
      delivered INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    )`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS tasks_status ON tasks (status, seq)");
    // Added with tool approval in tasks: objects created before it get the column on their next start.
    const columns = new Set(
      this.sql
        .exec("SELECT name FROM pragma_table_info('tasks')")
        .toArray()
        .map((row) => String(row.name)),
    );
    if (!columns.has("approval_prompt"))
      this.sql.exec("ALTER TABLE tasks ADD COLUMN approval_prompt TEXT");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS task_events (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      task_id TEXT NOT NULL,
      data TEXT NOT NULL
    )`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS task_events_task ON task_events (task_id, id)");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS task_audit (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      task_id TEXT NOT NULL,
      entry TEXT NOT NULL
    )`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS task_audit_task ON task_audit (task_id, id)");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS task_schedules (
      schedule_id TEXT PRIMARY KEY,
      spec TEXT NOT NULL,
      sdk_schedule_id TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      runs INTEGER NOT NULL DEFAULT 0,
      skipped INTEGER NOT NULL DEFAULT 0,
      last_run_at INTEGER,
      last_task_id TEXT,
      last_status TEXT,
      active INTEGER NOT NULL DEFAULT 1
    )`);
  }

  insert(state: TaskState, delivery: DeliveryTarget | null, now: number): void {
    this.sql.exec(
      "INSERT INTO tasks (task_id, status, state, delivery, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
      state.taskId,
      state.status,
      JSON.stringify(state),
      delivery ? JSON.stringify(delivery) : null,
      now,
      now,
    );
  }

  get(taskId: string): StoredTask | null {
    const row = this.sql
      .exec(
        "SELECT state, attempts, delivery, delivered, approval_prompt FROM tasks WHERE task_id = ?",
        taskId,
      )
      .toArray()[0];
    if (!row) return null;
    const parsed = TaskRow.parse(row);
    return {
      state: readState(parsed.state, taskId),
      attempts: parsed.attempts,
      delivery: parsed.delivery
        ? readStored(DeliveryTargetShape, parsed.delivery, `task ${taskId}: delivery`)
        : null,
      delivered: parsed.delivered === 1,
      prompt: parsed.approval_prompt
        ? readStored(ApprovalPromptShape, parsed.approval_prompt, `task ${taskId}: approval prompt`)
        : null,
    };
  }

  /** The newest tasks first, at most `limit`. */
  list(limit: number): TaskState[] {
    return this.sql
      .exec("SELECT task_id, state FROM tasks ORDER BY seq DESC LIMIT ?", limit)
      .toArray()
      .map((row) => readState(String(row.state), String(row.task_id)));
  }

  /** Tasks paused for a person's approval, oldest first. */
  awaitingApproval(): StoredTask[] {
    return this.sql
      .exec("SELECT task_id FROM tasks WHERE status = 'awaiting_approval' ORDER BY seq")
      .toArray()
      .map((row) => this.get(String(row.task_id)))
      .filter((task): task is StoredTask => task !== null);
  }

  /** The paused task waiting for this approval id, if any. */
  byApprovalId(approvalId: string): StoredTask | null {
    return (
      this.awaitingApproval().find((task) => task.state.approval?.approvalId === approvalId) ?? null
    );
  }

  setPrompt(taskId: string, prompt: ApprovalPrompt): void {
    this.sql.exec(
      "UPDATE tasks SET approval_prompt = ? WHERE task_id = ?",
      JSON.stringify(prompt),
      taskId,
    );
  }

  /** The oldest task not finished yet. */
  nextRunnable(): TaskState | null {
    const row = this.sql
      .exec("SELECT task_id FROM tasks WHERE status IN ('queued', 'running') ORDER BY seq LIMIT 1")
      .toArray()[0];
    return row ? (this.get(String(row.task_id))?.state ?? null) : null;
  }

  /** Counts a start of the task's next unit of work; returns the count (a crash leaves it raised). */
  beginAttempt(taskId: string): number {
    const row = this.sql
      .exec("UPDATE tasks SET attempts = attempts + 1 WHERE task_id = ? RETURNING attempts", taskId)
      .toArray()[0];
    return Number(row?.attempts ?? 0);
  }

  /** The state after a unit of work, with its tool calls; the crash counter restarts. */
  save(state: TaskState, audit: AuditEntry[], now: number): void {
    this.sql.exec(
      "UPDATE tasks SET status = ?, state = ?, attempts = 0, updated_at = ? WHERE task_id = ?",
      state.status,
      JSON.stringify(state),
      now,
      state.taskId,
    );
    for (const entry of audit)
      this.sql.exec(
        "INSERT INTO task_audit (task_id, entry) VALUES (?, ?)",
        state.taskId,
        JSON.stringify(entry),
      );
  }

  audit(taskId: string): AuditEntry[] {
    return this.sql
      .exec("SELECT entry FROM task_audit WHERE task_id = ? ORDER BY id", taskId)
      .toArray()
      .map((row) => readStored(AuditEntryShape, String(row.entry), `task ${taskId}: audit entry`));
  }

  appendEvent(taskId: string, body: TaskEventBody, at: number): number {
    const event: TaskEvent = { ...body, taskId, at };
    const row = this.sql
      .exec(
        "INSERT INTO task_events (task_id, data) VALUES (?, ?) RETURNING id",
        taskId,
        JSON.stringify(event),
      )
      .toArray()[0];
    return Number(row?.id ?? 0);
  }

  /** Events of a task after `afterId`, oldest first. */
  events(taskId: string, afterId: number, limit: number): { id: number; event: TaskEvent }[] {
    return this.sql
      .exec(
        "SELECT id, task_id, data FROM task_events WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?",
        taskId,
        afterId,
        limit,
      )
      .toArray()
      .map((row) => {
        const parsed = EventRow.parse(row);
        return {
          id: parsed.id,
          event: readStored(TaskEventShape, parsed.data, `task ${taskId}: event ${parsed.id}`),
        };
      });
  }

  undelivered(): StoredTask[] {
    return this.sql
      .exec(
        "SELECT task_id FROM tasks WHERE delivery IS NOT NULL AND delivered = 0 AND status IN ('completed', 'failed', 'exhausted', 'cancelled') ORDER BY seq",
      )
      .toArray()
      .map((row) => this.get(String(row.task_id)))
      .filter((task): task is StoredTask => task !== null);
  }

  /** Where a task reports to (a surface's target), without reading its whole state. */
  delivery(taskId: string): DeliveryTarget | null {
    const row = this.sql.exec("SELECT delivery FROM tasks WHERE task_id = ?", taskId).toArray()[0];
    return row?.delivery
      ? readStored(DeliveryTargetShape, String(row.delivery), `task ${taskId}: delivery`)
      : null;
  }

  setDelivery(taskId: string, delivery: DeliveryTarget): void {
    this.sql.exec(
      "UPDATE tasks SET delivery = ? WHERE task_id = ?",
      JSON.stringify(delivery),
      taskId,
    );
  }

  markDelivered(taskId: string): void {
    this.sql.exec("UPDATE tasks SET delivered = 1 WHERE task_id = ?", taskId);
  }

  /** Drops finished tasks older than the retention window, with their events and audit rows. */
  prune(now: number): void {
    const old = this.sql
      .exec("SELECT task_id, status FROM tasks WHERE updated_at < ?", now - TASK_RETENTION_MS)
      .toArray()
      .filter((row) => isTerminal(String(row.status) as TaskState["status"]))
      .map((row) => String(row.task_id));
    for (const taskId of old) {
      this.sql.exec("DELETE FROM task_events WHERE task_id = ?", taskId);
      this.sql.exec("DELETE FROM task_audit WHERE task_id = ?", taskId);
      this.sql.exec("DELETE FROM tasks WHERE task_id = ?", taskId);
    }
  }

  // ---- schedules ----------------------------------------------------------------------------

  insertSchedule(spec: ScheduleSpec, sdkScheduleId: string, now: number): void {
    this.sql.exec(
      "INSERT INTO task_schedules (schedule_id, spec, sdk_schedule_id, created_at) VALUES (?, ?, ?, ?)",
      spec.scheduleId,
      JSON.stringify(spec),
      sdkScheduleId,
      now,
    );
  }

  schedule(scheduleId: string): ScheduleRecord | null {
    const row = this.sql
      .exec("SELECT * FROM task_schedules WHERE schedule_id = ?", scheduleId)
      .toArray()[0];
    return row ? toSchedule(row) : null;
  }

  schedules(): ScheduleRecord[] {
    return this.sql
      .exec("SELECT * FROM task_schedules ORDER BY created_at, schedule_id")
      .toArray()
      .map(toSchedule);
  }

  deleteSchedule(scheduleId: string): void {
    this.sql.exec("DELETE FROM task_schedules WHERE schedule_id = ?", scheduleId);
  }

  recordRun(scheduleId: string, taskId: string, now: number, oneTime: boolean): void {
    this.sql.exec(
      "UPDATE task_schedules SET runs = runs + 1, last_run_at = ?, last_task_id = ?, last_status = 'queued', active = ? WHERE schedule_id = ?",
      now,
      taskId,
      oneTime ? 0 : 1,
      scheduleId,
    );
  }

  recordSkip(scheduleId: string): void {
    this.sql.exec(
      "UPDATE task_schedules SET skipped = skipped + 1 WHERE schedule_id = ?",
      scheduleId,
    );
  }

  recordOutcome(scheduleId: string, taskId: string, status: string): void {
    this.sql.exec(
      "UPDATE task_schedules SET last_status = ? WHERE schedule_id = ? AND last_task_id = ?",
      status,
      scheduleId,
      taskId,
    );
  }
}

/** A stored state; fields added since it was written get their defaults (stored-tasks.ts). */
function readState(json: string, taskId: string): TaskState {
  return readStored(TaskStateShape, json, `task ${taskId}: state`);
}

function toSchedule(row: Record<string, SqlStorageValue>): ScheduleRecord {
  const parsed = ScheduleRow.parse(row);
  const spec = readStored(ScheduleSpecShape, parsed.spec, `schedule ${parsed.schedule_id}: spec`);
  return {
    ...spec,
    sdkScheduleId: parsed.sdk_schedule_id,
    createdAt: parsed.created_at,
    runs: parsed.runs,
    skipped: parsed.skipped,
    lastRunAt: parsed.last_run_at,
    lastTaskId: parsed.last_task_id,
    lastStatus: parsed.last_status,
    active: parsed.active === 1,
  };
}
