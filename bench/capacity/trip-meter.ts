// D1 statements and round trips of a unit of work, for bench:capacity: the worker runs the
// recording entry (bench/latency/entry.ts, no delays), which logs every D1 call (a statement or a
// batch: one round trip each) and every Durable Object call; this sums what a phase recorded. The
// statements that touch `memory_vectors` are counted apart: with Vectorize bound they are not D1's.
import type { Trip } from "../latency/instrument.ts";
import type { Call } from "../worker-harness.ts";

/** The table only the local vector index writes and reads (src/db/memory/local-vector-index.ts). */
export const LOCAL_VECTOR_TABLE = "memory_vectors";

export interface TripTotals {
  d1Trips: number;
  d1Statements: number;
  /** Statements naming memory_vectors, and round trips made of nothing else. */
  vectorStatements: number;
  vectorOnlyTrips: number;
  objectCalls: number;
  objectSqlStatements: number;
  modelCalls: number;
}

export interface TripMeter {
  /** Waits until the worker has been idle for `quietMs`, adding what it did to the running totals. */
  collect(quietMs?: number): Promise<void>;
  /** Waits for idle, drops what was recorded and starts the totals afresh. */
  reset(): Promise<void>;
  /** Waits for idle and hands over the running totals (then starts afresh). */
  take(): Promise<TripTotals>;
}

const DEFAULT_QUIET_MS = 400;

export function createTripMeter(call: Call): TripMeter {
  let totals = empty();
  const collect = async (quietMs = DEFAULT_QUIET_MS) => {
    const response = await call("GET", `/__bench/trips?quietMs=${quietMs}`);
    if (response.status !== 200) throw new Error(`reading the trips failed: ${response.status}`);
    const taken = (await response.json()) as { trips: Trip[]; doSqlStatements: number };
    add(totals, taken.trips, taken.doSqlStatements);
  };
  return {
    collect,
    async reset() {
      await collect();
      totals = empty();
    },
    async take() {
      await collect();
      const taken = totals;
      totals = empty();
      return taken;
    },
  };
}

function empty(): TripTotals {
  return {
    d1Trips: 0,
    d1Statements: 0,
    vectorStatements: 0,
    vectorOnlyTrips: 0,
    objectCalls: 0,
    objectSqlStatements: 0,
    modelCalls: 0,
  };
}

function add(totals: TripTotals, trips: Trip[], objectSql: number): void {
  totals.objectSqlStatements += objectSql;
  for (const trip of trips) {
    if (trip.kind === "do") totals.objectCalls += 1;
    if (trip.kind === "model") totals.modelCalls += 1;
    if (trip.kind !== "d1") continue;
    totals.d1Trips += 1;
    totals.d1Statements += trip.statements ?? 1;
    const queries = queriesOf(trip.what);
    const vector = queries.filter((query) => query.includes(LOCAL_VECTOR_TABLE)).length;
    totals.vectorStatements += vector;
    if (vector > 0 && vector === queries.length) totals.vectorOnlyTrips += 1;
  }
}

/**
 * The statements' text as instrument.ts records it: `DB.batch [q1 | q2]` (60 characters of each)
 * or `DB.run q` (120): enough to see the table a drizzle query names first.
 */
function queriesOf(what: string): string[] {
  const batch = /^\S+\.batch \[(.*)\]$/s.exec(what);
  if (batch) return batch[1]!.split(" | ");
  return [what.slice(what.indexOf(" ") + 1)];
}
