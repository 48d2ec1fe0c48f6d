// Discord's REST rate limits through the rooms (src/rate-limits/discord-rest-limiter.ts): channel
// replies from many rooms of one bot, against Discord's REST stand-in answering 429s with Discord's
// headers (scripted, or enforcing a bucket and the global limit itself). What is asserted is what
// Discord and the people see: every reply arrives, in order per room, and how many requests the
// stand-in had to refuse. Speed is measured in bench/discord.ts, never asserted here.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { DiscordMessageDelivery } from "../../../src/clients/discord/message-delivery.ts";
import { createLocalLimiter } from "../../../src/clients/discord/rest-limiter.ts";
import { createDiscordRest } from "../../../src/clients/discord/rest.ts";
import { enqueueTurn } from "../../../src/objects/conversation/room-client.ts";
import { DiscordRateLimits } from "../../../src/rate-limits/discord-buckets.ts";
import { createTestAgent } from "../../helpers/api.ts";
import { snowflake, useDiscordStandIns } from "../../helpers/discord.ts";
import { discordRoom, settledJournal } from "../../helpers/room-journal.ts";
import type { DiscordCall } from "../../stand-ins/discord-stand-in.ts";

const { model, discord } = useDiscordStandIns();

/** The model answers each message with `re: <its marker>`. */
function echoMarkers(): void {
  model.respondWith((call) => {
    const text = JSON.stringify(call.messages.at(-1) ?? {});
    return { text: `re: ${/m-\d+-\d+/.exec(text)?.[0] ?? "?"}` };
  });
}

/** A message read on the Gateway, @mentioning the bot, handed to the channel's room. */
async function mention(agentId: string, channel: string, marker: string): Promise<void> {
  const messageId = snowflake();
  const delivery: DiscordMessageDelivery = {
    kind: "discord-message",
    channelId: channel,
    messageId,
    addressed: true,
  };
  await enqueueTurn(env, {
    idempotencyKey: `discord-msg:${messageId}`,
    input: {
      turnId: crypto.randomUUID(),
      agentId,
      roomId: `discord:${channel}`,
      userId: "discord:700000000000000001",
      userName: "Dana",
      text: `please answer ${marker}`,
      attachments: [],
      source: "discord",
      isDirect: false,
      mentioned: true,
      fromBot: false,
      receivedAt: Date.now(),
      principal: {
        kind: "member",
        platform: "discord",
        userId: "discord:700000000000000001",
        manager: false,
        owner: false,
        guildId: "900000000000000001",
      },
    },
    delivery,
  });
}

const replies = (calls: readonly DiscordCall[], channel: string): string[] =>
  calls
    .filter((c) => c.method === "POST" && c.path.endsWith(`/channels/${channel}/messages`))
    .map((c) => String(c.body.content));

/** Room `a` (agent `agents[a]` in `channels[a]`) is sent `each` mentions, one after another. */
async function converse(channels: string[], agents: string[], each: number): Promise<void> {
  await Promise.all(
    agents.map(async (agentId, a) => {
      for (let i = 0; i < each; i++) await mention(agentId, channels[a]!, `m-${a}-${i}`);
    }),
  );
}

/** Waits until every room has answered and handed over all `each` turns (nothing left to send). */
async function settled(channels: string[], agents: string[], each: number): Promise<void> {
  await Promise.all(
    agents.map(async (agentId, a) => {
      const rows = await settledJournal(discordRoom(agentId, channels[a]!), each, 60_000);
      expect(rows.map((row) => row.status)).toEqual(Array(each).fill("evaluated"));
    }),
  );
}

