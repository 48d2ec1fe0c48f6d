// Sharding's pure rules in plain Node: the shard count (DISCORD_GATEWAY_SHARDS or Discord's
// recommendation), the objects' names, Discord's routing of a server to a shard and its IDENTIFY
// buckets, IDENTIFY's `shard` field, and the variable's validation (named, never its value).
// End to end with two shards: test/gateway/sharding.spec.ts.
import { describe, expect, it } from "vitest";
import { variableIssues } from "../../src/config.ts";
import { GatewaySession } from "../../src/clients/discord/gateway/session.ts";
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
