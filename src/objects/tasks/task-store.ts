// An agent's tasks, their event log and audit trail in the AgentTasks Durable Object's SQLite
// (schedules: schedule-store.ts). A task's whole state is one JSON row, rewritten after every
// step together with that step's tool calls (one synchronous block, so both commit or neither).
// Events get monotonically increasing ids: the SSE endpoint replays from a client's Last-Event-ID.
// A task paused for a person on Discord keeps where its prompt (Approve / Deny, or a question) was
// posted; a task another agent delegated keeps the key that makes its creation idempotent and
// whether its parent has heard the result.
import { z } from "zod";
import {
  isTerminal,
  type AuditEntry,
  type TaskEvent,
  type TaskEventBody,
  type TaskState,
} from "../../runtime/tasks/task-types.ts";
import type { DeliveryTarget, PostedPrompt } from "../shared/reply-surface.ts";
import { readSaved, savedShape, writeSaved } from "../../db/json-column.ts";
import {
  DeliveryTargetShape,
  inObjectStorage,
  PostedPromptShape,
} from "../shared/stored-shapes.ts";
import { AuditEntryShape, TaskEventShape, TaskStateShape } from "./task-rows.ts";

/** A task that crashed its object this many times in one step is failed instead of retried forever. */
export const MAX_STEP_ATTEMPTS = 3;
/** Finished tasks (and their events and audit) are kept this long. */
export const TASK_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export interface StoredTask {
  state: TaskState;
  attempts: number;
  delivery: DeliveryTarget | null;
  delivered: boolean;
  /** The Approve / Deny prompt of an approval, once posted (message null: it could not be). */
  prompt: ApprovalPrompt | null;
  /** The question of a `needs_input` task, once posted (message null: it could not be). */
  inputPrompt: InputPrompt | null;
}

export interface ApprovalPrompt {
  approvalId: string;
  message: PostedPrompt | null;
}

export interface InputPrompt {
  inputId: string;
  message: PostedPrompt | null;
}

const ApprovalPromptShape: z.ZodType<ApprovalPrompt> = z.looseObject({
  approvalId: z.string(),
  message: PostedPromptShape.nullable(),
});
const InputPromptShape: z.ZodType<InputPrompt> = z.looseObject({
  inputId: z.string(),
  message: PostedPromptShape.nullable(),
});

const STATE = savedShape(TaskStateShape);
const DELIVERY = savedShape(DeliveryTargetShape);
const APPROVAL_PROMPT = savedShape(ApprovalPromptShape);
const INPUT_PROMPT = savedShape(InputPromptShape);
const EVENT = savedShape(TaskEventShape);
const AUDIT_ENTRY = savedShape(AuditEntryShape);

/**
 * The task store's JSON columns and their saved-state versions (src/db/json-column.ts says how
 * they are read; docs/architecture.md, "Saved state", lists them). A row written before versions
 * were recorded has none and reads as version 1.
 */
export const TASK_SAVED_STATE = {
  tasks: {
    state: STATE,
    delivery: DELIVERY,
    approval_prompt: APPROVAL_PROMPT,
    input_prompt: INPUT_PROMPT,
  },
  task_events: { data: EVENT },
  task_audit: { entry: AUDIT_ENTRY },
};

const TaskRow = z.object({
  state: z.string(),
  attempts: z.number(),
  delivery: z.string().nullable(),
  delivered: z.number(),
  approval_prompt: z.string().nullable(),
  input_prompt: z.string().nullable(),
});
const EventRow = z.object({ id: z.number(), task_id: z.string(), data: z.string() });
export class TaskStore {
  private readonly sql: SqlStorage;

