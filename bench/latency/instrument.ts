// Runs inside workerd for `npm run bench -- --d1-ms N --do-ms N`: wraps a worker's env so every D1
// round trip (a statement or a batch) and every Durable Object call (an RPC or fetch on a stub)
// waits the given time first and is recorded as a trip with its start and end; also records each
// model request (fetch to .../chat/completions), each embedding request (.../embeddings) and the
// SQL statements run. What production adds
// to loopback (a network hop per D1 query or object call) becomes visible as time, and the trips
// show which of them are sequential on a turn's critical path.

export interface Trip {
  kind: "d1" | "do" | "model" | "embed" | "request";
  /** What was called: `DB.batch`, `ROOMS.submitTurn`, a request's path. */
  what: string;
  start: number;
  end: number;
  /** D1: statements in the round trip. */
  statements?: number;
}

export interface Delays {
  d1Ms: number;
  doMs: number;
}

const trips: Trip[] = [];
let inFlight = 0;
let lastActivity = Date.now();
let doSqlStatements = 0;
let delays: Delays = { d1Ms: 0, doMs: 0 };

export function setDelays(next: Delays): void {
  delays = next;
}

/** Takes what was recorded since the last take. */
export function takeTrips(): { trips: Trip[]; doSqlStatements: number } {
  const taken = trips.splice(0, trips.length);
  const sql = doSqlStatements;
  doSqlStatements = 0;
  return { trips: taken, doSqlStatements: sql };
}

/** Resolves once nothing recorded has been in flight for `quietMs` (after-reply work included). */
export async function quiescent(quietMs: number, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    await sleep(Math.max(10, quietMs / 4));
    if (inFlight === 0 && Date.now() - lastActivity >= quietMs) return;
    if (Date.now() > deadline) return;
  }
}

export async function trip<T>(
  kind: Trip["kind"],
  what: string,
  work: () => Promise<T>,
  statements?: number,
): Promise<T> {
  const start = Date.now();
  inFlight += 1;
  lastActivity = start;
  try {
    const delay = kind === "d1" ? delays.d1Ms : kind === "do" ? delays.doMs : 0;
    if (delay > 0) await sleep(delay);
    return await work();
  } finally {
    inFlight -= 1;
    const end = Date.now();
    lastActivity = end;
    trips.push({ kind, what, start, end, ...(statements === undefined ? {} : { statements }) });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const wrappedEnvs = new WeakMap<object, object>();

/** The env with DB and every Durable Object namespace wrapped (the same object for the same env). */
export function instrumentEnv<E extends object>(env: E): E {
  const known = wrappedEnvs.get(env);
  if (known) return known as E;
  const wrapped: Record<string, unknown> = { ...(env as Record<string, unknown>) };
  for (const [name, value] of Object.entries(wrapped)) {
    if (name === "DB") wrapped[name] = wrapD1(value as D1Database, name);
    else if (isNamespace(value)) wrapped[name] = wrapNamespace(value, name);
  }
  wrappedEnvs.set(env, wrapped);
  return wrapped as E;
}

/** Counts the statements a Durable Object runs on its own SQLite. */
export function countObjectSql(ctx: DurableObjectState): void {
  const sql = ctx.storage.sql;
  const exec = sql.exec.bind(sql);
  Object.defineProperty(sql, "exec", {
    value: (...args: Parameters<SqlStorage["exec"]>) => {
      doSqlStatements += 1;
      return exec(...args);
    },
  });
}

/** Records model and embedding requests made with the global fetch (the OpenAI client's, late-bound). */
export function instrumentFetch(): void {
  const original = globalThis.fetch;
  globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    const kind = url.endsWith("/chat/completions")
      ? "model"
      : url.endsWith("/embeddings")
        ? "embed"
        : null;
    if (!kind) return original(input, init);
    return trip(kind, new URL(url).pathname, () => original(input, init));
  };
}

function isNamespace(value: unknown): value is DurableObjectNamespace {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { idFromName?: unknown }).idFromName === "function" &&
    typeof (value as { get?: unknown }).get === "function"
  );
}

function wrapNamespace(namespace: DurableObjectNamespace, binding: string): DurableObjectNamespace {
  return new Proxy(namespace, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "get" || prop === "getByName")
        return (...args: unknown[]) =>
          wrapStub((value as (...a: unknown[]) => DurableObjectStub).apply(target, args), binding);
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

function wrapStub(stub: DurableObjectStub, binding: string): DurableObjectStub {
  return new Proxy(stub, {
    get(target, prop) {
      // Not a thenable: an awaited stub must stay a stub.
      if (prop === "then") return undefined;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      // Reflect.apply: `.apply` on an RPC method would be read as a remote property.
      return (...args: unknown[]) =>
        trip("do", `${binding}.${prop}`, () =>
          Promise.resolve(Reflect.apply(value as (...a: unknown[]) => unknown, target, args)),
        );
    },
  });
}

const realStatements = new WeakMap<object, D1PreparedStatement>();

function wrapD1(db: D1Database, binding: string): D1Database {
  const wrapStatement = (statement: D1PreparedStatement, query: string): D1PreparedStatement => {
    const what = (method: string) => `${binding}.${method} ${query.slice(0, 120)}`;
    const wrapped = {
      bind: (...values: unknown[]) => wrapStatement(statement.bind(...values), query),
      first: (column?: string) =>
        trip("d1", what("first"), () => statement.first(column as string), 1),
      all: () => trip("d1", what("all"), () => statement.all(), 1),
      run: () => trip("d1", what("run"), () => statement.run(), 1),
      raw: (options?: { columnNames?: boolean }) =>
        trip("d1", what("raw"), () => statement.raw(options as { columnNames: true }), 1),
    } as unknown as D1PreparedStatement;
    queries.set(wrapped, query);
    realStatements.set(wrapped, statement);
    return wrapped;
  };
  const unwrap = (statement: D1PreparedStatement) => realStatements.get(statement) ?? statement;
  const queries = new WeakMap<object, string>();
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => wrapStatement(target.prepare(query), query);
      if (prop === "batch")
        return (statements: D1PreparedStatement[]) =>
          trip(
            "d1",
            `${binding}.batch [${statements.map((s) => (queries.get(s) ?? "?").slice(0, 60)).join(" | ")}]`,
            () => target.batch(statements.map(unwrap)),
            statements.length,
          );
      if (prop === "exec")
        return (query: string) => trip("d1", `${binding}.exec`, () => target.exec(query), 1);
      // A read-replica session (D1's Sessions API) sends its statements as the binding does.
      if (prop === "withSession")
        return (constraint?: string) =>
          wrapD1(target.withSession(constraint) as unknown as D1Database, binding);
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
