// Statements of a fixed shape that every turn makes, built by drizzle once per isolate (with
// `sql.placeholder` for the values) and then only bound. Building a statement (drizzle's SQL
// chunks, each checked with `is()` against its class chain) cost the worker more than D1 took to
// run these one-row writes and reads; the SQL text and parameter order are the same every time.
// Rows come back as D1 gives them (columns by SQL name), so callers map the few they read.
import { is, Param, Placeholder } from "drizzle-orm";
import type { Db } from "../db.ts";

type Built = { toSQL(): { sql: string; params: unknown[] } };
type Value = (values: Record<string, unknown>) => unknown;

export interface Compiled {
  /** The statement with `values` bound by placeholder name, unsent (for a batch, or `.run()`). */
  bind(db: Db, values: Record<string, unknown>): D1PreparedStatement;
  /** Its SQL text (tests read it). */
  sql(db: Db): string;
}

/**
 * Compiles `build` (a drizzle statement with placeholders) on first use. Values are filled in as
 * drizzle's own prepared statements fill them (fillPlaceholders): in a column's place through the
 * column's mapToDriverValue, elsewhere as they are. A missing value is an error, as in drizzle.
 */
export function compiled(build: (db: Db) => Built): Compiled {
  let done: { sql: string; params: Value[] } | null = null;
  const compile = (db: Db) => {
    if (!done) {
      const { sql, params } = build(db).toSQL();
      done = { sql, params: params.map(parameter) };
    }
    return done;
  };
  return {
    bind(db, values) {
      const { sql, params } = compile(db);
      return db.$client.prepare(sql).bind(...params.map((param) => param(values)));
    },
    sql: (db) => compile(db).sql,
  };
}

function parameter(param: unknown): Value {
  if (is(param, Placeholder)) return (values) => placeholderValue(values, param.name);
  if (is(param, Param) && is(param.value, Placeholder)) {
    const { name } = param.value;
    const encoder = param.encoder;
    return (values) => {
      const value = placeholderValue(values, name);
      return encoder ? encoder.mapToDriverValue(value) : value;
    };
  }
  const constant =
    is(param, Param) && param.encoder ? param.encoder.mapToDriverValue(param.value) : param;
  return () => constant;
}

function placeholderValue(values: Record<string, unknown>, name: string): unknown {
  if (!(name in values)) throw new Error(`No value for placeholder "${name}" was provided`);
  return values[name];
}
