// The databases of a deployment. `DB` is the catalog (agents, tokens, configs, usage) and, when
// nothing else is declared, holds everything. A deployment may declare memory databases
// (`MEMORY_DB_1` .. `MEMORY_DB_<n>` in wrangler.toml): each agent's memories, vector rows, rooms
// and inspector records then live in one of them, named by the agent's `shard` column, so no one
// database carries every agent (D1 holds 10 GB per database and has one writer each).
import type { Env } from "../env.ts";
import { NotConfiguredError } from "../runtime/util/errors.ts";

export const CATALOG_DB = "DB";

/** `DB`, or one of the memory databases. */
export type DatabaseName = typeof CATALOG_DB | `MEMORY_DB_${number}`;

/** Up to 999 memory databases: D1 allows thousands per account, a Worker far fewer bindings. */
const MEMORY_DB = /^MEMORY_DB_([1-9]\d{0,2})$/;

export function isDatabaseName(name: string): name is DatabaseName {
  return name === CATALOG_DB || MEMORY_DB.test(name);
}

/** Per env object: every request and turn asks (agentData), and the bindings never change. */
const declared = new WeakMap<object, DatabaseName[]>();

/** The memory databases this deployment declares, in number order (none: everything is in DB). */
export function memoryDatabases(env: Env): DatabaseName[] {
  const known = declared.get(env);
  if (known) return known;
  const names: DatabaseName[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (MEMORY_DB.test(name) && isD1(value)) names.push(name as DatabaseName);
  }
  names.sort((a, b) => numberOf(a) - numberOf(b));
  declared.set(env, names);
  return names;
}

/** The binding of a database, or a 503 naming it when this deployment does not declare it. */
export function databaseBinding(env: Env, name: DatabaseName): D1Database {
  const binding = name === CATALOG_DB ? env.DB : env[name];
  if (!binding) {
    throw new NotConfiguredError(
      `the memory database ${name} is not bound to this worker; declare it in wrangler.toml (docs/scaling.md)`,
    );
  }
  return binding;
}

function numberOf(name: string): number {
  return Number(MEMORY_DB.exec(name)?.[1] ?? 0);
}

function isD1(value: unknown): value is D1Database {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { prepare?: unknown }).prepare === "function" &&
    typeof (value as { batch?: unknown }).batch === "function"
  );
}
