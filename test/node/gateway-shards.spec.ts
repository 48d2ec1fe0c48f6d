// Sharding's pure rules in plain Node: the shard count (DISCORD_GATEWAY_SHARDS or Discord's
// recommendation), the objects' names, Discord's routing of a server to a shard and its IDENTIFY
// buckets, IDENTIFY's `shard` field, the variable's validation (named, never its value), and the
// gapless re-shard's plan (shard-handover.ts) and when a new shard may take over (guild-arrival.ts).
// End to end: test/gateway/sharding.spec.ts.
import { describe, expect, it } from "vitest";
import { variableIssues } from "../../src/config.ts";
import { GuildArrival } from "../../src/clients/discord/gateway/guild-arrival.ts";
import { GatewaySession } from "../../src/clients/discord/gateway/session.ts";
import {
  HANDOVER_WAIT_MS,
  type Handover,
  handoverComplete,
  handoverWaitMs,
  noteReady,
  notReady,
  planReshard,
} from "../../src/clients/discord/gateway/shard-handover.ts";
import {
  identifyBucket,
  shardCount,
  shardName,
  shardOfGuild,
  shardsOf,
} from "../../src/clients/discord/gateway/shard-plan.ts";

describe("Sharding: how many shards", () => {
  it("follows GET /gateway/bot's `shards` under auto, and a number as given", () => {
    expect(shardCount("auto", 3)).toBe(3);
    expect(shardCount("auto", undefined)).toBe(1);
    expect(shardCount(4, 1)).toBe(4);
    expect(shardsOf(2).map((s) => shardName(s.index, s.count))).toEqual(["shard:0/2", "shard:1/2"]);
  });

  it('accepts "auto" or a whole number and names the variable, never the value, otherwise', () => {
    expect(variableIssues({ DISCORD_GATEWAY_SHARDS: "auto" })).toEqual([]);
    expect(variableIssues({ DISCORD_GATEWAY_SHARDS: "2" })).toEqual([]);
    expect(variableIssues({ DISCORD_GATEWAY_SHARDS: "" })).toEqual([]);
    for (const bad of ["-7", "2.5", "two-secret", "99999"]) {
      const issues = variableIssues({ DISCORD_GATEWAY_SHARDS: bad });
      expect(issues).toHaveLength(1);
      expect(issues[0]).toMatch(/^DISCORD_GATEWAY_SHARDS must be "auto" or a whole number/);
      expect(issues[0]).not.toContain(bad);
    }
  });
});

describe("Sharding: Discord's rules (routing, IDENTIFY buckets, IDENTIFY shard)", () => {
  it("routes a server to shard (guild_id >> 22) % n, and DMs to shard 0", () => {
    const guild = (k: bigint) => String(k << 22n);
    expect(shardOfGuild(guild(10n), 4)).toBe(2);
    expect(shardOfGuild(guild(11n), 2)).toBe(1);
    expect(shardOfGuild("81384788765712384", 1)).toBe(0);
    expect(shardOfGuild(null, 8)).toBe(0);
  });

  it("puts shard i in IDENTIFY bucket i % max_concurrency", () => {
    expect([0, 1, 2, 3].map((i) => identifyBucket(i, 1))).toEqual([0, 0, 0, 0]);
    expect([0, 1, 16, 17].map((i) => identifyBucket(i, 16))).toEqual([0, 1, 0, 1]);
    expect(identifyBucket(5, undefined)).toBe(0);
  });

  it("identifies with shard [i, n] ([0, 1] unsharded)", () => {
    const identifyOf = (shard?: { index: number; count: number }) => {
      const session = new GatewaySession({ token: "t", random: () => 0, shard });
      session.connecting(false);
      const hello = JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 } });
      const send = session.frame(hello).find((action) => action.kind === "send");
      return (send as { payload: { d: { shard: unknown } } }).payload.d.shard;
    };
    expect(identifyOf()).toEqual([0, 1]);
    expect(identifyOf({ index: 1, count: 2 })).toEqual([1, 2]);
  });
});

