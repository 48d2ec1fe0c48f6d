// The shard plan, held by the DiscordGateway object named by the application id: how many shards
// run (DISCORD_GATEWAY_SHARDS, or GET /gateway/bot's `shards` under `auto`), starting each
// `shard:<i>/<n>` object, retiring the objects of an earlier count (they close their socket and
// forget their session, so no old shard keeps a connection), pacing IDENTIFYs across shards by
// Discord's buckets (`shard_id % max_concurrency`, one per bucket per 5 s), and /health's summary.
import { z } from "zod";
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import type { DiscordGatewayRpc, GatewayStatus, ShardStatus } from "../../../rpc.ts";
import { fetchGatewayBot } from "./gateway-bot.ts";
import { identifyDelayMs } from "./identify-gate.ts";
import { identifyBucket, shardCount, shardName, shardsOf } from "./shard-plan.ts";

/**
 * An IDENTIFY leaves once the socket is open and HELLO has come, some time after its slot was
 * taken: slots of one bucket are spaced by Discord's 5 s plus this, so two never land closer.
 */
export const IDENTIFY_SLOT_MARGIN_MS = 1_000;

const Plan = z.object({ count: z.number().int().min(1) });
/** Earlier shard counts whose objects have not all confirmed they stopped. */
const Retiring = z.array(z.number().int().min(1));

export interface CoordinatorOptions {
  env: Env;
  kv: SyncKvStorage;
  shard: (name: string) => DurableObjectStub<DiscordGatewayRpc>;
}

export class GatewayCoordinator {
  private readonly options: CoordinatorOptions;

  constructor(options: CoordinatorOptions) {
    this.options = options;
  }

  /** Decides the shard count, starts every shard of it and retires those of earlier counts. */
  async start(): Promise<void> {
    const count = await this.decideCount();
    const { kv } = this.options;
    const previous = this.plan()?.count;
    if (previous !== undefined && previous !== count) {
      log.info("gateway_resharding", { from: previous, to: count });
      kv.put("retiring", [...new Set([...this.retiring(), previous])]);
    }
    kv.put("plan", { count });
    // A count coming back is current again: its objects must not be stopped.
    kv.put(
      "retiring",
      this.retiring().filter((old) => old !== count),
    );
    await Promise.all(
      shardsOf(count).map(({ index }) =>
        this.options
          .shard(shardName(index, count))
          .startShard(index, count)
          .catch((error: unknown) =>
            log.warn("gateway_shard_start_failed", { shard: index, error: errorField(error) }),
          ),
      ),
    );
    await this.retireOld();
  }

  /** Whether shards of `count` belong to the plan (no plan yet: yes, nothing says otherwise). */
  isCurrent(count: number): boolean {
    const plan = this.plan();
    return plan === null || plan.count === count;
  }

  /**
   * The IDENTIFY slot of a shard: 0 (and the slot is taken) when its bucket's last IDENTIFY is 5 s
   * old, else how long to wait. The object is single-threaded, so two shards of one bucket never
   * both get 0 in the same window.
   */
  identifySlot(
    shard: number,
    limit: { remaining: number; reset_after: number; max_concurrency: number } | null,
    now: number,
  ): number {
    const bucket = identifyBucket(shard, limit?.max_concurrency);
    const key = `identifyAt:${bucket}`;
    const last = z
      .number()
      .nullable()
      .catch(null)
      .parse(this.options.kv.get(key) ?? null);
    const wait = identifyDelayMs(
      now,
      last === null ? null : last + IDENTIFY_SLOT_MARGIN_MS,
      limit ? { total: 0, ...limit } : undefined,
    );
    if (wait === 0) this.options.kv.put(key, now);
    return wait;
  }

  /** Every shard of the plan, asked in parallel; one that does not answer shows as disconnected. */
  async status(enabled: boolean): Promise<GatewayStatus> {
    const count = this.plan()?.count ?? 0;
    const shards = await Promise.all(
      shardsOf(count).map(async ({ index }) => {
        const status = await this.options
          .shard(shardName(index, count))
          .shardStatus()
          .catch(() => idleShard("disconnected"));
        return { shard: [index, count] as [number, number], ...status };
      }),
    );
    return { ...summarize(shards, enabled), shardCount: count, shards };
  }

  private async decideCount(): Promise<number> {
    const setting = loadConfig(this.options.env).discordGatewayShards;
    if (setting !== "auto") return setting;
    try {
      const info = await fetchGatewayBot(this.options.env);
      return shardCount("auto", info.shards);
    } catch (error) {
      // Discord did not answer: keep the running count; with none, the start fails and is retried.
      const plan = this.plan();
      log.warn("gateway_shards_unknown", {
        error: errorField(error),
        keeping: plan?.count ?? null,
      });
      if (!plan) throw error;
      return plan.count;
    }
  }

  private async retireOld(): Promise<void> {
    const left: number[] = [];
    for (const old of this.retiring()) {
      const results = await Promise.allSettled(
        shardsOf(old).map(({ index }) => this.options.shard(shardName(index, old)).retire()),
      );
      // Kept until every object confirmed; their own watchdogs also ask isCurrent() each minute.
      if (results.some((result) => result.status === "rejected")) left.push(old);
    }
    this.options.kv.put("retiring", left);
  }

  private plan(): z.infer<typeof Plan> | null {
    return Plan.nullable()
      .catch(null)
      .parse(this.options.kv.get("plan") ?? null);
  }

  private retiring(): number[] {
    return Retiring.catch([]).parse(this.options.kv.get("retiring") ?? []);
  }
}

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

function summarize(shards: Array<ShardStatus & { shard: [number, number] }>, enabled: boolean) {
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
