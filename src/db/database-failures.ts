// A memory database's binding whose failures carry its name: whatever D1 throws (the database is
// down, full, or refuses a statement) reaches the caller as a 503 `database_unavailable` that
// names the database and nothing of its text (which may quote stored data), and the detail goes
// to the log. The agents of the other databases never see it: this is how one failing database
// stays its own agents' problem (docs/scaling.md).
import { errorField, log } from "../log.ts";
import { DatabaseUnavailableError } from "../runtime/util/errors.ts";

export function failuresNamed(name: string, binding: D1Database): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();

  const fail = (error: unknown): never => {
    log.error("memory_database_failed", { database: name, error: errorField(error) });
    throw new DatabaseUnavailableError(
      `the memory database ${name} failed; the agents it holds cannot read or write memories until it recovers (see /health)`,
    );
  };
  const guarded = <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return work().catch(fail);
    } catch (error) {
      return Promise.reject(error).catch(fail);
    }
  };

  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      first: (column?: string) =>
        guarded(() => (column === undefined ? statement.first() : statement.first(column))),
      run: () => guarded(() => statement.run()),
      all: () => guarded(() => statement.all()),
      raw: (options?: { columnNames?: boolean }) =>
        guarded(() => statement.raw(options as { columnNames: true })),
    } as unknown as D1PreparedStatement;
    real.set(wrapped, statement);
    return wrapped;
  };

  return {
    prepare: (query: string) => {
      try {
        return wrap(binding.prepare(query));
      } catch (error) {
        return fail(error);
      }
    },
    batch: <T>(statements: D1PreparedStatement[]) =>
      guarded(() => binding.batch<T>(statements.map((each) => real.get(each) ?? each))),
    exec: (query: string) => guarded(() => binding.exec(query)),
    dump: () => binding.dump(),
    withSession: (constraint?: string) => binding.withSession(constraint),
  } as unknown as D1Database;
}
