// Saved-state fixtures (test/fixtures/saved-state/): rows exactly as a version of the code wrote
// them to the Durable Objects' SQLite and to D1, captured by test/objects/saved-state-capture.test.ts.
// Each capture is a folder named for what wrote it, with one file per object class; the rows are
// copied as they were, ids and all, so a test can put them into fresh objects and read them back
// through the real code (test/objects/saved-state.test.ts).

import beforeVersionsRoom from "../fixtures/saved-state/1-before-versions/agent-room.json";
import beforeVersionsTasks from "../fixtures/saved-state/1-before-versions/agent-tasks.json";
import beforeVersionsPosts from "../fixtures/saved-state/1-before-versions/post-publisher.json";
import versionsRoom from "../fixtures/saved-state/2-versions-recorded/agent-room.json";
import versionsTasks from "../fixtures/saved-state/2-versions-recorded/agent-tasks.json";
import versionsPosts from "../fixtures/saved-state/2-versions-recorded/post-publisher.json";
import type { SavedShape } from "../../src/db/json-column.ts";
import { JOURNAL_SAVED_STATE } from "../../src/objects/conversation/journal-rows.ts";
import { SCHEDULE_SAVED_STATE } from "../../src/objects/tasks/schedule-store.ts";
import { TASK_SAVED_STATE } from "../../src/objects/tasks/task-store.ts";
import { PUBLISH_STEP_SAVED_STATE } from "../../src/clients/instagram/post-publisher.ts";

/** A row as `SELECT *` returned it (column name to value). */
export type Row = Record<string, string | number | null>;

/** An agent the rows belong to, as it was created, and the Discord channel it was bound to. */
export interface FixtureAgent {
  id: string;
  settings: Record<string, unknown>;
  plugins?: string[];
  discordChannel?: string;
}

/** One Durable Object's tables, and the agents SDK schedules it had armed (callback and payload). */
export interface FixtureObject {
  name: string;
  tables: Record<string, Row[]>;
  schedules: Array<{ callback: string; payload: unknown }>;
}

export interface SavedStateFixture {
  /** What wrote the rows. */
  written: string;
  agents: FixtureAgent[];
  objects: FixtureObject[];
  /** D1 tables (the rows of these agents only). */
  d1: Record<string, Row[]>;
}

export type FixtureFile = "agent-room" | "agent-tasks" | "post-publisher";

/** Every capture, oldest first, by folder: a new capture is added here with its files. */
const CAPTURES: Record<string, Record<FixtureFile, unknown>> = {
  "1-before-versions": {
    "agent-room": beforeVersionsRoom,
    "agent-tasks": beforeVersionsTasks,
    "post-publisher": beforeVersionsPosts,
  },
  "2-versions-recorded": {
    "agent-room": versionsRoom,
    "agent-tasks": versionsTasks,
    "post-publisher": versionsPosts,
  },
};

export function captures(): string[] {
  return Object.keys(CAPTURES);
}

export function fixture(capture: string, file: FixtureFile): SavedStateFixture {
  const found = CAPTURES[capture]?.[file];
  if (!found) throw new Error(`no saved-state fixture ${capture}/${file}.json`);
  return found as SavedStateFixture;
}

/** Writes rows into a table as they were (every column, the row ids included). */
export function insertRows(sql: SqlStorage, table: string, rows: Row[]): void {
  for (const row of rows) {
    const columns = Object.keys(row);
    sql.exec(
      `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
      ...columns.map((column) => row[column]),
    );
  }
}

/** Every stored shape with a saved-state version, by table and JSON column. */
export const SAVED_STATE: Record<string, Record<string, SavedShape<object>>> = {
  ...JOURNAL_SAVED_STATE,
  ...TASK_SAVED_STATE,
  ...SCHEDULE_SAVED_STATE,
};

/** The shapes kept in the agents SDK's schedules, by callback (the payload). */
export const SAVED_SCHEDULE_PAYLOADS: Record<string, SavedShape<object>> = {
  publishStep: PUBLISH_STEP_SAVED_STATE,
};

/** A stored JSON value's own `v`, if it has one. */
function storedV(value: unknown): unknown {
  const parsed: unknown = typeof value === "string" ? JSON.parse(value) : value;
  return (parsed as { v?: unknown } | null)?.v;
}

export interface SavedValue {
  where: string;
  shape: SavedShape<object>;
  /** Its saved-state version (a value without one was written before versions: 1). */
  version: number;
  /** Whether it says its version itself. */
  tagged: boolean;
  /** A JSON column of ours, or the payload of an agents SDK schedule. */
  kind: "column" | "payload";
}

function savedValue(
  kind: SavedValue["kind"],
  where: string,
  shape: SavedShape<object>,
  value: unknown,
): SavedValue {
  const v = storedV(value);
  return { where, shape, version: typeof v === "number" ? v : 1, tagged: v !== undefined, kind };
}

/** Every versioned value a fixture holds: where it is, its shape and its version. */
export function savedValues(saved: SavedStateFixture): SavedValue[] {
  const found: SavedValue[] = [];
  for (const object of saved.objects) {
    for (const [table, rows] of Object.entries(object.tables))
      for (const row of rows)
        for (const [name, shape] of Object.entries(SAVED_STATE[table] ?? {}))
          if (row[name] !== null && row[name] !== undefined)
            found.push(savedValue("column", `${object.name} ${table}.${name}`, shape, row[name]));
    for (const schedule of object.schedules) {
      const shape = SAVED_SCHEDULE_PAYLOADS[schedule.callback];
      if (shape)
        found.push(
          savedValue(
            "payload",
            `${object.name} schedule ${schedule.callback}`,
            shape,
            schedule.payload,
          ),
        );
    }
  }
  return found;
}
