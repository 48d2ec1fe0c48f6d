// The shard plan, held by the DiscordGateway object named by the application id: how many shards
// run (DISCORD_GATEWAY_SHARDS, or GET /gateway/bot's `shards` under `auto`), starting each
// `shard:<i>/<n>` object, handing over from an earlier count without a gap (shard-handover.ts:
// the old set serves until every new shard reported READY, then closes its sockets and forgets
// its sessions), pacing IDENTIFYs across shards by Discord's buckets, and /health's summary.
import { z } from "zod";
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import type { DiscordGatewayRpc, GatewayStatus } from "../../../rpc.ts";
import { fetchGatewayBot } from "./gateway-bot.ts";
import { IDENTIFY_SLOT_MARGIN_MS, identifyDelayMs } from "./identify-gate.ts";
import {
  Handover,
  handoverComplete,
  noteReady,
  notReady,
  planReshard,
  type SessionStartLimit,
} from "./shard-handover.ts";
import { identifyBucket, shardCount, shardName, shardsOf } from "./shard-plan.ts";
import { idleShard, type ListedShard, summarize } from "./shard-summary.ts";

const Plan = z.object({ count: z.number().int().min(1) });
/** Earlier shard counts whose objects have not all confirmed they stopped. */
const Retiring = z.array(z.number().int().min(1));

export interface CoordinatorOptions {
  env: Env;
  kv: SyncKvStorage;
  shard: (name: string) => DurableObjectStub<DiscordGatewayRpc>;
  /** Wakes the coordinator (its alarm) at `at`: a handover past its deadline ends then. */
  wakeAt: (at: number) => Promise<void>;
  now?: () => number;
}

export class GatewayCoordinator {
  private readonly options: CoordinatorOptions;

  constructor(options: CoordinatorOptions) {
    this.options = options;
  }

