// Counts the SQL statements ElizaOS's database adapter sends to its PGlite client (plugin-sql's
// one client per process): each query or exec call, inside a transaction or not, counts once;
// a transaction's own BEGIN/COMMIT do not (a D1 batch's implicit transaction is not counted
// either). Patched on the instance after the runtime initialized, so migrations are not counted.

interface Queryable {
  query(...args: unknown[]): Promise<unknown>;
  exec(...args: unknown[]): Promise<unknown>;
}

interface PgliteClient extends Queryable {
  transaction(callback: (tx: Queryable) => Promise<unknown>): Promise<unknown>;
}

let statements = 0;

export function statementCount(): number {
  return statements;
}

export function countStatements(): void {
  const singletons = (globalThis as Record<symbol, unknown>)[
    Symbol.for("@elizaos/plugin-sql/global-singletons")
  ] as { pgLiteClientManager?: { getConnection(): PgliteClient } } | undefined;
  const client = singletons?.pgLiteClientManager?.getConnection();
  if (!client) throw new Error("plugin-sql has no PGlite client: is the runtime initialized?");
  countOn(client);
  const transaction = client.transaction.bind(client);
  client.transaction = (callback) =>
    transaction((tx) => {
      countOn(tx);
      return callback(tx);
    });
}

/** PGlite runs both through private methods, so a call is one statement, never two. */
function countOn(target: Queryable): void {
  for (const method of ["query", "exec"] as const) {
    const original = target[method].bind(target);
    target[method] = (...args: unknown[]) => {
      statements += 1;
      return original(...args);
    };
  }
}
