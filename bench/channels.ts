// `npm run bench:channels`: Telegram's and Slack's webhooks through the real worker in local workerd,
// against the Bot API and Web API stand-ins of the tests served on loopback, and a model stand-in
// that answers at once. For each platform:
//   0. the floor: a request the webhook verifies and parses and then does nothing with (Telegram:
//      an Update of a kind the bot is not sent; Slack: `url_verification`);
//   1. the acknowledgement: mentions across 50 chats sent one after another without waiting for
//      the replies (which run in the same workerd), client-measured; then every reply is awaited
//      and counted (one per mention);
//   2. a mention to its reply reaching the stand-in, one at a time;
//   3. messages handed to rooms per second, 8 in flight; each acknowledgement means the room has
//      journalled the turn. Telegram: group chatter the agent is not asked to answer (stored, not
//      answered); Slack: mentions (Slack sends no other channel message), each answered.
// Flags: --acks N (default 500), --chatter N (default 1,000), --replies N (default 50),
// --platform telegram|slack (default both).
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { createSlackStandIn, signedSlackRequest } from "../test/stand-ins/slack-stand-in.ts";
import { createTelegramStandIn, messageUpdate } from "../test/stand-ins/telegram-stand-in.ts";
import { startModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import { type BenchWorker, createBenchAgent, startBenchWorker } from "./worker-harness.ts";

const CHATS = 50;
const WARMUP = 20;
const FLOOR = 300;
const CONCURRENCY = 8;

const TELEGRAM_TOKEN = "123456:BENCH-token_value";
const TELEGRAM_SECRET = "bench-telegram-webhook-secret-0123";
const TELEGRAM_BOT = { id: 123456, username: "bench_agent_bot", first_name: "Bench" };
const SLACK_TOKEN = "xoxb-bench-token-not-real";
const SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const SLACK_BOT = { botUserId: "UBENCHBOT1", botId: "BBENCHBOT1", teamId: "TBENCH0001" };

interface Served {
  url: string;
  /** Resolves with performance.now() at the arrival of the request `match` recognises. */
  arrival(key: string, timeoutMs: number): Promise<number>;
  arrivals(): number;
  close(): Promise<void>;
}

/**
 * A stand-in's fetch handler on a loopback port; `replyKey` names the requests that are replies
 * (for Telegram the chat and the message replied to; for Slack the channel and thread).
 */
async function serve(
  handler: (request: Request) => Promise<Response>,
  replyKey: (path: string, body: string) => string | null,
): Promise<Served> {
  const seen = new Map<string, number>();
  let waiters: Array<() => void> = [];
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const at = performance.now();
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string") headers.set(name, value);
    const response = await handler(
      new Request(`http://127.0.0.1${req.url ?? "/"}`, {
        method: req.method,
        headers,
        body: req.method === "GET" || req.method === "HEAD" ? undefined : body,
      }),
    );
    const key = response.ok ? replyKey(req.url ?? "/", body.toString()) : null;
    if (key && !seen.has(key)) seen.set(key, at);
    for (const wake of waiters) wake();
    const out = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(out);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const until = (done: () => boolean, timeoutMs: number, what: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        waiters = waiters.filter((w) => w !== check);
        resolve();
      };
      waiters.push(check);
      check();
    });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async arrival(key, timeoutMs) {
      await until(() => seen.has(key), timeoutMs, `the reply ${key}`);
      return seen.get(key)!;
    },
    arrivals: () => seen.size,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** One platform's requests, built the way the platform sends them. */
interface Platform {
  name: string;
  /** Verified, parsed, not acted on. */
  floor(i: number): Promise<Request>;
  /** A message addressed to the bot in chat `chat`; `key` is how its reply is recognised. */
  mention(i: number, chat: number): Promise<{ request: Request; key: string }>;
  /** A message the webhook hands to a room (Telegram: chatter, stored; Slack: a mention). */
  chatter(i: number, chat: number): Promise<Request>;
  /** The outcome a taken message's acknowledgement reports, to check every one was taken. */
  taken(response: Response, text: string): boolean;
  served: Served;
  close(): Promise<void>;
}

