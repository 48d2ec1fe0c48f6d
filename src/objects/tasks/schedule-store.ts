// An agent's task schedules in the AgentTasks Durable Object's SQLite: what each fires (a goal,
// an optional room), the agents SDK schedule that fires it, and its runs, skipped firings and
// last outcome. The spec column is JSON, checked with zod when read back (src/db/json-column.ts).
import { z } from "zod";
import { readSaved, savedShape, writeSaved } from "../../db/json-column.ts";
import { inObjectStorage } from "../shared/stored-shapes.ts";
import type { Principal } from "../../runtime/access/principal.ts";
import { PrincipalShape } from "../../runtime/access/principal-shape.ts";

export interface ScheduleSpec {
  scheduleId: string;
  kind: "cron" | "at" | "every";
  /** The cron expression, the ISO time, or the interval in seconds. */
  when: string;
  goal: string;
  roomId: string | null;
  /** Who created it: each run acts for them (absent in schedules created before it was kept). */
  createdBy?: Principal | null;
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

const ScheduleSpecShape: z.ZodType<ScheduleSpec> = z.looseObject({
  scheduleId: z.string(),
  kind: z.enum(["cron", "at", "every"]),
  when: z.string(),
  goal: z.string(),
  roomId: z.string().nullable(),
  createdBy: PrincipalShape.nullable().optional(),
});
const SPEC = savedShape(ScheduleSpecShape);

/** The schedule store's JSON column and its saved-state version (docs/architecture.md, "Saved state"). */
export const SCHEDULE_SAVED_STATE = { task_schedules: { spec: SPEC } };

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

export class TaskScheduleStore {
  private readonly sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  migrate(): void {
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

  insertSchedule(spec: ScheduleSpec, sdkScheduleId: string, now: number): void {
    this.sql.exec(
      "INSERT INTO task_schedules (schedule_id, spec, sdk_schedule_id, created_at) VALUES (?, ?, ?, ?)",
      spec.scheduleId,
      writeSaved(SPEC, spec),
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

function toSchedule(row: Record<string, SqlStorageValue>): ScheduleRecord {
  const parsed = ScheduleRow.parse(row);
  const spec = readSaved(
    SPEC,
    parsed.spec,
    inObjectStorage(`schedule ${parsed.schedule_id}: spec`),
  );
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
