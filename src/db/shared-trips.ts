// D1 calls a room object starts together share one round trip. A turn starts several at once
// before the model (the inbound message's write, the agent's version check, the vector cache's
// catch-up, the providers' reads) and several after the reply (the reply's write, the spend, the
// interaction count); each call to D1 costs a round trip in production and a fixed share of CPU
// in every setting, so the binding given to the room collects the statements handed to it until
// the current task and its microtasks are done and sends them as one `batch()`, then gives each
// caller its own result. A call made alone is sent as it was made.
//
// A D1 batch is one transaction: should the shared one fail, nothing of it was applied, and each
// caller's statements are sent again on their own, so one failing statement fails only its own
// caller (with its own error), and a caller's own batch stays atomic. `raw()` (drizzle's mapped
// selects), `exec`, `dump` and sessions go straight to the binding.
//
// Only for a Durable Object: its requests share one I/O context, where a stateless worker's
// requests may not finish each other's I/O.

interface Waiting {
  statements: D1PreparedStatement[];
  /** The call as it was made, for a call sent alone. */
  alone: () => Promise<D1Result[]>;
  resolve: (results: D1Result[]) => void;
  reject: (error: unknown) => void;
}

/** One round trip to D1, for whoever watches them (a tracer: src/telemetry/turn-spans.ts). */
export interface D1Trip {
  statements: number;
  /** Milliseconds since the epoch. */
  start: number;
  end: number;
  ok: boolean;
}

/** The binding, with calls started in the same task sent as one batch (see the top of this file). */
export function sharedTrips(binding: D1Database, watch?: (trip: D1Trip) => void): D1Database {
  let waiting: Waiting[] = [];
  const real = new WeakMap<object, D1PreparedStatement>();

  const flush = async () => {
    const taken = waiting;
    waiting = [];
    const start = Date.now();
    const statements = taken.reduce((count, entry) => count + entry.statements.length, 0);
    const done = (ok: boolean) => watch?.({ statements, start, end: Date.now(), ok });
    if (taken.length === 1) {
      const [only] = taken;
      await only!.alone().then(
        (results) => {
          done(true);
          only!.resolve(results);
        },
        (error: unknown) => {
          done(false);
          only!.reject(error);
        },
      );
      return;
    }
    let results: D1Result[];
    try {
      results = await binding.batch(taken.flatMap((entry) => entry.statements));
      done(true);
    } catch {
      done(false);
      await Promise.all(taken.map((entry) => entry.alone().then(entry.resolve, entry.reject)));
      return;
    }
    let at = 0;
    for (const entry of taken) {
      entry.resolve(results.slice(at, at + entry.statements.length));
      at += entry.statements.length;
    }
  };

  const send = (statements: D1PreparedStatement[], alone: () => Promise<D1Result[]>) =>
    new Promise<D1Result[]>((resolve, reject) => {
      waiting.push({ statements, alone, resolve, reject });
      // A timer of 0 runs once this task's microtasks are done: the calls started together are in.
      if (waiting.length === 1) setTimeout(() => void flush(), 0);
    });

  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const one = (method: "all" | "run") =>
      send([statement], () => statement[method]().then((result) => [result])).then(
        ([result]) => result!,
      );
    const wrapped = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      async first(column?: string) {
        const row = (await one("all")).results[0] as Record<string, unknown> | undefined;
        if (row === undefined) return null;
        if (column === undefined) return row;
        if (!(column in row)) throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${column})`);
        return row[column];
      },
      all: () => one("all"),
      run: () => one("run"),
      raw: (options?: { columnNames?: boolean }) => statement.raw(options as { columnNames: true }),
    } as unknown as D1PreparedStatement;
    real.set(wrapped, statement);
    return wrapped;
  };

  const unwrap = (statement: D1PreparedStatement) => real.get(statement) ?? statement;

  return new Proxy(binding, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => wrap(target.prepare(query));
      if (prop === "batch")
        return (statements: D1PreparedStatement[]) => {
          const own = statements.map(unwrap);
          return own.length === 0 ? target.batch(own) : send(own, () => target.batch(own));
        };
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
