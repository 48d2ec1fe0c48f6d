// The Gateway part of `npm run bench:discord`: the worker's DiscordGateway objects connected to the
// Gateway stand-in on loopback (test/peers/gateway-stand-in.ts). 3. A mention dispatched over the
// socket -> the reply's POST reaching the Discord stand-in, one at a time, model answering at once.
// 4. How many message events a second the shards hand to rooms: chatter (no model call) from two
// servers, which Discord puts on different shards of two, offered at rising paced rates, with 1
// and with 2 shards; a rate is sustained when the backlog is gone within a second of the last
// event, after one warm-up message per channel. Progress is read from /health
// (`gateway.eventsHandled`, summed over the shards).
import type { GatewayStandIn } from "../test/peers/gateway-stand-in.ts";
import type { DiscordServer } from "./discord.ts";
import { markdownTable, summarize } from "./stats.ts";
import type { BenchWorker } from "./worker-harness.ts";

const MENTIONS = 100;
const WARMUP = 10;
const BOT = "990000000000000001";
const RATES = [100, 200, 400, 800, 1_600];
const SECONDS_PER_RATE = 3;
const CHANNELS = 50;
/** Two servers: (id >> 22) % 2 puts the first on shard 0 of 2 and the second on shard 1. */
const GUILDS = [String(1_000_000n << 22n), String(1_000_001n << 22n)];

interface Options {
  worker: BenchWorker;
  gateway: GatewayStandIn;
  discord: DiscordServer;
}

export type ChatterRow = [number, number, number, number, string];

function gatewayClient(worker: BenchWorker, gateway: GatewayStandIn) {
  const control = async (path: string, body: unknown) => {
    const response = await fetch(`${gateway.controlUrl}/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  const health = async () => {
    const response = await fetch(`${worker.base}/health`);
    const body = (await response.json()) as {
      gateway?: { state: string; eventsHandled: number; inFlight: number };
    };
    if (!body.gateway) throw new Error("/health shows no Gateway: is DISCORD_GATEWAY on?");
    return body.gateway;
  };
  const ready = async () => {
    const deadline = Date.now() + 30_000;
    while ((await health()).state !== "ready") {
      if (Date.now() > deadline) throw new Error("the Gateway never became ready");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return { control, health, ready };
}

let n = 0;
function message(channel: number, mention: boolean, guild = "900000000000000001") {
  n += 1;
  const id = String(3_000_000_000_000_000n + BigInt(n));
  return {
    id,
    event: {
      t: "MESSAGE_CREATE",
      d: {
        id,
        channel_id: String(810_000_000_000_000_000n + BigInt(channel)),
        guild_id: guild,
        author: { id: String(720_000_000_000_000_000n + BigInt(n % 300)), username: "bench" },
        content: mention ? `<@${BOT}> hello ${n}` : `chatter ${n}`,
        type: 0,
        mentions: mention ? [{ id: BOT, username: "edge-bot" }] : [],
        mention_roles: [],
        attachments: [],
      },
    },
  };
}

/** 3. Mention -> reply posted, one at a time; `measured` brackets the measured mentions. */
export async function benchGatewayMentions(
  { worker, gateway, discord }: Options,
  measured?: { start(): Promise<void>; stop(mentions: number): Promise<void> },
): Promise<void> {
  const { control, ready } = gatewayClient(worker, gateway);
  await ready();
  const latencies: number[] = [];
  for (let i = 0; i < WARMUP + MENTIONS; i++) {
    if (i === WARMUP) await measured?.start();
    const { id, event } = message(i % CHANNELS, true);
    const sentAt = performance.now();
    await control("dispatch", { events: [event] });
    const at = await discord.replyArrival(id, 30_000);
    if (i >= WARMUP) latencies.push(at - sentAt);
  }
  await measured?.stop(MENTIONS);
  const mention = summarize(latencies);
  console.log(
    `\n3. Gateway: a mention (MESSAGE_CREATE over the socket) -> the reply's POST at the Discord stand-in, one at a time, ${MENTIONS} after ${WARMUP} warm-up\n`,
  );
  console.log(
    markdownTable(
      ["mentions", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
      [[mention.n, mention.p50, mention.p95, mention.p99, mention.mean]],
      [0, 1, 1, 1, 1],
    ),
  );
}

/** 4. Events a second handed to rooms, at rising offered rates, with however many shards run. */
export async function benchGatewayChatter(
  { worker, gateway }: Omit<Options, "discord">,
  shards: number,
): Promise<ChatterRow[]> {
  const { control, health, ready } = gatewayClient(worker, gateway);
  await ready();
  const running = await fetch(`${worker.base}/health`).then(
    async (response) => ((await response.json()) as { gateway: { shardCount: number } }).gateway,
  );
  if (running.shardCount !== shards)
    throw new Error(`expected ${shards} shards, the worker runs ${running.shardCount}`);
  // Warm-up: one message in every channel, so each room object exists before anything is timed.
  const before = (await health()).eventsHandled;
  await control("dispatch", {
    events: Array.from({ length: CHANNELS }, (_, c) => message(c, false, GUILDS[c % 2]).event),
  });
  const warmDeadline = Date.now() + 60_000;
  while ((await health()).eventsHandled - before < CHANNELS) {
    if (Date.now() > warmDeadline) throw new Error("the warm-up messages were never handed over");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const rows: ChatterRow[] = [];
  for (const rate of RATES) {
    const start = (await health()).eventsHandled;
    const total = rate * SECONDS_PER_RATE;
    const began = performance.now();
    const tick = 50;
    const perTick = Math.max(1, Math.round((rate * tick) / 1000));
    for (let sent = 0; sent < total; sent += perTick) {
      const events = Array.from({ length: Math.min(perTick, total - sent) }, (_, k) =>
        message((sent + k) % CHANNELS, false, GUILDS[(sent + k) % 2]),
      ).map((m) => m.event);
      await control("dispatch", { events });
      const due = began + ((sent + perTick) / rate) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const sentAllAt = performance.now();
    let handled = 0;
    for (;;) {
      handled = (await health()).eventsHandled - start;
      if (handled >= total || performance.now() - sentAllAt > 60_000) break;
      // /health asks every shard: polled at 10 Hz, so the polling itself stays a small load.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const doneAt = performance.now();
    const lagMs = doneAt - sentAllAt;
    const achieved = (handled / (doneAt - began)) * 1000;
    rows.push([
      rate,
      total,
      Math.round(achieved),
      Math.round(lagMs),
      lagMs <= 1_000 ? "yes" : "no",
    ]);
    // The first three rates always run, so 1 and 2 shards are compared on the same rows.
    if (lagMs > 10_000 && rows.length >= 3) break;
  }
  console.log(
    `\n4. Gateway, ${shards} shard${shards === 1 ? "" : "s"}: channel chatter (no mention, no model call) offered at a paced rate for ${SECONDS_PER_RATE} s over ${CHANNELS} channels of 2 servers;`,
  );
  console.log(
    "   handed to rooms = journalled there; sustained = the backlog was gone within 1 s of the last event\n",
  );
  console.log(
    markdownTable(
      ["offered events/s", "events", "handed off events/s", "backlog after last (ms)", "sustained"],
      rows,
      [0, 0, 0, 0, 0],
    ),
  );
  return rows;
}
