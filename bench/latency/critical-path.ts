// Reads one turn's trips (recorded in workerd by instrument.ts, with every D1 round trip and
// object call delayed) and counts the sequential ones: before the model request, between it and
// the reply, and after the reply. Sequential means causal, not just "earlier": walking back from
// the model request, each step takes the trip that finished last before the current point (a
// call still open there, like the room's own RPC, counts once it has arrived: its delay is
// injected before it is delivered), so a concurrent call is not counted twice.
import type { Trip } from "./instrument.ts";

export interface TurnTrips {
  /** Sequential D1 round trips and object hops from the request to the first model request. */
  beforeModel: { d1: number; do: number };
  /** Milliseconds from the request's arrival to the first model request (NaN without one). */
  beforeModelMs: number;
  /**
   * The query's embedding request before the first model request: how long the turn had it out
   * by then, and whether it was still out when the model was asked (the budget ran out); null
   * when the turn made none.
   */
  embedding: { outMs: number; late: boolean } | null;
  /** Sequential ones after the last model response, before the reply left. */
  beforeReply: { d1: number; do: number };
  /** Trips still running or started after the reply left: nothing waited for them. */
  afterReply: { d1: number; do: number; d1Sequential: number; statements: number };
  /** Model requests after the reply (evaluators' side calls). */
  modelCallsAfter: number;
  modelCalls: number;
  /** All D1 calls (a statement or a batch, each a round trip) and statements of the turn. */
  d1Calls: number;
  d1Statements: number;
}

export function analyzeTurn(trips: Trip[], doDelayMs: number): TurnTrips | null {
  const request = trips.findLast((t) => t.kind === "request");
  if (!request) return null;
  const mine = trips.filter((t) => t.start >= request.start);
  const models = mine.filter((t) => t.kind === "model");
  const calls = mine.filter((t) => t.kind === "d1" || t.kind === "do");
  const firstModel = models.find((t) => t.start <= request.end);
  const lastModel = models.filter((t) => t.end <= request.end).at(-1);
  const beforeModel = firstModel
    ? chainBack(calls, request.start, firstModel.start, doDelayMs)
    : { d1: 0, do: 0 };
  const embed = mine.find((t) => t.kind === "embed" && (!firstModel || t.start < firstModel.start));
  const beforeReply = lastModel
    ? count(
        calls.filter((t) => t.start >= lastModel.end && t.end <= request.end),
        (t) => t.kind,
      )
    : { d1: 0, do: 0 };
  const after = calls.filter((t) => t.end > request.end);
  const afterD1 = after.filter((t) => t.kind === "d1");
  return {
    beforeModel,
    beforeModelMs: firstModel ? firstModel.start - request.start : Number.NaN,
    embedding: embed
      ? {
          outMs: Math.min(embed.end, firstModel?.start ?? embed.end) - embed.start,
          late: firstModel !== undefined && embed.end > firstModel.start,
        }
      : null,
    beforeReply,
    afterReply: {
      d1: afterD1.length,
      do: after.filter((t) => t.kind === "do").length,
      d1Sequential: longestSequence(afterD1),
      statements: afterD1.reduce((sum, t) => sum + (t.statements ?? 0), 0),
    },
    modelCallsAfter: models.filter((t) => t.start >= request.end).length,
    modelCalls: models.length,
    d1Calls: calls.filter((t) => t.kind === "d1").length,
    d1Statements: calls.reduce((sum, t) => sum + (t.kind === "d1" ? (t.statements ?? 0) : 0), 0),
  };
}

/** The causal chain of calls ending at `to`, walked backwards to `from`. */
function chainBack(
  calls: Trip[],
  from: number,
  to: number,
  doDelayMs: number,
): { d1: number; do: number } {
  const counts = { d1: 0, do: 0 };
  const used = new Set<Trip>();
  let point = to;
  for (;;) {
    let best: { trip: Trip; at: number } | null = null;
    for (const trip of calls) {
      if (used.has(trip) || trip.start < from || trip.start >= point) continue;
      // A finished call counts from its end; an object call still open at `point` from its arrival.
      const at =
        trip.end <= point
          ? trip.end
          : trip.kind === "do" && trip.start + doDelayMs <= point
            ? trip.start + doDelayMs
            : null;
      if (at !== null && (!best || at > best.at)) best = { trip, at };
    }
    if (!best) return counts;
    used.add(best.trip);
    if (process.env.TRIPS_DEBUG) console.error("chain:", best.trip.what.slice(0, 160));
    counts[best.trip.kind === "d1" ? "d1" : "do"] += 1;
    point = best.trip.start;
  }
}

/** Most trips that ran one after another (none overlapping): the greedy earliest-end choice. */
function longestSequence(trips: Trip[]): number {
  let n = 0;
  let free = -Infinity;
  for (const trip of [...trips].sort((a, b) => a.end - b.end)) {
    if (trip.start >= free) {
      n += 1;
      free = trip.end;
    }
  }
  return n;
}

function count(trips: Trip[], kind: (t: Trip) => Trip["kind"]): { d1: number; do: number } {
  return {
    d1: trips.filter((t) => kind(t) === "d1").length,
    do: trips.filter((t) => kind(t) === "do").length,
  };
}