async function telegramPlatform(base: () => string): Promise<Platform> {
  const standIn = createTelegramStandIn({ token: TELEGRAM_TOKEN, bot: TELEGRAM_BOT });
  const served = await serve(
    (request) => standIn.fetch(request),
    (path, body) => {
      if (!path.endsWith("/sendMessage")) return null;
      const parsed = JSON.parse(body) as {
        chat_id: number;
        reply_parameters?: { message_id: number };
      };
      return parsed.reply_parameters
        ? `${parsed.chat_id}:${parsed.reply_parameters.message_id}`
        : null;
    },
  );
  const post = (update: unknown) =>
    new Request(`${base()}/telegram/webhook`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-telegram-bot-api-secret-token": TELEGRAM_SECRET,
      },
      body: JSON.stringify(update),
    });
  const chatId = (chat: number) => -1001900000000 - chat;
  const mention = `@${TELEGRAM_BOT.username}`;
  let messageId = 1;
  return {
    name: "Telegram",
    served,
    // A channel post: the bot is not sent those (allowed_updates), and the webhook skips it.
    floor: async (i) =>
      post({
        update_id: 500_000_000 + i,
        channel_post: { message_id: i + 1, chat: { id: -1001800000000, type: "channel" }, date: 0 },
      }),
    mention: async (_i, chat) => {
      messageId += 1;
      const id = messageId;
      const update = messageUpdate({
        chat: { id: chatId(chat), type: "supergroup", title: "Bench" },
        from: { id: 800000000 + (id % 200), first_name: "Member" },
        text: `${mention} how are you?`,
        entities: [{ type: "mention", offset: 0, length: mention.length }],
        message_id: id,
      });
      return { request: post(update), key: `${chatId(chat)}:${id}` };
    },
    chatter: async (_i, chat) => {
      messageId += 1;
      return post(
        messageUpdate({
          chat: { id: chatId(chat), type: "supergroup", title: "Bench" },
          from: { id: 800000000 + (messageId % 200), first_name: "Member" },
          text: `just chatting, message ${messageId}`,
          message_id: messageId,
        }),
      );
    },
    taken: (response, text) => response.status === 200 && text.includes('"outcome":"queued"'),
    close: () => served.close(),
  };
}

async function slackPlatform(base: () => string): Promise<Platform> {
  const standIn = createSlackStandIn({
    token: SLACK_TOKEN,
    ...SLACK_BOT,
    users: [{ id: "UMEMBER001", name: "member" }],
  });
  const served = await serve(
    (request) => standIn.fetch(request),
    (path, body) => {
      if (!path.endsWith("/chat.postMessage")) return null;
      const parsed = JSON.parse(body) as { channel: string; thread_ts?: string };
      return parsed.thread_ts ? `${parsed.channel}:${parsed.thread_ts}` : null;
    },
  );
  let ts = 1_764_000_000;
  let eventId = 0;
  const channel = (chat: number) => `CBENCH${String(chat).padStart(4, "0")}`;
  const nextTs = () => {
    ts += 1;
    return `${ts}.000100`;
  };
  const envelope = (event: Record<string, unknown>) => {
    eventId += 1;
    return JSON.stringify({
      token: "verification-token-unused",
      team_id: SLACK_BOT.teamId,
      api_app_id: "ABENCHAPP1",
      type: "event_callback",
      event_id: `Ev${String(eventId).padStart(9, "0")}`,
      event_time: Math.floor(Date.now() / 1000),
      event,
    });
  };
  const post = (body: string) => signedSlackRequest(`${base()}/slack/events`, body, SLACK_SECRET);
  const mentionRequest = async (i: number, chat: number) => {
    const at = nextTs();
    const body = envelope({
      type: "app_mention",
      user: `UMEMBER${String(i % 200).padStart(3, "0")}`,
      text: `<@${SLACK_BOT.botUserId}> how are you?`,
      ts: at,
      channel: channel(chat),
      event_ts: at,
    });
    return { request: await post(body), key: `${channel(chat)}:${at}` };
  };
  return {
    name: "Slack",
    served,
    floor: async (i) =>
      post(
        JSON.stringify({ token: "unused", challenge: `challenge-${i}`, type: "url_verification" }),
      ),
    mention: mentionRequest,
    // Slack sends the bot no channel message it is not mentioned in (without channels:history),
    // and the webhook skips those it gets: Slack's stream of taken messages is mentions.
    chatter: async (i, chat) => (await mentionRequest(i, chat)).request,
    taken: (response, text) => response.status === 200 && text.includes('"outcome":"queued"'),
    close: () => served.close(),
  };
}

interface PlatformResult {
  name: string;
  floor: ReturnType<typeof summarize>;
  ack: ReturnType<typeof summarize>;
  drainMs: number;
  replies: number;
  mentions: number;
  reply: ReturnType<typeof summarize>;
  chatter: { count: number; perSecond: number; taken: number };
}

async function timed(request: Request): Promise<{ ms: number; response: Response; text: string }> {
  const sentAt = performance.now();
  const response = await fetch(request);
  const text = await response.text();
  return { ms: performance.now() - sentAt, response, text };
}

