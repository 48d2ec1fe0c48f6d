// Sharding, end to end against a Gateway stand-in of its own that routes like Discord (a server's
// events to shard (guild_id >> 22) % n): GET /gateway/bot recommends two shards, the worker runs
// `shard:0/2` and `shard:1/2`, each IDENTIFYs with its `shard` inside Discord's IDENTIFY buckets,
// both hand messages to the same rooms as one shard would, /health lists them, and a new count
// retires the old shards' objects. Grouped by the Gateway docs' "Sharding" rules.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { messageTurnKey } from "../../src/clients/discord/gateway/message-intake.ts";
import { shardName, shardOfGuild } from "../../src/clients/discord/gateway/shard-plan.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { APP_ID, snowflake, useDiscordStandIns } from "../helpers/discord.ts";
import { handedOver } from "../helpers/gateway-handoff.ts";
import { messageEvent, waitFor } from "../helpers/gateway.ts";
import { discordRoom, settledJournal } from "../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();
const peer = inject("gatewayShardPeer");

/** What GET /gateway/bot answers: `shards` and `max_concurrency` are Discord's to choose. */
const gatewayBot = { shards: 2, maxConcurrency: 1 };
const previous = vi.mocked(globalThis.fetch).getMockImplementation()!;
vi.mocked(globalThis.fetch).mockImplementation(async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.host === "discord.test" && url.pathname.endsWith("/gateway/bot"))
    return Response.json({
      url: peer.url,
      shards: gatewayBot.shards,
      session_start_limit: {
        total: 1000,
        remaining: 990,
        reset_after: 60_000,
        max_concurrency: gatewayBot.maxConcurrency,
      },
    });
  return previous(input, init);
});

