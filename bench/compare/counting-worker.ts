// Starts the worker for `npm run bench:compare` with the benchmarks' harness, bundled from
// counting-entry.ts so D1 and object SQL statements can be counted, and hands back the workerd
// process's id so its CPU time and resident memory can be read from /proc.
import { type Call, startBenchWorker } from "../worker-harness.ts";

export interface SqlCounts {
  d1Statements: number;
  d1RoundTrips: number;
  objectSqlStatements: number;
}

export interface CountingWorker {
  call: Call;
  /** The SQL counted since the last take. */
  takeCounts(): Promise<SqlCounts>;
  /** The workerd process (Miniflare's child) that runs the worker, D1 and the objects. */
  pid: number;
  stop(): Promise<void>;
}

export async function startCountingWorker(
  bindings: Record<string, string>,
): Promise<CountingWorker> {
  const worker = await startBenchWorker(bindings, { entry: "bench/compare/counting-entry.ts" });
  const { pid } = worker;
  if (pid === null) {
    await worker.stop();
    throw new Error("could not find the workerd process Miniflare started (needs /proc)");
  }
  return {
    call: worker.call,
    takeCounts: async () =>
      (await (await fetch(`${worker.base}/__compare/counts`)).json()) as SqlCounts,
    pid,
    stop: () => worker.stop(),
  };
}
