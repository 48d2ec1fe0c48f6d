// /health's view of the Gateway: every listed shard (the plan's, and during a handover the
// serving set marked `retiring`) summed up into one state: any stopped shard makes it stopped,
// else the least advanced one; `connected` only when all are; the counters added.
import type { ShardStatus } from "../../../rpc.ts";

export type ListedShard = ShardStatus & { shard: [number, number]; retiring: boolean };

export function idleShard(state: ShardStatus["state"]): ShardStatus {
  return {
    state,
    connected: false,
    resuming: false,
    reconnects: 0,
    identifies: 0,
    resumes: 0,
    lastEvent: null,
    lastEventAt: null,
    lastClose: null,
    eventsHandled: 0,
    inFlight: 0,
    stoppedReason: null,
  };
}

/** Which state sums up several shards: any stopped one, else the least advanced. */
const STATE_ORDER: ShardStatus["state"][] = [
  "stopped",
  "disconnected",
  "connecting",
  "identifying",
  "resuming",
  "ready",
];

export function summarize(shards: ListedShard[], enabled: boolean) {
  if (!enabled) return idleShard("off");
  if (shards.length === 0) return idleShard("disconnected");
  const state = STATE_ORDER.find((s) => shards.some((shard) => shard.state === s)) ?? "ready";
  const latest = <T>(pick: (s: ShardStatus) => T | null, at: (value: T) => number) =>
    shards
      .map(pick)
      .filter((value): value is T => value !== null)
      .sort((a, b) => at(b) - at(a))[0] ?? null;
  const stopped = shards.find((shard) => shard.stoppedReason !== null);
  const newestEvent = latest(
    (s) => (s.lastEventAt === null ? null : { event: s.lastEvent, at: s.lastEventAt }),
    (value) => value.at,
  );
  const sum = (pick: (s: ShardStatus) => number) => shards.reduce((n, s) => n + pick(s), 0);
  return {
    state,
    connected: shards.every((shard) => shard.connected),
    resuming: shards.some((shard) => shard.resuming),
    reconnects: sum((s) => s.reconnects),
    identifies: sum((s) => s.identifies),
    resumes: sum((s) => s.resumes),
    lastEvent: newestEvent?.event ?? null,
    lastEventAt: newestEvent?.at ?? null,
    lastClose: latest(
      (s) => s.lastClose,
      (value) => value.at,
    ),
    eventsHandled: sum((s) => s.eventsHandled),
    inFlight: sum((s) => s.inFlight),
    stoppedReason: stopped
      ? `shard ${stopped.shard[0]}/${stopped.shard[1]}: ${stopped.stoppedReason}`
      : null,
  } satisfies ShardStatus;
}