interface ShardState {
  index: number;
  count: number;
  connected: boolean;
  ready: boolean;
  sessionId: string | null;
}
interface PeerState {
  received: Array<{ op: number; d: unknown; at: number }>;
  shards: ShardState[];
}
async function control<T>(path: string, body: unknown = {}): Promise<T> {
  const response = await fetch(`${peer.controlUrl}/${path}`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  return (await response.json()) as T;
}
const peerState = () => control<PeerState>("state");
const identifies = async () =>
  (await peerState()).received
    .filter((record) => record.op === 2)
    .map((record) => ({ shard: (record.d as { shard: [number, number] }).shard, at: record.at }));
/** Waits until the stand-in sees shards 0..count-1 of `count` identified and ready. */
const waitForShards = (count: number) =>
  waitFor(
    `${count} ready shards`,
    async () => {
      const { shards } = await peerState();
      const ready = shards.filter((s) => s.count === count && s.ready && s.index < count);
      return ready.length === count ? shards : null;
    },
    20_000,
  );

/** A server whose events Discord sends to shard `shard` of `count`. */
function guildOnShard(shard: number, count: number): string {
  for (let k = 1_000_000n; ; k++) {
    const id = String(k << 22n);
    if (shardOfGuild(id, count) === shard) return id;
  }
}
const repliesIn = (channel: string) =>
  discord.calls.filter(
    (call) => call.method === "POST" && call.path === `/api/v10/channels/${channel}/messages`,
  );

let agent: string;

beforeAll(async () => {
  await control("reset");
  agent = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
  const config = await api("POST", "/clients/discord/config", {
    body: { defaultAgentId: agent, allowedChannels: [] },
  });
  expect(config.status).toBe(200);
  // The worker's first request starts the coordinator, which starts every shard.
  await api("GET", "/health", { token: null });
  await waitForShards(2);
});

/** Dispatches a mention in a fresh channel of a server on `shard`; its one reply, once settled. */
async function mentionOnShard(shard: number, count: number, text: string) {
  const channel = snowflake();
  const event = messageEvent(channel, text, { mention: true, guild: guildOnShard(shard, count) });
  const { seqs } = await control<{ seqs: number[] }>("dispatch", { events: [event] });
  await handedOver(seqs, shardName(shard, count));
  const rows = await settledJournal(discordRoom(agent, channel), 1);
  return { channel, event, rows };
}

describe("Gateway: sharding (IDENTIFY shard, max_concurrency, routing)", () => {
  it("identifies each shard with [i, n], one IDENTIFY per bucket per 5 s (max_concurrency 1)", async () => {
    const sent = await identifies();
    expect(sent.map((s) => s.shard).sort()).toEqual([
      [0, 2],
      [1, 2],
    ]);
    // Both shards are in bucket 0 (shard_id % 1): the second waited out the first's window.
    expect(Math.abs(sent[1]!.at - sent[0]!.at)).toBeGreaterThanOrEqual(4_900);
  });

  it("delivers on both shards: a message on each answered once, in its channel's room", async () => {
    model.respondWith(() => ({ text: "here" }));
    for (const shard of [0, 1]) {
      const { channel, event, rows } = await mentionOnShard(shard, 2, `hello shard ${shard}`);
      expect(rows.map((row) => [row.idempotencyKey, row.status])).toEqual([
        [messageTurnKey(event.d.id), "evaluated"],
      ]);
      expect(repliesIn(channel)).toHaveLength(1);
      expect(repliesIn(channel)[0]!.body.content).toBe("here");
    }
  });

  it("lists every shard and its state on /health", async () => {
    const health = await json<{ status: string; gateway: Record<string, unknown> }>(
      await api("GET", "/health", { token: null }),
    );
    expect(health.status).toBe("ok");
    expect(health.gateway).toMatchObject({
      state: "ready",
      connected: true,
      shardCount: 2,
      shards: [
        { shard: [0, 2], state: "ready", connected: true, stoppedReason: null },
        { shard: [1, 2], state: "ready", connected: true, stoppedReason: null },
      ],
    });
    const shards = health.gateway.shards as Array<{ eventsHandled: number; identifies: number }>;
    expect(shards.every((s) => s.identifies === 1 && s.eventsHandled >= 1)).toBe(true);
  });
});

describe("Gateway: re-sharding (a new shard count)", () => {
  it("retires a shard of an old count on its watchdog: no socket, no alarm, nothing stored", async () => {
    // A stray shard of a plan of 3 (as if its retirement had been missed) connects as shard 2...
    const stray = () => env.GATEWAY!.getByName(shardName(2, 3));
    await stray().startShard(2, 3);
    await waitFor("the stray shard ready", async () => {
      const s = (await peerState()).shards.find((shard) => shard.index === 2);
      return s?.ready ? s : null;
    });
    // ...and its watchdog learns from the coordinator that 3 is not the plan.
    await runDurableObjectAlarm(stray());
    await waitFor("the stray shard's socket closed", async () => {
      const s = (await peerState()).shards.find((shard) => shard.index === 2);
      return s && !s.connected;
    });
    expect(await leftIn(shardName(2, 3))).toEqual({ keys: [], alarm: null, socket: null });
  });

  it("moves to the new count when Discord recommends it: old shards stop, the new ones answer", async () => {
    gatewayBot.shards = 1;
    // What the hourly cron (or an isolate's first request) does.
    const status = await env.GATEWAY!.getByName(APP_ID).start();
    expect(status.shardCount).toBe(1);
    await waitFor("shard 1 of 2 closed", async () => {
      const s = (await peerState()).shards.find((shard) => shard.index === 1);
      return s && !s.connected;
    });
    await waitForShards(1);
    for (const old of [shardName(0, 2), shardName(1, 2)])
      expect(await leftIn(old)).toEqual({ keys: [], alarm: null, socket: null });
    const { channel, rows } = await mentionOnShard(0, 1, "one shard now");
    expect(rows).toHaveLength(1);
    expect(repliesIn(channel)).toHaveLength(1);
    const health = await json<{ gateway: { shardCount: number; shards: unknown[] } }>(
      await api("GET", "/health", { token: null }),
    );
    expect(health.gateway.shardCount).toBe(1);
    expect(health.gateway.shards).toHaveLength(1);
  });
});

/** What a shard's object still holds: stored keys, an armed alarm, an open socket. */
function leftIn(name: string) {
  return runInDurableObject(env.GATEWAY!.getByName(name), async (instance, state) => ({
    keys: [...state.storage.kv.list()].map(([key]) => key),
    alarm: await state.storage.getAlarm(),
    socket: (instance as unknown as { socket: unknown }).socket,
  }));
}
