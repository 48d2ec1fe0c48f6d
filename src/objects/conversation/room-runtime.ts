// The room's runtime (shared/agent-wiring.ts) and the D1 bindings it runs on. D1 calls a room
// starts together (a turn's reads before the model, its writes after the reply) share one round
// trip (src/db/shared-trips.ts), each watched by the room's tracer once its runtime has one
// (src/telemetry/).
import type { Env } from "../../env.ts";
import { databaseBinding, memoryDatabases } from "../../db/shards.ts";
import { type D1Trip, sharedTrips } from "../../db/shared-trips.ts";
import { createRoomRuntime, type RoomRuntimeOptions } from "../shared/agent-wiring.ts";
import { RuntimeCell } from "../shared/runtime-cell.ts";

/** Who watches the room's D1 trips: its runtime's tracer, once there is one. */
export interface TripWatch {
  watch: ((trip: D1Trip) => void) | null;
}

/**
 * The room's own bindings: the rooms of an isolate must not send each other's calls, and what is
 * built per env (stores.ts) is cheap where it is per room (the agents' vector caches and
 * characters are per isolate).
 */
export function roomBindings(env: Env): { env: Env; trips: TripWatch } {
  const trips: TripWatch = { watch: null };
  const watch = (trip: D1Trip) => trips.watch?.(trip);
  const own: Env = { ...env, DB: sharedTrips(env.DB, watch) };
  for (const name of memoryDatabases(env))
    own[name] = sharedTrips(databaseBinding(env, name), watch);
  return { env: own, trips };
}

export interface RoomRuntimeSource extends RoomRuntimeOptions {
  /** The room's own bindings (roomBindings). */
  env: Env;
  trips: TripWatch;
  agentId(): string;
}

/** The room's runtime, built on first use over its bindings; its tracer then watches the trips. */
export function roomRuntimeCell({
  env,
  trips,
  agentId,
  ...options
}: RoomRuntimeSource): RuntimeCell {
  return new RuntimeCell(env, agentId, async () => {
    const runtime = await createRoomRuntime(env, agentId(), options);
    trips.watch = runtime.tracer?.d1Trip ?? null;
    return runtime;
  });
}
