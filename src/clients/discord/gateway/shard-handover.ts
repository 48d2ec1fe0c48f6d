// Re-sharding without a gap, decided without I/O: when the shard count changes, the new set of
// shards IDENTIFYs while the old set stays connected, and the old set is retired once every new
// shard reached READY, or at a deadline so a stuck new set cannot keep both for ever. A change is
// put off when the day's session starts left are fewer than the new set needs. Pure: tested in
// Node (test/node/gateway-shards.spec.ts); gateway-coordinator.ts carries it out.
import { z } from "zod";
import { IDENTIFY_SLOT_MARGIN_MS, IDENTIFY_WINDOW_MS } from "./identify-gate.ts";

/** How long the old set waits for the new one beyond the new set's IDENTIFY pacing. */
export const HANDOVER_WAIT_MS = 120_000;

/** The old set `from` serves until every shard of `to` reported READY, or until `deadline`. */
export const Handover = z.object({
  from: z.number().int().min(1),
  to: z.number().int().min(1),
  /** The shard indexes of `to` that reached READY. */
  ready: z.array(z.number().int().min(0)),
  /** Milliseconds since the epoch. */
  deadline: z.number(),
});
export type Handover = z.infer<typeof Handover>;

/** What the coordinator holds: the wanted count (null before the first start) and any handover. */
export interface ShardPlanState {
  count: number | null;
  handover: Handover | null;
}

/** GET /gateway/bot's `session_start_limit`, as far as a re-shard needs it. */
export interface SessionStartLimit {
  remaining: number;
  max_concurrency: number;
}

export type ReshardDecision =
  /** Run `count`: the first start, or no change (a handover under way goes on). */
  | { kind: "run"; count: number }
  /** Start the set of `handover.to` next to the serving one; retire `abandon` (a half-started set). */
  | { kind: "hand_over"; handover: Handover; abandon: number | null }
  /** Back to the set still serving during a handover: retire the half-started one. */
  | { kind: "revert"; count: number; abandon: number }
  /** Too few session starts left (or unknown): keep `count`, try again at the next start. */
  | { kind: "defer"; count: number; wanted: number; remaining: number | null };

/** What a start does when Discord (or the setting) asks for `wanted` shards. */
export function planReshard(
  state: ShardPlanState,
  wanted: number,
  limit: SessionStartLimit | null,
  now: number,
): ReshardDecision {
  const { count, handover } = state;
  if (count === null || wanted === count) return { kind: "run", count: count ?? wanted };
  if (handover && wanted === handover.from)
    return { kind: "revert", count: wanted, abandon: handover.to };
  // Each new shard IDENTIFYs once: starting a set the budget cannot cover would leave shards
  // waiting for the daily reset while the old set, which still works, is retired.
  if (!limit || limit.remaining < wanted)
    return { kind: "defer", count, wanted, remaining: limit?.remaining ?? null };
  return {
    kind: "hand_over",
    handover: {
      from: handover?.from ?? count,
      to: wanted,
      ready: [],
      deadline: now + handoverWaitMs(wanted, limit.max_concurrency),
    },
    abandon: handover ? handover.to : null,
  };
}

/**
 * How long a handover to `count` shards may take: the IDENTIFY rounds Discord's buckets allow
 * (`max_concurrency` per 5 s, spaced as the coordinator hands out slots) plus HANDOVER_WAIT_MS.
 */
export function handoverWaitMs(count: number, maxConcurrency: number): number {
  const rounds = Math.ceil(count / Math.max(1, maxConcurrency));
  return HANDOVER_WAIT_MS + rounds * (IDENTIFY_WINDOW_MS + IDENTIFY_SLOT_MARGIN_MS);
}

/** The handover once shard `index` of `count` reached READY (unchanged if it is not a new one). */
export function noteReady(handover: Handover, index: number, count: number): Handover {
  if (count !== handover.to || index >= count || handover.ready.includes(index)) return handover;
  return { ...handover, ready: [...handover.ready, index].sort((a, b) => a - b) };
}

/** Every shard of the new set is READY: the old set may go. */
export function handoverComplete(handover: Handover): boolean {
  return handover.ready.length >= handover.to;
}

/** The new shards not READY yet (for the log line when the deadline retires the old set anyway). */
export function notReady(handover: Handover): number[] {
  return Array.from({ length: handover.to }, (_, i) => i).filter(
    (i) => !handover.ready.includes(i),
  );
}
