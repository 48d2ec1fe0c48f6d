// The filter before the model over the Gateway, end to end: a server's `filter` (words, RE2
// patterns, a link limit, a minimum account age) declines a message before any model call; the
// message is stored in its room as a declined turn, deleted through Discord's REST stand-in when
// the action is "delete", and reported in the log channel. Its own Gateway stand-in
// (test/setup/gateway-peer.ts), so this file's connection is nobody else's.
import { beforeAll, describe, expect, inject, it } from "vitest";
import { messageTurnKey } from "../../src/clients/discord/gateway/message-intake.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { snowflake, useDiscordStandIns } from "../helpers/discord.ts";
import { handedOver } from "../helpers/gateway-handoff.ts";
import { messageEvent, peerControls, STAND_IN_GUILD, waitFor } from "../helpers/gateway.ts";
import { discordRoom, settledJournal, turnOutcomes } from "../helpers/room-journal.ts";
import type { DiscordCall } from "../stand-ins/discord-stand-in.ts";

const { model, discord } = useDiscordStandIns();
const peer = inject("gatewayFilterPeer");
const LOG_CHANNEL = "810000000000000001";
/** Discord's epoch: a snowflake's top bits are milliseconds since it. */
const DISCORD_EPOCH_MS = 1_420_070_400_000n;

const { control, dispatch, waitForSession } = peerControls(() => peer);

const configure = async (filter: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const response = await api("POST", "/clients/discord/config", {
    body: {
      defaultAgentId: agent,
      allowedChannels: [],
      guilds: { [STAND_IN_GUILD]: { filter } },
      ...extra,
    },
  });
  expect(response.status).toBe(200);
};
const repliesIn = (channel: string): DiscordCall[] =>
  discord.calls.filter(
    (call) => call.method === "POST" && call.path === `/api/v10/channels/${channel}/messages`,
  );
const deletions = (): DiscordCall[] => discord.calls.filter((call) => call.method === "DELETE");
/** The channel's turns once the Gateway handed the events over and each is settled. */
async function settledIn(channel: string, seqs: number[], turns = 1) {
  await handedOver(seqs);
  const rows = await settledJournal(discordRoom(agent, channel), turns);
  return rows.map((row) => row.idempotencyKey);
}
const stored = async (channel: string) =>
  (
    await json<{ messages: Array<{ text: string }> }>(
      await api("GET", `/agents/${agent}/rooms/discord:${channel}/messages`),
    )
  ).messages.map((message) => message.text);
/** A user id Discord would have given an account made `days` ago. */
const accountMadeDaysAgo = (days: number) =>
  String((BigInt(Date.now() - days * 86_400_000) - DISCORD_EPOCH_MS) << 22n);

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