  /** Told after a task's state or events were written (the event streams send what is new). */
  onChange: (taskId: string) => void = () => {};

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
    // Added with delegation and needs_input.
    if (!columns.has("input_prompt"))
      this.sql.exec("ALTER TABLE tasks ADD COLUMN input_prompt TEXT");
    if (!columns.has("origin_key")) this.sql.exec("ALTER TABLE tasks ADD COLUMN origin_key TEXT");
    if (!columns.has("parent_notified"))
      this.sql.exec("ALTER TABLE tasks ADD COLUMN parent_notified INTEGER NOT NULL DEFAULT 0");
    this.sql.exec(
      "CREATE UNIQUE INDEX IF NOT EXISTS tasks_origin ON tasks (origin_key) WHERE origin_key IS NOT NULL",
    );
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
  }

  /** `originKey`: another agent's delegated step, so a repeated request finds this task. */
  insert(
    state: TaskState,
    delivery: DeliveryTarget | null,
    now: number,
    originKey: string | null = null,
  ): void {
    this.sql.exec(
      "INSERT INTO tasks (task_id, status, state, delivery, created_at, updated_at, origin_key) VALUES (?, ?, ?, ?, ?, ?, ?)",
      state.taskId,
      state.status,
      writeSaved(STATE, state),
      delivery ? writeSaved(DELIVERY, delivery) : null,
      now,
      now,
      originKey,
    );
  }

  /** The task a delegated step already started, by the step's key. */
  byOriginKey(originKey: string): StoredTask | null {
    const row = this.sql
      .exec("SELECT task_id FROM tasks WHERE origin_key = ?", originKey)
      .toArray()[0];
    return row ? this.get(String(row.task_id)) : null;
  }

  /** Tasks waiting for a free slot. */
  queuedCount(): number {
    const row = this.sql
      .exec("SELECT COUNT(*) AS n FROM tasks WHERE status = 'queued'")
      .toArray()[0];
    return Number(row?.n ?? 0);
  }

  /** Tasks to run, oldest first: those running (resumed after a restart) and those queued. */
  runnable(): TaskState[] {
    return this.sql
      .exec("SELECT task_id FROM tasks WHERE status IN ('queued', 'running') ORDER BY seq")
      .toArray()
      .map((row) => this.get(String(row.task_id))?.state)
      .filter((state): state is TaskState => state !== undefined);
  }

  /** Paused tasks of one kind, oldest first. */
  paused(status: "awaiting_approval" | "needs_input" | "awaiting_delegate"): StoredTask[] {
    return this.sql
      .exec("SELECT task_id FROM tasks WHERE status = ? ORDER BY seq", status)
      .toArray()
      .map((row) => this.get(String(row.task_id)))
      .filter((task): task is StoredTask => task !== null);
  }

  /** The `needs_input` task waiting on this question, if any. */
  byInputId(inputId: string): StoredTask | null {
    return this.paused("needs_input").find((task) => task.state.input?.inputId === inputId) ?? null;
  }

  setInputPrompt(taskId: string, prompt: InputPrompt): void {
    this.sql.exec(
      "UPDATE tasks SET input_prompt = ? WHERE task_id = ?",
      writeSaved(INPUT_PROMPT, prompt),
      taskId,
    );
  }

  /** Finished delegated tasks whose parent has not heard the result yet. */
  unnotifiedChildren(): StoredTask[] {
    return this.sql
      .exec(
        "SELECT task_id FROM tasks WHERE origin_key IS NOT NULL AND parent_notified = 0 AND status IN ('completed', 'failed', 'exhausted', 'cancelled') ORDER BY seq",
      )
      .toArray()
      .map((row) => this.get(String(row.task_id)))
      .filter((task): task is StoredTask => task !== null);
  }

  markParentNotified(taskId: string): void {
    this.sql.exec("UPDATE tasks SET parent_notified = 1 WHERE task_id = ?", taskId);
  }

  get(taskId: string): StoredTask | null {
    const row = this.sql
      .exec(
        "SELECT state, attempts, delivery, delivered, approval_prompt, input_prompt FROM tasks WHERE task_id = ?",
        taskId,
      )
      .toArray()[0];
    if (!row) return null;
    const parsed = TaskRow.parse(row);
    return {
      state: readState(parsed.state, taskId),
      attempts: parsed.attempts,
      delivery: parsed.delivery
        ? readSaved(DELIVERY, parsed.delivery, inObjectStorage(`task ${taskId}: delivery`))
        : null,
      delivered: parsed.delivered === 1,
      prompt: parsed.approval_prompt
        ? readSaved(
            APPROVAL_PROMPT,
            parsed.approval_prompt,
            inObjectStorage(`task ${taskId}: approval prompt`),
          )
        : null,
      inputPrompt: parsed.input_prompt
        ? readSaved(
            INPUT_PROMPT,
            parsed.input_prompt,
            inObjectStorage(`task ${taskId}: input prompt`),
          )
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
    return this.paused("awaiting_approval");
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
      writeSaved(APPROVAL_PROMPT, prompt),
      taskId,
    );
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
      writeSaved(STATE, state),
      now,
      state.taskId,
    );
    for (const entry of audit)
      this.sql.exec(
        "INSERT INTO task_audit (task_id, entry) VALUES (?, ?)",
        state.taskId,
        writeSaved(AUDIT_ENTRY, entry),
      );
    this.onChange(state.taskId);
  }

  audit(taskId: string): AuditEntry[] {
    return this.sql
      .exec("SELECT entry FROM task_audit WHERE task_id = ? ORDER BY id", taskId)
      .toArray()
      .map((row) =>
        readSaved(AUDIT_ENTRY, String(row.entry), inObjectStorage(`task ${taskId}: audit entry`)),
      );
  }

  appendEvent(taskId: string, body: TaskEventBody, at: number): number {
    const event: TaskEvent = { ...body, taskId, at };
    const row = this.sql
      .exec(
        "INSERT INTO task_events (task_id, data) VALUES (?, ?) RETURNING id",
        taskId,
        writeSaved(EVENT, event),
      )
      .toArray()[0];
    this.onChange(taskId);
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
          event: readSaved(
            EVENT,
            parsed.data,
            inObjectStorage(`task ${taskId}: event ${parsed.id}`),
          ),
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
      ? readSaved(DELIVERY, String(row.delivery), inObjectStorage(`task ${taskId}: delivery`))
      : null;
  }

  setDelivery(taskId: string, delivery: DeliveryTarget): void {
    this.sql.exec(
      "UPDATE tasks SET delivery = ? WHERE task_id = ?",
      writeSaved(DELIVERY, delivery),
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
}

/** A stored state; fields added since it was written get their defaults (task-rows.ts). */
function readState(json: string, taskId: string): TaskState {
  return readSaved(STATE, json, inObjectStorage(`task ${taskId}: state`));
}
