// One object's runtime (agent-wiring.ts), built on first use and shared by what the object does
// after; a build that fails is forgotten, so the next use tries again, and a runtime whose agent's
// memories moved to another database (src/db/moves/) is built again there. The room and the
// agent's task object each keep one.
import type { Env } from "../../env.ts";
import { CATALOG_DB, memoryDatabases } from "../../db/shards.ts";
import { stores } from "../../db/stores/index.ts";
import type { RoomRuntime } from "./agent-wiring.ts";

/** How long a turn waits for a move's fence to lift before it goes ahead (and is refused). */
export const MOVE_FENCE_WAIT_MS = 30_000;
const FENCE_POLL_MS = 250;

export class RuntimeCell {
  private runtime: Promise<RoomRuntime> | null = null;
  private readonly env: Env;
  private readonly agentId: () => string;
  private readonly build: () => Promise<RoomRuntime>;

  /** `agentId` is read when the runtime is needed: an object learns its name after it starts. */
  constructor(env: Env, agentId: () => string, build: () => Promise<RoomRuntime>) {
    this.env = env;
    this.agentId = agentId;
    this.build = build;
  }

  /** The runtime, built again when its agent's memories moved to another database. */
  async get(): Promise<RoomRuntime> {
    const runtime = await this.built();
    if (!(await movedAway(this.env, this.agentId(), runtime))) return runtime;
    this.runtime = null;
    return this.built();
  }

  private built(): Promise<RoomRuntime> {
    this.runtime ??= this.build().catch((error: unknown) => {
      this.runtime = null;
      throw error;
    });
    return this.runtime;
  }
}

/**
 * Whether the agent's memories now live in another database than the runtime's (a move switched;
 * src/db/moves/). Read fresh, not from the isolate's placement cache: a room must not write to a
 * database the agent left. While a move's fence holds the agent's writes, the turn waits for the
 * switch (up to MOVE_FENCE_WAIT_MS) rather than be refused. Only a deployment with memory
 * databases pays the read.
 */
async function movedAway(env: Env, agentId: string, runtime: RoomRuntime): Promise<boolean> {
  if (memoryDatabases(env).length === 0 && runtime.memoryDatabase === CATALOG_DB) return false;
  const placement = stores(env).placement;
  const until = Date.now() + MOVE_FENCE_WAIT_MS;
  let now = await placement.current(agentId);
  while (now.fenced && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, FENCE_POLL_MS));
    now = await placement.current(agentId);
  }
  return now.home !== runtime.memoryDatabase;
}
