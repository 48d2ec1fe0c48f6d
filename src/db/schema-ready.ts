// Every isolate asks the SchemaGate once whether D1 has its code's migrations (the gate applies
// what is pending), then remembers the answer: no extra D1 read or Durable Object call per
// request. After a failed migration the worker keeps serving on the schema it has (the previous
// version) and asks again after a pause; /health says which migration failed and why.
import type { Env } from "../env.ts";
import { errorField, log } from "../log.ts";
import { schemaCurrent, type SchemaState } from "./schema-migrator.ts";

const RETRY_MS = 30_000;

let state: SchemaState | null = null;
let checking: Promise<SchemaState | null> | null = null;
let retryAt = 0;

/** Resolves once this isolate knows the schema is current, or that it cannot be made so now. */
export function ensureSchema(env: Env, now = Date.now()): Promise<SchemaState | null> {
  if ((state && schemaCurrent(state)) || now < retryAt) return Promise.resolve(state);
  checking ??= env.SCHEMA.getByName("schema")
    .ensure()
    .then((answer) => {
      state = answer;
      if (answer.applied.length > 0)
        log.info("schema_migrated", { applied: answer.applied, version: answer.version });
      if (!schemaCurrent(answer)) {
        retryAt = Date.now() + RETRY_MS;
        log.error("schema_migration_failed", {
          migration: answer.error?.migration ?? null,
          error: answer.error?.message ?? null,
          databases: (answer.databases ?? []).filter((each) => each.error !== null),
        });
      }
      return answer;
    })
    .catch((error: unknown) => {
      // The gate could not be reached: serve on what D1 has, and ask again soon.
      retryAt = Date.now() + RETRY_MS;
      log.error("schema_gate_unreachable", { error: errorField(error) });
      return state;
    })
    .finally(() => {
      checking = null;
    });
  return checking;
}

/** What this isolate last learnt (for /health), without asking. */
export function schemaState(): SchemaState | null {
  return state;
}