describe("Discord rate limits: 429s (Discord docs, Rate Limits)", () => {
  it("loses no reply in a burst of route and global 429s, and keeps each room's replies in order", async () => {
    echoMarkers();
    const channels = Array.from({ length: 10 }, () => snowflake());
    const agents = await Promise.all(channels.map(() => createTestAgent()));
    const routeLimited = {
      status: 429,
      path: "/messages",
      body: { message: "You are being rate limited.", retry_after: 0.2, global: false },
      headers: {
        "x-ratelimit-bucket": "msgs",
        "x-ratelimit-limit": "5",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset-after": "0.2",
        "x-ratelimit-scope": "user",
        "retry-after": "1",
      },
    };
    const globallyLimited = {
      status: 429,
      path: "/messages",
      body: { message: "You are being rate limited.", retry_after: 0.3, global: true },
      headers: { "x-ratelimit-global": "true", "x-ratelimit-scope": "global", "retry-after": "1" },
    };
    discord.failNext(
      ...Array.from({ length: 15 }, (_, i) => (i % 3 === 0 ? globallyLimited : routeLimited)),
    );
    await converse(channels, agents, 3);
    for (const [a, channel] of channels.entries()) {
      await expect
        .poll(() => replies(discord.calls, channel), { timeout: 60_000, interval: 100 })
        .toEqual([`re: m-${a}-0`, `re: m-${a}-1`, `re: m-${a}-2`]);
    }
    await settled(channels, agents, 3);
    expect(discord.attempts.length - discord.calls.length).toBe(15);
  }, 120_000);
});

describe("Discord rate limits: per-route buckets shared across rooms (X-RateLimit-Bucket)", () => {
  it("two rooms replying in one channel slow down together instead of being refused", async () => {
    echoMarkers();
    const channel = snowflake();
    const agents = [await createTestAgent(), await createTestAgent()];
    discord.emulateRateLimits({ bucketLimit: 3, bucketWindowMs: 1_000, globalPerSecond: 50 });
    await converse([channel, channel], agents, 4);
    await expect
      .poll(() => replies(discord.calls, channel).length, { timeout: 60_000, interval: 100 })
      .toBe(8);
    const sent = replies(discord.calls, channel);
    for (const a of [0, 1])
      expect(sent.filter((r) => r.startsWith(`re: m-${a}-`))).toEqual(
        [0, 1, 2, 3].map((i) => `re: m-${a}-${i}`),
      );
    await settled([channel, channel], agents, 4);
    // Both rooms learned the bucket from the same object: Discord had nothing to refuse.
    expect(discord.refused.bucket).toBe(0);
  }, 120_000);

  it("two senders sharing what they learned are refused less often than two that do not", async () => {
    const limits = { bucketLimit: 3, bucketWindowMs: 1_000, globalPerSecond: 50 };
    /** Two senders post six messages each in a fresh channel; returns the 429s Discord sent. */
    const burst = async (states: [DiscordRateLimits, DiscordRateLimits]): Promise<number> => {
      discord.emulateRateLimits(limits);
      const channel = snowflake();
      await Promise.all(
        states.map(async (state) => {
          const rest = createDiscordRest({
            baseUrl: env.DISCORD_API_BASE,
            botToken: env.DISCORD_BOT_TOKEN,
            limiter: createLocalLimiter(state),
          });
          for (let i = 0; i < 6; i++) await rest.channelMessage(channel, { content: `n${i}` });
        }),
      );
      expect(replies(discord.calls, channel)).toHaveLength(12);
      return discord.refused.bucket;
    };
    const shared = new DiscordRateLimits();
    const withSharing = await burst([shared, shared]);
    const withoutSharing = await burst([new DiscordRateLimits(), new DiscordRateLimits()]);
    expect(withSharing).toBeLessThan(withoutSharing);
  }, 120_000);
});

describe("Discord rate limits: the global limit (50 requests a second per bot)", () => {
  it("never sends Discord more than 50 requests in a second across 10 rooms replying to 120 messages", async () => {
    echoMarkers();
    const channels = Array.from({ length: 10 }, () => snowflake());
    const agents = await Promise.all(channels.map(() => createTestAgent()));
    discord.emulateRateLimits({ bucketLimit: 1_000, bucketWindowMs: 1_000, globalPerSecond: 50 });
    await converse(channels, agents, 12);
    for (const [a, channel] of channels.entries()) {
      await expect
        .poll(() => replies(discord.calls, channel), { timeout: 90_000, interval: 200 })
        .toEqual(Array.from({ length: 12 }, (_, i) => `re: m-${a}-${i}`));
    }
    await settled(channels, agents, 12);
    expect(discord.busiestSecond()).toBeLessThanOrEqual(50);
    expect(discord.refused.global).toBe(0);
  }, 180_000);
});
