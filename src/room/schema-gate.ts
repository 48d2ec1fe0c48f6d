// SchemaGate: one Durable Object (named "schema") through which every isolate brings D1 up to the
// migrations bundled with its code, so a deploy's pending migrations run exactly once however many
// isolates start at the same moment (a Durable Object runs one call at a time here, and a run in
// progress is shared). A finished run is remembered for the object's life: the next isolates of
// the same deploy get the answer without a D1 read.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { MIGRATIONS } from "../memory/migrations-bundle.ts";
import { applyPendingMigrations, type SchemaState } from "../memory/schema-migrator.ts";

/** After a failed migration, callers within this time get the same answer without a new attempt. */
export const SCHEMA_RETRY_MS = 30_000;

export class SchemaGate extends DurableObject<Env> {
  private run: Promise<SchemaState> | null = null;
  private last: { state: SchemaState; at: number } | null = null;

  /** Brings the schema up to date (or says why it could not) and answers where it stands. */
  async ensure(): Promise<SchemaState> {
    const last = this.last;
    if (last && (last.state.error === null || Date.now() - last.at < SCHEMA_RETRY_MS)) return last.state;
    this.run ??= applyPendingMigrations(this.env.DB, MIGRATIONS)
      .then((state) => {
        this.last = { state, at: Date.now() };
        return state;
      })
      .finally(() => {
        this.run = null;
      });
    return this.run;
  }
}
