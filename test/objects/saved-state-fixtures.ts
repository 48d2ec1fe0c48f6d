// Saved-state fixtures (test/fixtures/saved-state/): rows exactly as a version of the code wrote
// them to the Durable Objects' SQLite and to D1, captured by test/objects/saved-state-capture.test.ts.
// Each capture is a folder named for what wrote it, with one file per object class; the rows are
// copied as they were, ids and all, so a test can put them into fresh objects and read them back
// through the real code (test/objects/saved-state.test.ts).

import beforeVersionsRoom from "../fixtures/saved-state/1-before-versions/agent-room.json";
import beforeVersionsTasks from "../fixtures/saved-state/1-before-versions/agent-tasks.json";
import beforeVersionsPosts from "../fixtures/saved-state/1-before-versions/post-publisher.json";

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
