// Sharding: how many Gateway connections the bot holds and what each is called. Discord splits a
// bot's servers over `n` shards (a server's events go to shard `(guild_id >> 22) % n`, DMs to
// shard 0); each shard is one DiscordGateway object named `shard:<i>/<n>`, so a change of `n`
// names a fresh set of objects and the old ones are retired rather than reused with stale
// sessions. Pure: tested in Node (test/node/gateway-shards.spec.ts).

import { MAX_GATEWAY_SHARDS, type ShardSetting } from "../../../settings.ts";

export interface ShardId {
  index: number;
  count: number;
}

export function shardName(index: number, count: number): string {
  return `shard:${index}/${count}`;
}

/** The shard count to run: the setting, or Discord's recommendation under `auto`. */
export function shardCount(setting: ShardSetting, recommended: number | undefined): number {
  if (setting !== "auto") return setting;
  return Math.min(MAX_GATEWAY_SHARDS, Math.max(1, recommended ?? 1));
}

/** Every shard of a plan of `count`. */
export function shardsOf(count: number): ShardId[] {
  return Array.from({ length: count }, (_, index) => ({ index, count }));
}

/**
 * Discord's IDENTIFY rate-limit bucket: `shard_id % max_concurrency`. One IDENTIFY per bucket per
 * 5 s, so with max_concurrency 16, shards 0-15 may identify at once and 16 waits for 0's bucket.
 */
export function identifyBucket(shard: number, maxConcurrency: number | undefined): number {
  return shard % Math.max(1, maxConcurrency ?? 1);
}

/** Which shard Discord sends a server's events to (DMs: shard 0). */
export function shardOfGuild(guildId: string | null, count: number): number {
  if (!guildId) return 0;
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}