  /**
   * Decides the shard count and starts every shard of it. A new count starts its set next to the
   * serving one, which is retired once the new set is READY (shardReady) or at the deadline (wake).
   */
  async start(): Promise<void> {
    const wanted = await this.decideCount();
    const state = { count: this.plan()?.count ?? null, handover: this.handover() };
    const changing =
      state.count !== null && wanted.count !== state.count && wanted.count !== state.handover?.from;
    const limit =
      changing && wanted.limit === undefined ? await this.sessionStartLimit() : wanted.limit;
    const decision = planReshard(state, wanted.count, limit ?? null, this.now());
    switch (decision.kind) {
      case "run":
        this.setPlan(decision.count);
        break;
      case "defer":
        log.warn("gateway_resharding_deferred", {
          running: decision.count,
          wanted: decision.wanted,
          sessionStartsLeft: decision.remaining,
        });
        break;
      case "revert":
        log.info("gateway_resharding_reverted", { to: decision.count, from: decision.abandon });
        this.options.kv.delete("handover");
        this.addRetiring(decision.abandon);
        this.setPlan(decision.count);
        break;
      case "hand_over": {
        const { handover, abandon } = decision;
        log.info("gateway_resharding", {
          from: handover.from,
          to: handover.to,
          deadline: handover.deadline,
        });
        if (abandon !== null) this.addRetiring(abandon);
        this.options.kv.put("handover", handover);
        this.setPlan(handover.to);
        await this.options.wakeAt(handover.deadline);
        break;
      }
    }
    const count = this.plan()!.count;
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

  /** A shard is READY with its servers (or RESUMED): the last of a new set ends the handover. */
  async shardReady(index: number, count: number): Promise<void> {
    const handover = this.handover();
    if (!handover) return;
    const next = noteReady(handover, index, count);
    if (next === handover) return;
    if (!handoverComplete(next)) {
      this.options.kv.put("handover", next);
      return;
    }
    log.info("gateway_handover_done", { from: next.from, to: next.to });
    this.endHandover(next);
    await this.retireOld();
  }

  /**
   * The coordinator's alarm: a handover whose READY reports were lost ends when the new shards
   * say they are ready; one past its deadline ends anyway (the old set goes, the log says which
   * new shards were not ready), so a stuck new set cannot keep both sets for ever.
   */
  async wake(): Promise<void> {
    const asked = this.handover();
    if (asked) {
      const ready = await Promise.all(
        notReady(asked).map((index) =>
          this.options
            .shard(shardName(index, asked.to))
            .shardStatus()
            .then(
              (status) => (status.state === "ready" ? index : null),
              () => null,
            ),
        ),
      );
      let handover = this.handover();
      if (handover && handover.to === asked.to && handover.from === asked.from) {
        for (const index of ready)
          if (index !== null) handover = noteReady(handover, index, handover.to);
        if (handoverComplete(handover)) {
          log.info("gateway_handover_done", { from: handover.from, to: handover.to });
          this.endHandover(handover);
        } else if (this.now() >= handover.deadline) {
          log.warn("gateway_handover_timed_out", {
            from: handover.from,
            to: handover.to,
            notReady: notReady(handover),
          });
          this.endHandover(handover);
        } else {
          this.options.kv.put("handover", handover);
          await this.options.wakeAt(handover.deadline);
        }
      }
    }
    await this.retireOld();
  }

  /** Whether shards of `count` are wanted: the plan's, or the set serving during a handover. */
  isCurrent(count: number): boolean {
    const plan = this.plan();
    return plan === null || plan.count === count || this.handover()?.from === count;
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

  /**
   * Every shard of the plan, and during a handover the serving set (`retiring`), asked in
   * parallel; one that does not answer shows as disconnected.
   */
  async status(enabled: boolean): Promise<GatewayStatus> {
    const count = this.plan()?.count ?? 0;
    const handover = this.handover();
    const listed = [
      ...shardsOf(count).map((shard) => ({ ...shard, retiring: false })),
      ...(handover ? shardsOf(handover.from).map((shard) => ({ ...shard, retiring: true })) : []),
    ];
    const shards: ListedShard[] = await Promise.all(
      listed.map(async ({ index, count: of, retiring }) => {
        const status = await this.options
          .shard(shardName(index, of))
          .shardStatus()
          .catch(() => idleShard("disconnected"));
        return { shard: [index, of] as [number, number], ...status, retiring };
      }),
    );
    return {
      ...summarize(shards, enabled),
      shardCount: count,
      resharding: handover
        ? {
            from: handover.from,
            to: handover.to,
            ready: handover.ready.length,
            deadline: handover.deadline,
          }
        : null,
      shards,
    };
  }

  /** The count to run, and the session-start budget when GET /gateway/bot was asked for it. */
  private async decideCount(): Promise<{
    count: number;
    limit: SessionStartLimit | null | undefined;
  }> {
    const setting = loadConfig(this.options.env).discordGatewayShards;
    if (setting !== "auto") return { count: setting, limit: undefined };
    try {
      const info = await fetchGatewayBot(this.options.env);
      return { count: shardCount("auto", info.shards), limit: info.session_start_limit ?? null };
    } catch (error) {
      // Discord did not answer: keep the running count; with none, the start fails and is retried.
      const plan = this.plan();
      log.warn("gateway_shards_unknown", {
        error: errorField(error),
        keeping: plan?.count ?? null,
      });
      if (!plan) throw error;
      return { count: plan.count, limit: null };
    }
  }

  /** The session starts left today; null when Discord does not say (a re-shard then waits). */
  private async sessionStartLimit(): Promise<SessionStartLimit | null> {
    try {
      return (await fetchGatewayBot(this.options.env)).session_start_limit ?? null;
    } catch (error) {
      log.warn("gateway_session_starts_unknown", { error: errorField(error) });
      return null;
    }
  }

  /** The old set of a handover goes; its count is retired like any earlier count. */
  private endHandover(handover: Handover): void {
    this.options.kv.delete("handover");
    this.addRetiring(handover.from);
  }

  private async retireOld(): Promise<void> {
    for (const old of this.retiring()) {
      const results = await Promise.allSettled(
        shardsOf(old).map(({ index }) => this.options.shard(shardName(index, old)).retire()),
      );
      // Kept until every object confirmed; their own watchdogs also ask isCurrent() each minute.
      // Read again: a READY report may have added a count while these were awaited.
      if (results.every((result) => result.status === "fulfilled"))
        this.putRetiring(this.retiring().filter((count) => count !== old));
    }
  }

  private setPlan(count: number): void {
    this.options.kv.put("plan", { count });
    // A count coming back is current again: its objects must not be stopped.
    this.putRetiring(this.retiring());
  }

  private addRetiring(count: number): void {
    this.putRetiring([...new Set([...this.retiring(), count])]);
  }

  /** Never the plan's count nor the serving set's: those objects are wanted. */
  private putRetiring(counts: number[]): void {
    const wanted = [this.plan()?.count, this.handover()?.from];
    this.options.kv.put(
      "retiring",
      counts.filter((count) => !wanted.includes(count)),
    );
  }

  private plan(): z.infer<typeof Plan> | null {
    return Plan.nullable()
      .catch(null)
      .parse(this.options.kv.get("plan") ?? null);
  }

  private handover(): Handover | null {
    return Handover.nullable()
      .catch(null)
      .parse(this.options.kv.get("handover") ?? null);
  }

  private retiring(): number[] {
    return Retiring.catch([]).parse(this.options.kv.get("retiring") ?? []);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
