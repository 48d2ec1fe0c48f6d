// The worker entry `npm run bench:compare` bundles: the real worker (src/index.ts) and its Durable
// Object classes, each given an env whose D1 binding counts statements and round trips, and each
// object's own SQLite counting its statements. One route of its own, reached only in this bundle:
// `GET /__compare/counts` hands over the counts since the last take.
/// <reference path="../../src/wasm.d.ts" />
import worker from "../../src/index.ts";
import { instrumentedObjects } from "../instrumented-objects.ts";
import type { Env } from "../../src/env.ts";

const counts = { d1Statements: 0, d1RoundTrips: 0, objectSqlStatements: 0 };
const countedEnvs = new WeakMap<Env, Env>();
const realStatements = new WeakMap<object, D1PreparedStatement>();

function countingEnv(env: Env): Env {
  const known = countedEnvs.get(env);
  if (known) return known;
  const counted = { ...env, DB: countingD1(env.DB) };
  countedEnvs.set(env, counted);
  return counted;
}

function countingD1(db: D1Database): D1Database {
  const once = <T>(work: () => Promise<T>): Promise<T> => {
    counts.d1Statements += 1;
    counts.d1RoundTrips += 1;
    return work();
  };
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      first: (column?: string) => once(() => statement.first(column as string)),
      all: () => once(() => statement.all()),
      run: () => once(() => statement.run()),
      raw: (options?: { columnNames?: boolean }) =>
        once(() => statement.raw(options as { columnNames: true })),
    } as unknown as D1PreparedStatement;
    realStatements.set(wrapped, statement);
    return wrapped;
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => wrap(target.prepare(query));
      if (prop === "batch")
        return (statements: D1PreparedStatement[]) => {
          counts.d1Statements += statements.length;
          counts.d1RoundTrips += 1;
          return target.batch(statements.map((s) => realStatements.get(s) ?? s));
        };
      if (prop === "exec") return (query: string) => once(() => target.exec(query));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function countObjectSql(ctx: DurableObjectState): void {
  const sql = ctx.storage.sql;
  const exec = sql.exec.bind(sql);
  Object.defineProperty(sql, "exec", {
    value: (...args: Parameters<SqlStorage["exec"]>) => {
      counts.objectSqlStatements += 1;
      return exec(...args);
    },
  });
}

export const {
  AgentRoom,
  AgentTasks,
  DiscordGateway,
  DiscordRestLimiter,
  PostPublisher,
  RateLimiter,
  SchemaGate,
} = instrumentedObjects({ env: countingEnv, state: countObjectSql });

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__compare/counts") {
      const taken = { ...counts };
      counts.d1Statements = 0;
      counts.d1RoundTrips = 0;
      counts.objectSqlStatements = 0;
      return Response.json(taken);
    }
    return worker.fetch(request, countingEnv(env), ctx);
  },
  scheduled(controller, env, ctx) {
    return worker.scheduled(controller, countingEnv(env), ctx);
  },
} satisfies ExportedHandler<Env>;
