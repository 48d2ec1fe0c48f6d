// autoThread over the Gateway, end to end: with `autoThread` on for a channel (or its server), a
// mention makes the bot start a thread from the message (Discord REST `POST
// /channels/{channel}/messages/{message}/threads`, against the REST stand-in), the turn runs in
// the thread's room (`discord:<thread id>`) and the answer is posted in the thread. Its own Gateway
// stand-in (test/setup/gateway-peer.ts), so this file's connection is nobody else's.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { threadName } from "../../src/clients/discord/gateway/auto-thread.ts";
import {
  GatewayMessage,
  messageTurnKey,
} from "../../src/clients/discord/gateway/message-intake.ts";
import { shardName } from "../../src/clients/discord/gateway/shard-plan.ts";
import { placeAutoThread } from "../../src/clients/discord/place-settings.ts";
import { DiscordConfig } from "../../src/db/stores/discord-settings-store.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { snowflake, useDiscordStandIns } from "../helpers/discord.ts";
import { handedOver } from "../helpers/gateway-handoff.ts";
import { messageEvent, peerControls, STAND_IN_BOT } from "../helpers/gateway.ts";
import { discordRoom, journalRows, settledJournal } from "../helpers/room-journal.ts";
import type { DiscordCall } from "../stand-ins/discord-stand-in.ts";

const { model, discord } = useDiscordStandIns();
const peer = inject("gatewayThreadPeer");
const SERVER = "900000000000000001";

const { control, dispatch, waitForSession } = peerControls(() => peer);

const configure = async (body: Record<string, unknown>) => {
  const response = await api("POST", "/clients/discord/config", {
    body: { defaultAgentId: agent, allowedChannels: [], ...body },
  });
  expect(response.status).toBe(200);
};
const postsIn = (channel: string): DiscordCall[] =>
  discord.calls.filter(
    (call) => call.method === "POST" && call.path === `/api/v10/channels/${channel}/messages`,
  );
const threadStarts = (): DiscordCall[] =>
  discord.attempts.filter((call) => call.method === "POST" && call.path.endsWith("/threads"));
/** The one turn of the message, settled in `channel`'s room: the stand-in's record is then final. */
async function settledIn(channel: string, seqs: number[]) {
  await handedOver(seqs);
  const rows = await settledJournal(discordRoom(agent, channel));
  return rows.map((row) => [row.idempotencyKey, row.status]);
}

let agent: string;

beforeAll(async () => {
  discord.setGateway(peer.url);
  await control("reset");
  agent = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
  await configure({});
  // The worker's first request starts the Gateway.
  await api("GET", "/health", { token: null });
  await waitForSession();
});