describe("Re-sharding: the new set comes up before the old one goes", () => {
  const NOW = 1_700_000_000_000;
  const budget = (remaining: number, maxConcurrency = 1) => ({
    remaining,
    max_concurrency: maxConcurrency,
  });

  it("runs the wanted count at the first start and when it did not change", () => {
    expect(planReshard({ count: null, handover: null }, 2, null, NOW)).toEqual({
      kind: "run",
      count: 2,
    });
    expect(planReshard({ count: 2, handover: null }, 2, null, NOW)).toEqual({
      kind: "run",
      count: 2,
    });
  });

  it("hands over from the running set to a new count, with a deadline after its IDENTIFY rounds", () => {
    const decision = planReshard({ count: 1, handover: null }, 2, budget(990), NOW);
    expect(decision).toEqual({
      kind: "hand_over",
      handover: { from: 1, to: 2, ready: [], deadline: NOW + handoverWaitMs(2, 1) },
      abandon: null,
    });
    // Two rounds of Discord's 5 s bucket window (plus the coordinator's 1 s margin) on top.
    expect(handoverWaitMs(2, 1)).toBe(HANDOVER_WAIT_MS + 12_000);
    expect(handoverWaitMs(16, 16)).toBe(HANDOVER_WAIT_MS + 6_000);
    expect(handoverWaitMs(48, 16)).toBe(HANDOVER_WAIT_MS + 18_000);
  });

  it("keeps the running set when fewer session starts are left than the new set needs", () => {
    expect(planReshard({ count: 1, handover: null }, 4, budget(3), NOW)).toEqual({
      kind: "defer",
      count: 1,
      wanted: 4,
      remaining: 3,
    });
    expect(planReshard({ count: 1, handover: null }, 4, budget(4), NOW).kind).toBe("hand_over");
    // Discord did not say: the budget is unknown, so nothing is spent on it.
    expect(planReshard({ count: 1, handover: null }, 4, null, NOW)).toMatchObject({
      kind: "defer",
      remaining: null,
    });
  });

  it("goes back to the serving set when the count returns mid-handover, dropping the half-started one", () => {
    const handover: Handover = { from: 1, to: 2, ready: [0], deadline: NOW + 60_000 };
    expect(planReshard({ count: 2, handover }, 1, null, NOW)).toEqual({
      kind: "revert",
      count: 1,
      abandon: 2,
    });
    // The same count again: the handover goes on.
    expect(planReshard({ count: 2, handover }, 2, null, NOW)).toEqual({ kind: "run", count: 2 });
  });

  it("hands over from the serving set, not the half-started one, when the count changes again", () => {
    const handover: Handover = { from: 1, to: 2, ready: [0], deadline: NOW + 60_000 };
    expect(planReshard({ count: 2, handover }, 4, budget(990, 4), NOW)).toEqual({
      kind: "hand_over",
      handover: { from: 1, to: 4, ready: [], deadline: NOW + handoverWaitMs(4, 4) },
      abandon: 2,
    });
  });

  it("is complete once every new shard reported READY, each counted once", () => {
    let handover: Handover = { from: 1, to: 2, ready: [], deadline: NOW };
    handover = noteReady(handover, 1, 2);
    expect(handoverComplete(handover)).toBe(false);
    expect(notReady(handover)).toEqual([0]);
    // Twice, an old shard, or a shard of another count: no change.
    expect(noteReady(handover, 1, 2)).toBe(handover);
    expect(noteReady(handover, 0, 1)).toBe(handover);
    expect(noteReady(handover, 0, 3)).toBe(handover);
    handover = noteReady(handover, 0, 2);
    expect(handover.ready).toEqual([0, 1]);
    expect(handoverComplete(handover)).toBe(true);
    expect(notReady(handover)).toEqual([]);
  });
});

describe("Re-sharding: a new shard takes over once its servers arrived (READY, GUILD_CREATE)", () => {
  const ready = (...ids: string[]) => ({ guilds: ids.map((id) => ({ id, unavailable: true })) });

  it("is ready at the last GUILD_CREATE of the servers READY listed, not at READY", () => {
    const arrival = new GuildArrival();
    expect(arrival.note("READY", ready("1", "2"))).toBe(false);
    expect(arrival.note("GUILD_CREATE", { id: "1" })).toBe(false);
    expect(arrival.note("MESSAGE_CREATE", { id: "9" })).toBe(false);
    expect(arrival.note("GUILD_CREATE", { id: "2" })).toBe(true);
    expect(arrival.waiting).toBe(false);
    // A server joining later is no reason to report again.
    expect(arrival.note("GUILD_CREATE", { id: "3" })).toBe(false);
  });

  it("is ready at READY with no servers, and at RESUMED (the session had them)", () => {
    expect(new GuildArrival().note("READY", ready())).toBe(true);
    const arrival = new GuildArrival();
    arrival.note("READY", ready("1"));
    expect(arrival.note("RESUMED", null)).toBe(true);
  });

  it("is ready anyway when the wait runs out (a server in an outage), once", () => {
    const arrival = new GuildArrival();
    arrival.note("READY", ready("1"));
    expect(arrival.expire()).toBe(true);
    expect(arrival.expire()).toBe(false);
    expect(arrival.note("GUILD_CREATE", { id: "1" })).toBe(false);
  });
});
