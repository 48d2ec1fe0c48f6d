// A D1 binding that counts sequential round trips: each call (a statement's all/raw/first/run, or
// a batch) is one trip, one step deeper than the deepest call that had finished when it started.
// So calls made together count once, and a call that needed another's answer counts again, as
// they would cost a remote database's round trips in production.

export interface TripCounter {
  db: D1Database;
  /** Sequential round trips since the last reset (0: none). */
  depth(): number;
  /** Calls since the last reset, however they overlapped. */
  calls(): number;
  reset(): void;
}

export function countTrips(binding: D1Database): TripCounter {
  let finished: number[] = [];
  let calls = 0;
  let depth = 0;
  const real = new WeakMap<object, D1PreparedStatement>();

  const track = async <T>(work: () => Promise<T>): Promise<T> => {
    calls += 1;
    const level = 1 + Math.max(0, ...finished);
    depth = Math.max(depth, level);
    try {
      return await work();
    } finally {
      finished.push(level);
    }
  };

  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = new Proxy(statement, {
      get(target, key) {
        if (key === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (key === "all" || key === "raw" || key === "first" || key === "run") {
          const method = Reflect.get(target, key) as (...args: unknown[]) => Promise<unknown>;
          return (...args: unknown[]) => track(() => method.apply(target, args));
        }
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(wrapped, statement);
    return wrapped;
  };

  const db = new Proxy(binding, {
    get(target, key) {
      if (key === "prepare") return (query: string) => wrap(target.prepare(query));
      if (key === "batch")
        return (statements: D1PreparedStatement[]) =>
          track(() => target.batch(statements.map((s) => real.get(s) ?? s)));
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });

  return {
    db,
    depth: () => depth,
    calls: () => calls,
    reset() {
      finished = [];
      calls = 0;
      depth = 0;
    },
  };
}