describe("autoThread: a mention opens a thread (POST /channels/{id}/messages/{id}/threads)", () => {
  it("names the thread from the message, runs the turn in the thread's room and answers there", async () => {
    const channel = snowflake();
    // Allowed: the channel alone, so the thread is answered only as the channel's thread.
    await configure({ allowedChannels: [channel], channels: { [channel]: { autoThread: true } } });
    model.respondWith(() => ({ text: "Let's plan it." }));
    const event = messageEvent(channel, "  plan the\n offsite   for next week ", { mention: true });
    const thread = event.d.id;
    const seqs = await dispatch(event);
    expect(await settledIn(thread, seqs)).toEqual([[messageTurnKey(event.d.id), "evaluated"]]);
    expect(threadStarts()).toEqual([
      expect.objectContaining({
        path: `/api/v10/channels/${channel}/messages/${event.d.id}/threads`,
        body: { name: "plan the offsite for next week", auto_archive_duration: 1440 },
      }),
    ]);
    // Posted in the thread as a plain message (a reply cannot point into another channel).
    expect(postsIn(thread).map((call) => call.body)).toEqual([
      { content: "Let's plan it.", allowed_mentions: { parse: [] } },
    ]);
    expect(postsIn(channel)).toEqual([]);
    expect(await journalRows(discordRoom(agent, channel))).toEqual([]);
    const history = await json<{ messages: Array<{ text: string }> }>(
      await api("GET", `/agents/${agent}/rooms/discord:${thread}/messages`),
    );
    expect(history.messages.map((m) => m.text)).toEqual([
      "Let's plan it.",
      "@edge-bot   plan the\n offsite   for next week",
    ]);
    // The shard noted the thread's parent, so the thread takes the channel's allow-list entry.
    const parents = await runInDurableObject(
      env.GATEWAY!.getByName(shardName(0, 1)),
      (_instance, state) => state.storage.kv.get("threads"),
    );
    expect(parents).toMatchObject({ [thread]: [channel, SERVER] });

    // The conversation goes on in the thread: answered in its room, and no second thread.
    const next = messageEvent(thread, "and the budget?", { mention: true });
    const later = await dispatch(next);
    await handedOver(later);
    const rows = await settledJournal(discordRoom(agent, thread), 2);
    expect(rows.map((row) => row.idempotencyKey)).toEqual([
      messageTurnKey(event.d.id),
      messageTurnKey(next.d.id),
    ]);
    expect(postsIn(thread)).toHaveLength(2);
    expect((postsIn(thread)[1]!.body.message_reference as { message_id: string }).message_id).toBe(
      next.d.id,
    );
    expect(threadStarts()).toHaveLength(1);
  });

  it("opens no thread for a message that does not mention the bot", async () => {
    const channel = snowflake();
    await configure({ channels: { [channel]: { autoThread: true } } });
    const chatter = messageEvent(channel, "lunch at noon?");
    expect(await settledIn(channel, await dispatch(chatter))).toEqual([
      [messageTurnKey(chatter.d.id), "evaluated"],
    ]);
    expect(threadStarts()).toEqual([]);
    expect(postsIn(channel)).toEqual([]);
  });

  it("leaves a channel without autoThread as it was: a reply to the mention in the channel", async () => {
    const channel = snowflake();
    const elsewhere = snowflake();
    await configure({ channels: { [elsewhere]: { autoThread: true } } });
    model.respondWith(() => ({ text: "Right here." }));
    const mention = messageEvent(channel, "where are you?", { mention: true });
    expect(await settledIn(channel, await dispatch(mention))).toEqual([
      [messageTurnKey(mention.d.id), "evaluated"],
    ]);
    expect(threadStarts()).toEqual([]);
    expect(postsIn(channel).map((call) => call.body.message_reference)).toEqual([
      { message_id: mention.d.id, channel_id: channel, fail_if_not_exists: false },
    ]);
  });

  it("takes the server's autoThread, and a channel's false over it", async () => {
    const [threaded, plain] = [snowflake(), snowflake()];
    await configure({
      guilds: { [SERVER]: { autoThread: true } },
      channels: { [plain]: { autoThread: false } },
    });
    model.respondWith(() => ({ text: "ok" }));
    const first = messageEvent(threaded, "first", { mention: true });
    const second = messageEvent(plain, "second", { mention: true });
    await settledIn(first.d.id, await dispatch(first));
    await settledIn(plain, await dispatch(second));
    expect(threadStarts().map((call) => call.path)).toEqual([
      `/api/v10/channels/${threaded}/messages/${first.d.id}/threads`,
    ]);
    expect(postsIn(plain)).toHaveLength(1);
  });

  it("answers a redelivered mention once, in the thread it opened (Discord: 160004)", async () => {
    const channel = snowflake();
    await configure({ channels: { [channel]: { autoThread: true } } });
    model.respondWith(() => ({ text: "Once." }));
    const event = messageEvent(channel, "just once", { mention: true });
    const seqs = await dispatch(event, event);
    expect(await settledIn(event.d.id, seqs)).toEqual([[messageTurnKey(event.d.id), "evaluated"]]);
    // The second start was refused as already made; the turn and its reply are one.
    expect(threadStarts()).toHaveLength(2);
    expect(postsIn(event.d.id)).toHaveLength(1);
    expect(postsIn(channel)).toEqual([]);
  });

  it("answers in the channel when Discord refuses the thread (403, no Create Public Threads)", async () => {
    const channel = snowflake();
    await configure({ channels: { [channel]: { autoThread: true } } });
    discord.failNext({
      status: 403,
      path: "/threads",
      body: { message: "Missing Permissions", code: 50013 },
    });
    model.respondWith(() => ({ text: "Here instead." }));
    const mention = messageEvent(channel, "can you thread this?", { mention: true });
    expect(await settledIn(channel, await dispatch(mention))).toEqual([
      [messageTurnKey(mention.d.id), "evaluated"],
    ]);
    expect(threadStarts()).toHaveLength(1);
    expect(postsIn(channel).map((call) => call.body.content)).toEqual(["Here instead."]);
    expect(postsIn(mention.d.id)).toEqual([]);
  });

  it("opens nothing where the bot is told never to answer (respond: never)", async () => {
    const channel = snowflake();
    await configure({ channels: { [channel]: { autoThread: true, respond: "never" } } });
    const mention = messageEvent(channel, "hello?", { mention: true });
    expect(await settledIn(channel, await dispatch(mention))).toEqual([
      [messageTurnKey(mention.d.id), "evaluated"],
    ]);
    expect(threadStarts()).toEqual([]);
  });
});

describe("autoThread: the thread's name and the setting's place", () => {
  const message = (content: string, mentions: Array<{ id: string; username: string }> = []) =>
    GatewayMessage.parse({
      id: "1",
      channel_id: "2",
      guild_id: SERVER,
      author: { id: "3", username: "dana" },
      content,
      mentions,
    });

  it("strips the bot's, roles' and channels' mentions, names other people, cuts at a word", () => {
    expect(
      threadName(
        message(
          `<@${STAND_IN_BOT.id}> ask <@!42> about <#77> <@&88> the :tada: <:party:123> plan`,
          [{ id: "42", username: "lee" }],
        ),
        STAND_IN_BOT.id,
        "Dana",
      ),
    ).toBe("ask @lee about the :tada: :party: plan");
    const long = `<@${STAND_IN_BOT.id}> ${"word ".repeat(30)}end`;
    const name = threadName(message(long), STAND_IN_BOT.id, "Dana");
    expect(name.length).toBeLessThanOrEqual(100);
    expect(name).toBe(`${"word ".repeat(20)}`.trim());
    expect(threadName(message("x".repeat(150)), STAND_IN_BOT.id, "Dana")).toBe("x".repeat(100));
  });

  it("falls back to who is talking when only the mention is left", () => {
    expect(threadName(message(`<@${STAND_IN_BOT.id}>  `), STAND_IN_BOT.id, "Dana")).toBe(
      "Conversation with Dana",
    );
  });

  it("resolves channel, then a thread's parent, then server; off in DMs", () => {
    const config = DiscordConfig.parse({
      guilds: { [SERVER]: { autoThread: true } },
      channels: { "10": { autoThread: false }, "11": { autoThread: true } },
    });
    const at = (
      channelId: string,
      parentId: string | null = null,
      guildId: string | null = SERVER,
    ) => placeAutoThread(config, { guildId, channelId, parentId });
    expect([at("10"), at("12"), at("12", "10"), at("13", "11"), at("11", null, null)]).toEqual([
      false,
      true,
      false,
      true,
      false,
    ]);
    expect(placeAutoThread(DiscordConfig.parse({}), { guildId: SERVER, channelId: "10" })).toBe(
      false,
    );
  });
});
