// Sharding, end to end against a Gateway stand-in of its own that routes like Discord (a server's
// events to shard (guild_id >> 22) % n): GET /gateway/bot recommends two shards, the worker runs
// `shard:0/2` and `shard:1/2`, each IDENTIFYs with its `shard` inside Discord's IDENTIFY buckets,
// both hand messages to the same rooms as one shard would, /health lists them, and a new count
// comes up next to the old one, which is retired once every new shard is READY (or at the
// handover's deadline), never when too few session starts are left. Grouped by the Gateway docs'
// "Sharding" rules.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { messageTurnKey } from "../../src/clients/discord/gateway/message-intake.ts";
import type { GatewayStatus } from "../../src/rpc.ts";
import { shardName, shardOfGuild } from "../../src/clients/discord/gateway/shard-plan.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { APP_ID, snowflake, useDiscordStandIns } from "../helpers/discord.ts";
import { handedOver } from "../helpers/gateway-handoff.ts";
import { messageEvent, waitFor } from "../helpers/gateway.ts";
import { discordRoom, settledJournal } from "../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();
const peer = inject("gatewayShardPeer");

/** What GET /gateway/bot answers: `shards`, `max_concurrency` and the budget are Discord's. */
const gatewayBot = { shards: 2, maxConcurrency: 1, remaining: 990 };
const previous = vi.mocked(globalThis.fetch).getMockImplementation()!;
vi.mocked(globalThis.fetch).mockImplementation(async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.host === "discord.test" && url.pathname.endsWith("/gateway/bot"))
    return Response.json({
      url: peer.url,
      shards: gatewayBot.shards,
      session_start_limit: {
        total: 1000,
        remaining: gatewayBot.remaining,
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
interface Dispatched {
  seqs: number[];
  /** Every shard that carried each event (two during a re-shard's overlap). */
  deliveries: Array<Array<{ shard: [number, number]; seq: number }>>;
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
const shardOf = async (index: number, count: number) =>
  (await peerState()).shards.find((s) => s.index === index && s.count === count);
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
  const { deliveries } = await control<Dispatched>("dispatch", { events: [event] });
  // Every shard that carried it (both sets during an overlap) handed it to the room.
  for (const {
    shard: [i, n],
    seq,
  } of deliveries[0]!)
    await handedOver([seq], shardName(i, n));
  const rows = await settledJournal(discordRoom(agent, channel), 1);
  return { channel, event, rows, carriedBy: deliveries[0]!.map((d) => d.shard) };
}

/** What the coordinator's start does (the hourly cron, or an isolate's first request). */
const coordinator = () => env.GATEWAY!.getByName(APP_ID);
const health = async () =>
  json<{ status: string; gateway: GatewayStatus }>(await api("GET", "/health", { token: null }));
/** Whether the stand-in got an IDENTIFY from `shard` after the first `since` IDENTIFYs. */
const identified = async (shard: [number, number], since: number) =>
  (await identifies()).slice(since).some((s) => s.shard[0] === shard[0] && s.shard[1] === shard[1]);

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

describe("Gateway: re-sharding without a gap (a new shard count)", () => {
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

  it("keeps the old shards delivering until the new count is READY (2 → 1), then retires them", async () => {
    model.respondWith(() => ({ text: "here" }));
    // The new shard's READY is held: the overlap lasts until the test releases it.
    await control("settings", { holdReady: [[0, 1]] });
    gatewayBot.shards = 1;
    const since = (await identifies()).length;
    const status = await coordinator().start();
    expect(status.shardCount).toBe(1);
    expect(status.resharding).toMatchObject({ from: 2, to: 1, ready: 0 });
    await waitFor("the IDENTIFY of shard 0 of 1", () => identified([0, 1], since), 20_000);

    // Both old shards are still connected and READY, and /health shows both sets.
    for (const index of [0, 1]) expect(await shardOf(index, 2)).toMatchObject({ ready: true });
    const during = await health();
    expect(during.status).toBe("ok");
    expect(during.gateway).toMatchObject({
      shardCount: 1,
      resharding: { from: 2, to: 1, ready: 0 },
      shards: [
        { shard: [0, 1], retiring: false, connected: false },
        { shard: [0, 2], retiring: true, state: "ready", connected: true },
        { shard: [1, 2], retiring: true, state: "ready", connected: true },
      ],
    });
    // A message during the overlap is carried by the old set and answered once.
    const overlap = await mentionOnShard(1, 2, "during the overlap");
    expect(overlap.carriedBy).toEqual([[1, 2]]);
    expect(overlap.rows).toHaveLength(1);
    expect(repliesIn(overlap.channel)).toHaveLength(1);

    // READY: the old shards close their sockets and forget everything.
    await control("release");
    await waitFor("both old shards closed", async () => {
      const old = await Promise.all([shardOf(0, 2), shardOf(1, 2)]);
      return old.every((s) => s && !s.connected);
    });
    await waitFor("the old objects emptied", async () => {
      const left = await Promise.all([leftIn(shardName(0, 2)), leftIn(shardName(1, 2))]);
      return left.every((l) => l.keys.length === 0 && l.alarm === null && l.socket === null);
    });
    const { channel, rows } = await mentionOnShard(0, 1, "one shard now");
    expect(rows).toHaveLength(1);
    expect(repliesIn(channel)).toHaveLength(1);
    const after = await health();
    expect(after.gateway.shardCount).toBe(1);
    expect(after.gateway.resharding).toBeNull();
    expect(after.gateway.shards).toMatchObject([{ shard: [0, 1], retiring: false }]);
  });

  it("answers once a message (and its edit) that both sets carry during the overlap (1 → 2)", async () => {
    model.respondWith(() => ({ text: "once" }));
    // Shard 0 of 2 comes up; shard 1's READY is held, so the old shard 0 of 1 stays.
    await control("settings", { holdReady: [[1, 2]] });
    gatewayBot.shards = 2;
    await coordinator().start();
    await waitFor("shard 0 of 2 ready", async () => (await shardOf(0, 2))?.ready, 20_000);
    expect(await shardOf(0, 1)).toMatchObject({ ready: true });

    // Discord sends the server's message to both sessions: two deliveries, one turn, one reply.
    const { channel, event, rows, carriedBy } = await mentionOnShard(0, 2, "carried twice");
    expect(carriedBy).toEqual([
      [0, 2],
      [0, 1],
    ]);
    expect(rows.map((row) => [row.idempotencyKey, row.status])).toEqual([
      [messageTurnKey(event.d.id), "evaluated"],
    ]);
    expect(repliesIn(channel)).toHaveLength(1);
    // Its edit, also carried twice, changes the stored text once and answers nothing.
    const edit = {
      t: "MESSAGE_UPDATE",
      d: { id: event.d.id, channel_id: channel, content: "fixed" },
    };
    const { deliveries } = await control<Dispatched>("dispatch", { events: [edit] });
    expect(deliveries[0]).toHaveLength(2);
    for (const {
      shard: [i, n],
      seq,
    } of deliveries[0]!)
      await handedOver([seq], shardName(i, n));
    const page = await json<{ messages: Array<{ text: string; role?: string }> }>(
      await api("GET", `/agents/${agent}/rooms/discord:${channel}/messages`),
    );
    expect(page.messages.map((m) => m.text)).toContain("fixed");
    expect(await settledJournal(discordRoom(agent, channel), 1)).toHaveLength(1);
    expect(repliesIn(channel)).toHaveLength(1);

    await control("release");
    await waitForShards(2);
    await waitFor("shard 0 of 1 closed", async () => !(await shardOf(0, 1))?.connected);
    expect((await health()).gateway).toMatchObject({ shardCount: 2, resharding: null });
  });

  it("retires the old set at the handover's deadline when a new shard never gets READY", async () => {
    await control("settings", { holdReady: [[0, 1]] });
    gatewayBot.shards = 1;
    const since = (await identifies()).length;
    await coordinator().start();
    await waitFor("the IDENTIFY of shard 0 of 1", () => identified([0, 1], since), 20_000);
    // The deadline (two minutes past the IDENTIFY rounds) has passed: the coordinator's alarm.
    await runInDurableObject(coordinator(), (_instance, state) => {
      const handover = state.storage.kv.get<{ deadline: number }>("handover")!;
      state.storage.kv.put("handover", { ...handover, deadline: Date.now() - 1 });
    });
    expect(await runDurableObjectAlarm(coordinator())).toBe(true);
    for (const old of [shardName(0, 2), shardName(1, 2)])
      expect(await leftIn(old)).toEqual({ keys: [], alarm: null, socket: null });
    expect((await health()).gateway).toMatchObject({
      shardCount: 1,
      resharding: null,
      shards: [{ shard: [0, 1], retiring: false }],
    });
    // The new shard still comes up and answers.
    await control("release");
    await waitForShards(1);
    const { channel, rows } = await mentionOnShard(0, 1, "after the deadline");
    expect(rows).toHaveLength(1);
    expect(repliesIn(channel)).toHaveLength(1);
  });

  it("keeps the running shards when fewer session starts are left than the new count needs", async () => {
    const before = (await identifies()).length;
    gatewayBot.shards = 2;
    gatewayBot.remaining = 1;
    try {
      const status = await coordinator().start();
      expect(status).toMatchObject({ shardCount: 1, resharding: null });
      expect(status.shards).toMatchObject([{ shard: [0, 1], state: "ready", retiring: false }]);
    } finally {
      gatewayBot.remaining = 990;
    }
    // No IDENTIFY was spent, and the running shard still answers.
    const { channel, rows } = await mentionOnShard(0, 1, "still one shard");
    expect(rows).toHaveLength(1);
    expect(repliesIn(channel)).toHaveLength(1);
    expect(await identifies()).toHaveLength(before);
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