describe("the filter before the model (MESSAGE_CREATE)", () => {
  it("stores a filtered mention as declined, with no model call, and answers the next one", async () => {
    await configure({ words: ["casino"], patterns: ["fr[e3]{2}\\s*n[i1]tro"] });
    const channel = snowflake();
    model.respondWith(() => ({ text: "Sure." }));
    const spam = messageEvent(channel, "best Casino in town", { mention: true });
    const pattern = messageEvent(channel, "FR33 N1TRO here", { mention: true });
    const fine = messageEvent(channel, "what's a casual game?", { mention: true });
    const seqs = await dispatch(spam, pattern, fine);
    expect(await settledIn(channel, seqs, 3)).toEqual(
      [spam, pattern, fine].map((event) => messageTurnKey(event.d.id)),
    );
    expect(await turnOutcomes(discordRoom(agent, channel))).toEqual([
      "ignored",
      "ignored",
      "replied",
    ]);
    // One model call, for the message the filter let through; one reply, to it.
    expect(model.calls).toHaveLength(1);
    expect(JSON.stringify(model.calls[0]!.body.messages)).not.toContain("Casino");
    expect(repliesIn(channel).map((call) => call.body.content)).toEqual(["Sure."]);
    // Both declined messages are in the room's history (the filter keeps, it does not answer).
    expect(await stored(channel)).toEqual(
      expect.arrayContaining(["@edge-bot best Casino in town", "@edge-bot FR33 N1TRO here"]),
    );
    // The default action only declines: nothing deleted, nothing reported.
    expect(deletions()).toEqual([]);
  });

  it("declines more links than maxLinks and an account younger than minAccountAgeDays", async () => {
    await configure({ maxLinks: 1, minAccountAgeDays: 30 });
    const channel = snowflake();
    model.respondWith(() => ({ text: "Hello." }));
    const links = messageEvent(channel, "see https://a.test and discord.gg/abc", { mention: true });
    const young = messageEvent(channel, "hi", { mention: true, user: accountMadeDaysAgo(2) });
    const old = messageEvent(channel, "hi", { mention: true, user: accountMadeDaysAgo(400) });
    const seqs = await dispatch(links, young, old);
    await settledIn(channel, seqs, 3);
    expect(await turnOutcomes(discordRoom(agent, channel))).toEqual([
      "ignored",
      "ignored",
      "replied",
    ]);
    expect(model.calls).toHaveLength(1);
  });

  it("deletes a filtered message through Discord's REST (action delete)", async () => {
    await configure({ words: ["casino"], action: "delete" });
    const channel = snowflake();
    const spam = messageEvent(channel, "casino night!");
    const seqs = await dispatch(spam);
    await settledIn(channel, seqs);
    const [deleted] = await waitFor("the DELETE", () => (deletions().length ? deletions() : null));
    expect(deleted).toMatchObject({
      path: `/api/v10/channels/${channel}/messages/${spam.d.id}`,
      headers: {
        authorization: "Bot test-bot-token-not-real",
        "x-audit-log-reason": "filter%3A%20word",
      },
    });
    // Stored all the same, as a declined turn.
    expect(await turnOutcomes(discordRoom(agent, channel))).toEqual(["ignored"]);
    expect(await stored(channel)).toEqual(["casino night!"]);
    expect(model.calls).toHaveLength(0);
  });

  it("reports a filtered message in the log channel, pinging nobody", async () => {
    await configure({ words: ["casino"], action: "delete", logChannelId: LOG_CHANNEL });
    const channel = snowflake();
    const long = `casino @everyone ${"x".repeat(400)}`;
    const spam = messageEvent(channel, long, { user: "700000000000000042" });
    await settledIn(channel, await dispatch(spam));
    const [report] = await waitFor("the report", () => {
      const posts = repliesIn(LOG_CHANNEL);
      return posts.length ? posts : null;
    });
    const content = String(report!.body.content);
    expect(content).toContain("<@700000000000000042>");
    expect(content).toContain(`<#${channel}>`);
    expect(content).toContain("a filtered word");
    expect(content).toContain("> casino @everyone x");
    // Quoted and cut short: 300 characters of the message and an ellipsis.
    expect(content).not.toContain("x".repeat(300));
    expect(content.endsWith("…")).toBe(true);
    expect(report!.body.allowed_mentions).toEqual({ parse: [] });
    // The report follows the deletion.
    expect(deletions()).toHaveLength(1);
  });

  it("keeps the stored message when Discord refuses the deletion and the report", async () => {
    await configure({ words: ["casino"], action: "delete", logChannelId: LOG_CHANNEL });
    const channel = snowflake();
    const spam = messageEvent(channel, "casino again");
    // Missing Manage Messages, and no access to the log channel: final answers, not retried.
    discord.failNext(
      {
        status: 403,
        path: `/messages/${spam.d.id}`,
        body: { message: "Missing Permissions", code: 50013 },
      },
      {
        status: 403,
        path: `/channels/${LOG_CHANNEL}/messages`,
        body: { message: "Missing Access", code: 50001 },
      },
    );
    await settledIn(channel, await dispatch(spam));
    await waitFor("both refusals", () =>
      discord.attempts.filter((call) => call.method === "DELETE" || call.path.includes(LOG_CHANNEL))
        .length >= 2
        ? true
        : null,
    );
    expect(await turnOutcomes(discordRoom(agent, channel))).toEqual(["ignored"]);
    expect(await stored(channel)).toEqual(["casino again"]);
    // One attempt each: a 403 is final.
    expect(discord.attempts.filter((call) => call.method === "DELETE")).toHaveLength(1);
  });

  it("opens no thread for a filtered mention where autoThread is on", async () => {
    const channel = snowflake();
    await configure({ words: ["casino"] }, { channels: { [channel]: { autoThread: true } } });
    const spam = messageEvent(channel, "casino", { mention: true });
    expect(await settledIn(channel, await dispatch(spam))).toEqual([messageTurnKey(spam.d.id)]);
    expect(discord.attempts.filter((call) => call.path.endsWith("/threads"))).toEqual([]);
    expect(await turnOutcomes(discordRoom(agent, channel))).toEqual(["ignored"]);
  });
});

describe("the filter before the model (MESSAGE_UPDATE)", () => {
  it("an answered message edited into spam leaves memory and is deleted in Discord; a clean edit stays", async () => {
    await configure({ words: ["casino"], action: "delete" });
    const channel = snowflake();
    model.script({ text: "Hi!" });
    const clean = messageEvent(channel, "hello there", { mention: true });
    await settledIn(channel, await dispatch(clean));
    await waitFor("the reply", () => (repliesIn(channel).length ? true : null));
    expect(await stored(channel)).toEqual(expect.arrayContaining(["Hi!"]));

    const edit = (text: string) => ({
      t: "MESSAGE_UPDATE",
      d: {
        id: clean.d.id,
        channel_id: channel,
        guild_id: STAND_IN_GUILD,
        content: text,
        author: { id: clean.d.author.id },
      },
    });
    await handedOver(await dispatch(edit("hello there, friend")));
    expect(await stored(channel)).toContain("hello there, friend");

    await handedOver(await dispatch(edit("join the casino now")));
    const [deleted] = await waitFor("the DELETE", () => (deletions().length ? deletions() : null));
    expect(deleted!.path).toBe(`/api/v10/channels/${channel}/messages/${clean.d.id}`);
    const kept = await stored(channel);
    expect(kept.join(" ")).not.toContain("casino");
    expect(kept).not.toContain("hello there, friend");
    // The bot's own answer stays; only the person's message went.
    expect(kept).toContain("Hi!");
  });
});