async function benchPlatform(
  platform: Platform,
  counts: { acks: number; chatter: number; replies: number },
): Promise<PlatformResult> {
  const floor: number[] = [];
  for (let i = 0; i < WARMUP + FLOOR; i++) {
    const { ms, response } = await timed(await platform.floor(i));
    if (response.status !== 200) throw new Error(`${platform.name} floor ${i}: ${response.status}`);
    if (i >= WARMUP) floor.push(ms);
  }

  const acks: number[] = [];
  const keys: string[] = [];
  const mentions = WARMUP + counts.acks;
  for (let i = 0; i < mentions; i++) {
    const { request, key } = await platform.mention(i, i % CHATS);
    const { ms, response, text } = await timed(request);
    if (!platform.taken(response, text))
      throw new Error(`${platform.name} mention ${i}: ${response.status} ${text.slice(0, 200)}`);
    keys.push(key);
    if (i >= WARMUP) acks.push(ms);
  }
  const lastAck = performance.now();
  for (const key of keys) await platform.served.arrival(key, 600_000);
  const drainMs = performance.now() - lastAck;

  const replyTimes: number[] = [];
  for (let i = 0; i < counts.replies; i++) {
    const { request, key } = await platform.mention(mentions + i, i % CHATS);
    const sentAt = performance.now();
    const response = await fetch(request);
    await response.text();
    replyTimes.push((await platform.served.arrival(key, 60_000)) - sentAt);
  }
  const replies = platform.served.arrivals();

  let next = 0;
  let taken = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < counts.chatter) {
        const i = next++;
        const { response, text } = await timed(await platform.chatter(i, i % CHATS));
        if (platform.taken(response, text)) taken += 1;
        else if (response.status !== 200)
          throw new Error(
            `${platform.name} chatter ${i}: ${response.status} ${text.slice(0, 200)}`,
          );
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return {
    name: platform.name,
    floor: summarize(floor),
    ack: summarize(acks),
    drainMs,
    replies,
    mentions: mentions + counts.replies,
    reply: summarize(replyTimes),
    chatter: { count: counts.chatter, perSecond: taken / elapsed, taken },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      acks: { type: "string", default: "500" },
      chatter: { type: "string", default: "1000" },
      replies: { type: "string", default: "50" },
      platform: { type: "string" },
    },
  });
  const counts = {
    acks: Number(values.acks),
    chatter: Number(values.chatter),
    replies: Number(values.replies),
  };
  const cpu = cpus();
  console.log(
    `\nedge-agents channels bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}, load ${loadavg()[0]!.toFixed(1)}`,
  );
  const model = await startModelServer();
  model.respondWith(() => ({ text: "Doing well, thanks for asking!" }));
  let worker: BenchWorker | undefined;
  const base = () => worker!.base;
  const platforms = [await telegramPlatform(base), await slackPlatform(base)].filter(
    (platform) => !values.platform || platform.name.toLowerCase() === values.platform,
  );
  const [telegramServed, slackServed] = [
    platforms.find((p) => p.name === "Telegram")?.served,
    platforms.find((p) => p.name === "Slack")?.served,
  ];
  worker = await startBenchWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
    ...(telegramServed
      ? {
          TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
          TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
          TELEGRAM_API_BASE: telegramServed.url,
        }
      : {}),
    ...(slackServed
      ? {
          SLACK_BOT_TOKEN: SLACK_TOKEN,
          SLACK_SIGNING_SECRET: SLACK_SECRET,
          SLACK_API_BASE: `${slackServed.url}/api`,
        }
      : {}),
    ALLOW_LOOPBACK_FETCH: "true",
    RATE_LIMIT_PER_USER: "100000/min",
  });
  const results: PlatformResult[] = [];
  try {
    await createBenchAgent(worker.call, {
      id: "channels-bench",
      settings: { memory: { factsEvery: 1000, summarizeAfter: 10000 } },
    });
    for (const platform of platforms) {
      const client = platform.name.toLowerCase();
      const bound = await worker.call("POST", `/clients/${client}/config`, {
        defaultAgentId: "channels-bench",
      });
      if (bound.status !== 200)
        throw new Error(`binding ${platform.name} failed: ${bound.status} ${await bound.text()}`);
      console.log(`\n${platform.name}...`);
      results.push(await benchPlatform(platform, counts));
    }
  } finally {
    await worker.stop();
    await model.close();
    for (const platform of platforms) await platform.close();
  }

  console.log(
    `\n0-2. Webhook round trips, client-measured (ms); ${counts.acks} mentions over ${CHATS} chats sent one after another, replies in the background; ${counts.replies} mentions one at a time to their reply\n`,
  );
  console.log(
    markdownTable(
      [
        "platform",
        "floor p50",
        "floor p99",
        "ack p50",
        "ack p95",
        "ack p99",
        "mention -> reply p50",
        "p99",
      ],
      results.map((r) => [
        r.name,
        r.floor.p50,
        r.floor.p99,
        r.ack.p50,
        r.ack.p95,
        r.ack.p99,
        r.reply.p50,
        r.reply.p99,
      ]),
    ),
  );
  console.log(
    `\n   replies at the stand-in / mentions sent: ${results.map((r) => `${r.name} ${r.replies} / ${r.mentions}`).join(", ")}; last reply ${results.map((r) => `${r.name} ${(r.drainMs / 1000).toFixed(1)} s`).join(", ")} after the last acknowledgement`,
  );
  console.log(
    `\n3. Messages handed to rooms (acknowledged as journalled), ${CONCURRENCY} requests in flight: Telegram group chatter (stored, not answered), Slack mentions (answered)\n`,
  );
  console.log(
    markdownTable(
      ["platform", "messages", "taken", "handed to rooms / s"],
      results.map((r) => [r.name, r.chatter.count, r.chatter.taken, r.chatter.perSecond]),
      [0, 0, 0, 1],
    ),
  );
  console.log(`\n   model calls: ${model.calls()}; load after: ${loadavg()[0]!.toFixed(1)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
