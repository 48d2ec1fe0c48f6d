// Discord conversations over the Gateway, end to end: the worker's DiscordGateway object connects
// to the Gateway stand-in on loopback (real protocol: HELLO, heartbeats and ACKs, IDENTIFY/READY,
// sequenced DISPATCH, RESUME/RESUMED, INVALID_SESSION, op 7, close codes), hands messages to the
// same rooms as /chat, and the replies reach Discord's REST stand-in. Grouped by the Gateway
// docs' headings; one connection serves the whole file, each test in its own channel.
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DM_CLOSED_TEXT } from "../../src/clients/chat/dm-notice.ts";
import { messageTurnKey } from "../../src/clients/discord/gateway/message-intake.ts";
import { shardName } from "../../src/clients/discord/gateway/shard-plan.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import {
  APP_ID,
  click,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../helpers/discord.ts";
import {
  control,
  dispatch,
  gatewayPeer,
  gatewayState,
  messageEvent,
  STAND_IN_BOT,
  waitFor,
  waitForReady,
} from "../helpers/gateway.ts";
import { handedOver } from "../helpers/gateway-handoff.ts";
import { discordRoom, journalRows, settledJournal } from "../helpers/room-journal.ts";
import type { DiscordCall } from "../stand-ins/discord-stand-in.ts";

const { model, discord, files } = useDiscordStandIns();
const OWNER = "610000000000000001";
/** Unsharded, the one connection is shard 0 of 1. */
const SHARD = shardName(0, 1);

const repliesIn = (channel: string): DiscordCall[] =>
  discord.calls.filter(
    (call) => call.method === "POST" && call.path === `/api/v10/channels/${channel}/messages`,
  );
const typingIn = (channel: string) =>
  discord.calls.filter((call) => call.path === `/api/v10/channels/${channel}/typing`);
const waitForReplies = (channel: string, count: number) =>
  waitFor(`${count} replies in ${channel}`, () => {
    const replies = repliesIn(channel);
    return replies.length >= count ? replies : null;
  });
const repliedTo = (call: DiscordCall) =>
  (call.body.message_reference as { message_id?: string } | undefined)?.message_id;
/**
 * The final state of a channel once the Gateway handed over the events numbered `seqs`: its room's
 * turns, each settled (evaluated or failed, nothing left to send), by message.
 */
async function settledTurns(channel: string, seqs: number[], turns = 1) {
  await handedOver(seqs);
  const rows = await settledJournal(discordRoom(defaultAgent, channel), turns);
  return rows.map((row) => ({ key: row.idempotencyKey, status: row.status }));
}
const turnOf = (event: { d: { id: string } }, status = "evaluated") => ({
  key: messageTurnKey(event.d.id),
  status,
});
const opsReceived = async (op: number) =>
  (await gatewayState()).received.filter((record) => record.op === op);

let defaultAgent: string;

beforeAll(async () => {
  discord.setGateway(gatewayPeer().url);
  await control("reset");
  defaultAgent = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
  const config = await api("POST", "/clients/discord/config", {
    body: { defaultAgentId: defaultAgent, allowedChannels: [] },
  });
  expect(config.status).toBe(200);
  // The worker's first request starts the Gateway object.
  await api("GET", "/health", { token: null });
  await waitForReady();
});

describe("Gateway: handshake (HELLO, IDENTIFY, READY)", () => {
  it("identifies once with the intents it needs, then heartbeats with the last sequence", async () => {
    const [identify] = await opsReceived(2);
    expect(identify?.d).toMatchObject({
      token: "test-bot-token-not-real",
      // GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT
      intents: 1 | 512 | 4096 | 32768,
    });
    const beats = await waitFor("two heartbeats", async () => {
      const found = await opsReceived(1);
      return found.length >= 2 ? found : null;
    });
    expect(typeof beats.at(-1)?.d).toBe("number");
  });

  it("shows the connection on /health", async () => {
    const health = await json<{ gateway: Record<string, unknown> }>(
      await api("GET", "/health", { token: null }),
    );
    expect(health.gateway).toMatchObject({ state: "ready", connected: true, stoppedReason: null });
    expect(JSON.stringify(health)).not.toContain("test-bot-token");
  });
});

describe("Gateway: messages into rooms", () => {
  it("answers a mention once, as a Discord reply that pings nobody, typing meanwhile", async () => {
    const channel = snowflake();
    model.respondWith(() => ({ text: "Lisbon." }));
    const event = messageEvent(channel, "what's the capital of Portugal?", { mention: true });
    const seqs = await dispatch(event);
    const [reply] = await waitForReplies(channel, 1);
    expect(reply!.body).toEqual({
      content: "Lisbon.",
      message_reference: { message_id: event.d.id, channel_id: channel, fail_if_not_exists: false },
      allowed_mentions: { parse: [], replied_user: false },
    });
    expect(typingIn(channel).length).toBeGreaterThanOrEqual(1);
    expect(typingIn(channel)[0]!.at).toBeLessThanOrEqual(reply!.at);
    const prompt = model.calls.at(-1)!.body.messages as Array<{ role: string; content: unknown }>;
    // The bot's mention reads as its name.
    expect(JSON.stringify(prompt.at(-1))).toContain("@edge-bot what's the capital of Portugal?");
    // Once the room's one turn is settled, the stand-in's record is final: one reply.
    expect(await settledTurns(channel, seqs)).toEqual([turnOf(event)]);
    expect(repliesIn(channel)).toHaveLength(1);
    const history = await json<{ messages: Array<{ text: string; userId: string | null }> }>(
      await api("GET", `/agents/${defaultAgent}/rooms/discord:${channel}/messages`),
    );
    expect(history.messages.map((m) => m.text)).toEqual([
      "Lisbon.",
      "@edge-bot what's the capital of Portugal?",
    ]);
  });

  it("stores a message that mentions nobody without answering it (respond mode `mentions`)", async () => {
    const channel = snowflake();
    const before = model.calls.length;
    const chatter = messageEvent(channel, "anyone up for lunch?");
    const seqs = await dispatch(chatter);
    // The room decided about the message and is done with it: then nothing was sent.
    expect(await settledTurns(channel, seqs)).toEqual([turnOf(chatter)]);
    const page = await json<{ messages: Array<{ text: string }> }>(
      await api("GET", `/agents/${defaultAgent}/rooms/discord:${channel}/messages`),
    );
    expect(page.messages.map((m) => m.text)).toEqual(["anyone up for lunch?"]);
    expect(repliesIn(channel)).toHaveLength(0);
    expect(typingIn(channel)).toHaveLength(0);
    // Declined by the rules: no model call, not even the small one.
    expect(model.calls.length).toBe(before);
  });

  it("answers a reply to one of the bot's messages, and a mention of its role", async () => {
    const channel = snowflake();
    const reply = messageEvent(channel, "and Spain?", { replyTo: STAND_IN_BOT.id });
    const role = messageEvent(channel, "roll call", { mentionRole: true });
    await dispatch(reply, role);
    const answers = await waitForReplies(channel, 2);
    expect(answers.map(repliedTo)).toEqual([reply.d.id, role.d.id]);
  });

  it("never makes a turn of the bot's own messages", async () => {
    const channel = snowflake();
    const own = messageEvent(channel, "hello", { user: STAND_IN_BOT.id, mention: true });
    const marker = messageEvent(channel, "ping", { mention: true });
    const seqs = await dispatch(own, marker);
    const answers = await waitForReplies(channel, 1);
    // Both events handed over, and the room holds the marker's turn alone.
    expect(await settledTurns(channel, seqs)).toEqual([turnOf(marker)]);
    expect(repliesIn(channel)).toHaveLength(1);
    expect(repliedTo(answers[0]!)).toBe(marker.d.id);
    const page = await json<{ messages: Array<{ text: string }> }>(
      await api("GET", `/agents/${defaultAgent}/rooms/discord:${channel}/messages`),
    );
    expect(page.messages.map((m) => m.text)).not.toContain("@edge-bot hello");
  });

  it("answers a replayed event once (same message id, a second dispatch)", async () => {
    const channel = snowflake();
    const event = messageEvent(channel, "once please", { mention: true });
    const seqs = await dispatch(event, event);
    // Both dispatches handed to the room: one turn for the message id, settled, and one reply.
    expect(await settledTurns(channel, seqs)).toEqual([turnOf(event)]);
    expect(repliesIn(channel)).toHaveLength(1);
  });

  it("reads attachments through the attachment path", async () => {
    const channel = snowflake();
    files.set("notes.txt", {
      body: new TextEncoder().encode("the launch code is 1234"),
      type: "text/plain",
      downloads: 0,
    });
    const event = messageEvent(channel, "what's in the file?", {
      mention: true,
      attachments: [
        {
          url: "http://discord.test/cdn/notes.txt",
          filename: "notes.txt",
          content_type: "text/plain",
        },
      ],
    });
    await dispatch(event);
    await waitForReplies(channel, 1);
    expect(JSON.stringify(model.calls.at(-1)!.body)).toContain("the launch code is 1234");
  });

  it("retries a reply Discord refused with 429 from the room's queue", async () => {
    const channel = snowflake();
    discord.failNext({
      status: 429,
      body: { retry_after: 0.05, message: "slow down" },
      path: `/channels/${channel}/messages`,
    });
    await dispatch(messageEvent(channel, "hi", { mention: true }));
    await waitForReplies(channel, 1);
    expect(discord.attempts.filter((a) => a.path.endsWith(`/${channel}/messages`))).toHaveLength(2);
  });
});

describe("Gateway: direct messages", () => {
  it("answers an owner's DM and makes no turn of a stranger's (directMessages: owners)", async () => {
    const ownerDm = snowflake();
    const strangerDm = snowflake();
    const owners = messageEvent(ownerDm, "hi bot", { guild: null, user: OWNER });
    const seqs = await dispatch(
      messageEvent(strangerDm, "hi bot", { guild: null, user: "710000000000000009" }),
      owners,
    );
    expect(await settledTurns(ownerDm, seqs)).toEqual([turnOf(owners)]);
    expect(repliesIn(ownerDm)).toHaveLength(1);
    // The stranger's event was handed over too (settledTurns waited for both): no turn, and
    // one sentence saying DMs are closed; their next DM gets silence.
    expect(await journalRows(discordRoom(defaultAgent, strangerDm))).toEqual([]);
    await waitForReplies(strangerDm, 1);
    expect(repliesIn(strangerDm).map((call) => (call.body as { content: string }).content)).toEqual(
      [DM_CLOSED_TEXT],
    );
    const again = messageEvent(strangerDm, "hello?", { guild: null, user: "710000000000000009" });
    const ownerAgain = messageEvent(ownerDm, "and you?", { guild: null, user: OWNER });
    await settledTurns(ownerDm, await dispatch(again, ownerAgain), 2);
    expect(repliesIn(strangerDm)).toHaveLength(1);
    const page = await json<{ messages: unknown[] }>(
      await api("GET", `/agents/${defaultAgent}/rooms/discord:${strangerDm}/messages`),
    );
    expect(page.messages).toHaveLength(0);
  });
});

describe("Gateway: edits and deletions (MESSAGE_UPDATE, MESSAGE_DELETE)", () => {
  it("answers the edited text of a message still waiting, and drops a deleted one", async () => {
    const channel = snowflake();
    // The first turn's model answers slowly: the two after it wait in the room's journal.
    model.script({ text: "one", delayMs: 1_500 });
    const first = messageEvent(channel, "first", { mention: true });
    const edited = messageEvent(channel, "typo", { mention: true });
    const deleted = messageEvent(channel, "never mind", { mention: true });
    const calls = model.calls.length;
    await dispatch(first, edited, deleted);
    await waitFor("the first model call", () => model.calls.length > calls);
    const seqs = await dispatch(
      {
        t: "MESSAGE_UPDATE",
        d: { id: edited.d.id, channel_id: channel, content: `<@${STAND_IN_BOT.id}> fixed text` },
      },
      { t: "MESSAGE_DELETE", d: { id: deleted.d.id, channel_id: channel } },
    );
    // The deleted message's turn is dropped (failed, nothing to send); the other two answered.
    expect(await settledTurns(channel, seqs, 3)).toEqual([
      turnOf(first),
      turnOf(edited),
      turnOf(deleted, "failed"),
    ]);
    expect(repliesIn(channel).map(repliedTo)).toEqual([first.d.id, edited.d.id]);
    expect(JSON.stringify(model.calls.at(-1)!.body)).toContain("@edge-bot fixed text");
    const page = await json<{ messages: Array<{ text: string }> }>(
      await api("GET", `/agents/${defaultAgent}/rooms/discord:${channel}/messages`),
    );
    expect(page.messages.map((m) => m.text)).not.toContain("@edge-bot never mind");
  });

  it("edits the stored text of a message already handled, without answering again", async () => {
    const channel = snowflake();
    const chatter = messageEvent(channel, "meet at 5");
    const seqs = await dispatch(chatter);
    const stored = () =>
      api("GET", `/agents/${defaultAgent}/rooms/discord:${channel}/messages`).then((r) =>
        json<{ messages: Array<{ text: string }> }>(r),
      );
    await waitFor("stored", async () => (await stored()).messages.length === 1);
    seqs.push(
      ...(await dispatch({
        t: "MESSAGE_UPDATE",
        d: { id: chatter.d.id, channel_id: channel, content: "meet at 6" },
      })),
    );
    await waitFor("edited", async () => (await stored()).messages[0]?.text === "meet at 6");
    // The edit was handed over and the room is done: still the one turn, and no reply.
    expect(await settledTurns(channel, seqs)).toEqual([turnOf(chatter)]);
    expect(repliesIn(channel)).toHaveLength(0);
  });
});

describe("Gateway: settings per server and channel", () => {
  const SERVER = "900000000000000077";
  const configure = async (body: Record<string, unknown>) => {
    const response = await api("POST", "/clients/discord/config", {
      body: { defaultAgentId: defaultAgent, allowedChannels: [], ...body },
    });
    expect(response.status).toBe(200);
  };

  it("a server's agent and respond policy: chatter answered there by that agent; a channel set to never answers no mention", async () => {
    const serverAgent = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const quiet = snowflake();
    await configure({
      guilds: { [SERVER]: { agentId: serverAgent, respond: "always" } },
      channels: { [quiet]: { respond: "never" } },
    });
    try {
      const channel = snowflake();
      model.script({ text: "Answered without a mention." });
      const chatter = messageEvent(channel, "anyone around?", { guild: SERVER });
      await handedOver(await dispatch(chatter));
      await settledJournal(discordRoom(serverAgent, channel));
      const [reply] = await waitForReplies(channel, 1);
      expect(reply!.body.content).toBe("Answered without a mention.");
      expect(await journalRows(discordRoom(defaultAgent, channel))).toEqual([]);

      const before = model.callsFor("test-primary").length;
      const mention = messageEvent(quiet, "are you there?", { guild: SERVER, mention: true });
      await handedOver(await dispatch(mention));
      // Journalled (stored as context) and settled, with no model call and nothing sent.
      await settledJournal(discordRoom(serverAgent, quiet));
      expect(repliesIn(quiet)).toEqual([]);
      expect(model.callsFor("test-primary").length).toBe(before);
    } finally {
      await configure({});
    }
  });

  it("a thread takes its parent channel's allow-list entry and settings (parent learnt from THREAD_CREATE)", async () => {
    const parent = snowflake();
    const thread = snowflake();
    const elsewhere = snowflake();
    await configure({ allowedChannels: [parent], channels: { [parent]: { respond: "always" } } });
    try {
      await handedOver(
        await dispatch({
          t: "THREAD_CREATE",
          d: { id: thread, parent_id: parent, guild_id: SERVER, type: 11, name: "plans" },
        }),
      );
      model.script({ text: "Answered in the thread." });
      await handedOver(await dispatch(messageEvent(thread, "thoughts?", { guild: SERVER })));
      await settledJournal(discordRoom(defaultAgent, thread));
      const [reply] = await waitForReplies(thread, 1);
      expect(reply!.body.content).toBe("Answered in the thread.");
      // A channel that is neither listed nor a listed channel's thread stays unanswered.
      await handedOver(
        await dispatch(messageEvent(elsewhere, "hello?", { guild: SERVER, mention: true })),
      );
      expect(await journalRows(discordRoom(defaultAgent, elsewhere))).toEqual([]);
    } finally {
      await configure({});
    }
  });

  it("a role-gated tool is offered to a member with its role and not to one without", async () => {
    const role = "555000000000000077";
    await configure({ guilds: { [SERVER]: { toolRoles: { current_time: [role] } } } });
    try {
      const offered = () =>
        (model.callsFor("test-primary").at(-1)!.tools ?? []).map(
          (tool) => (tool as { function: { name: string } }).function.name,
        );
      const channel = snowflake();
      const without = messageEvent(channel, "what time is it?", { guild: SERVER, mention: true });
      model.script({ text: "No clock for you." });
      await handedOver(await dispatch(without));
      await waitForReplies(channel, 1);
      expect(offered()).not.toContain("current_time");
      expect(offered()).toContain("remember");
      const withRole = messageEvent(channel, "and now?", { guild: SERVER, mention: true });
      (withRole.d as Record<string, unknown>).member = { roles: [role] };
      model.script({ text: "Here is the clock." });
      await handedOver(await dispatch(withRole));
      await waitForReplies(channel, 2);
      expect(offered()).toContain("current_time");
    } finally {
      await configure({});
    }
  });

  it("a channel's tool list is all a mention there is offered", async () => {
    const channel = snowflake();
    await configure({ channels: { [channel]: { tools: ["current_time"] } } });
    try {
      const offered = () =>
        (model.callsFor("test-primary").at(-1)!.tools ?? []).map(
          (tool) => (tool as { function: { name: string } }).function.name,
        );
      const message = messageEvent(channel, "what can you do?", { guild: SERVER, mention: true });
      model.script({ text: "I can tell the time." });
      await handedOver(await dispatch(message));
      await waitForReplies(channel, 1);
      expect(offered()).toEqual(["current_time"]);
    } finally {
      await configure({});
    }
  });

  it("a member over the server's daily member budget gets one notice and no model call; another member is answered", async () => {
    const server = "900000000000000078";
    const [ana, ben] = ["700000000000000101", "700000000000000102"];
    // One answer (~300 tokens at the stand-in) uses the budget up.
    await configure({ guilds: { [server]: { memberDailyTokens: 50 } } });
    try {
      const channel = snowflake();
      const from = (user: string, text: string) =>
        messageEvent(channel, text, { guild: server, mention: true, user });
      model.script({ text: "First answer." });
      await handedOver(await dispatch(from(ana, "hello")));
      await settledJournal(discordRoom(defaultAgent, channel));
      await waitForReplies(channel, 1);
      const calls = model.callsFor("test-primary").length;

      await handedOver(await dispatch(from(ana, "again?")));
      const [, notice] = await waitForReplies(channel, 2);
      expect(notice!.body.content).toBe("Your budget for today is used; it resets at 00:00 UTC.");
      await handedOver(await dispatch(from(ana, "and again?")));
      await settledJournal(discordRoom(defaultAgent, channel), 3);
      // One notice a day: the third message is stored and left unanswered.
      expect(repliesIn(channel)).toHaveLength(2);
      expect(model.callsFor("test-primary").length).toBe(calls);

      model.script({ text: "Ben's answer." });
      await handedOver(await dispatch(from(ben, "my turn")));
      const replies = await waitForReplies(channel, 3);
      expect(replies[2]!.body.content).toBe("Ben's answer.");
      expect(model.callsFor("test-primary").length).toBe(calls + 1);
    } finally {
      await configure({});
    }
  });

  it("a server over its daily budget tells each member once and asks the model nothing", async () => {
    const server = "900000000000000079";
    const [ana, ben] = ["700000000000000103", "700000000000000104"];
    await configure({ guilds: { [server]: { dailyTokens: 50 } } });
    try {
      const channel = snowflake();
      const from = (user: string, text: string) =>
        messageEvent(channel, text, { guild: server, mention: true, user });
      model.script({ text: "First answer." });
      await handedOver(await dispatch(from(ana, "hello")));
      await settledJournal(discordRoom(defaultAgent, channel));
      const calls = model.callsFor("test-primary").length;
      await handedOver(await dispatch(from(ben, "me too?"), from(ben, "still?")));
      await settledJournal(discordRoom(defaultAgent, channel), 3);
      const replies = await waitForReplies(channel, 2);
      expect(replies[1]!.body.content).toBe(
        "This server's budget for today is used; it resets at 00:00 UTC.",
      );
      expect(repliesIn(channel)).toHaveLength(2);
      expect(model.callsFor("test-primary").length).toBe(calls);
      // The same members elsewhere are not held to this server's budget.
      const other = snowflake();
      model.script({ text: "Answered elsewhere." });
      await handedOver(
        await dispatch(
          messageEvent(other, "hi", { guild: "900000000000000080", mention: true, user: ben }),
        ),
      );
      const [reply] = await waitForReplies(other, 1);
      expect(reply!.body.content).toBe("Answered elsewhere.");
    } finally {
      await configure({});
    }
  });
});

describe("Gateway: tool approval in the channel", () => {
  it("posts Approve / Deny as a reply to the message, and answers after the click", async () => {
    const channel = snowflake();
    await useAgentIn(channel, { toolApproval: ["remember"] });
    model.script(
      { toolCalls: [{ name: "remember", arguments: { fact: "likes tea" } }] },
      { text: "Noted." },
    );
    const event = messageEvent(channel, "remember I like tea", { mention: true });
    await dispatch(event);
    const [prompt] = await waitForReplies(channel, 1);
    expect(repliedTo(prompt!)).toBe(event.d.id);
    const buttons = JSON.stringify(prompt!.body.components);
    const approve = /"custom_id":"(ap:y:[^"]+)"/.exec(buttons)![1]!;
    const answer = await post(click(channel, "700000000000000001", approve));
    expect(answer.status).toBe(200);
    const [, reply] = await waitForReplies(channel, 2);
    expect(reply!.body.content).toBe("Noted.");
    expect(repliedTo(reply!)).toBe(event.d.id);
  });
});

describe("Gateway: resuming (RESUME, RESUMED, op 7, INVALID_SESSION, heartbeat ACKs)", () => {
  it("resumes a dropped connection and answers the messages sent meanwhile once each", async () => {
    const channel = snowflake();
    const { sessionId } = await gatewayState();
    await control("drop");
    const missed = [1, 2, 3].map((n) => messageEvent(channel, `missed ${n}`, { mention: true }));
    const seqs = await dispatch(...missed);
    expect(await settledTurns(channel, seqs, 3)).toEqual(missed.map((m) => turnOf(m)));
    expect(repliesIn(channel).map(repliedTo)).toEqual(missed.map((m) => m.d.id));
    const resumes = await opsReceived(6);
    expect(resumes.at(-1)?.d).toMatchObject({ session_id: sessionId });
    expect((await gatewayState()).sessionId).toBe(sessionId);
  });

  it("resumes at once when Discord asks for a reconnect (op 7)", async () => {
    const before = (await opsReceived(6)).length;
    await control("reconnect");
    await waitFor("a RESUME", async () => (await opsReceived(6)).length > before);
    await waitForReady();
  });

  it("reconnects and resumes when a heartbeat is not acknowledged", async () => {
    const before = await gatewayState();
    await control("settings", { ackHeartbeats: false });
    await waitFor(
      "a new connection",
      async () => (await gatewayState()).connections > before.connections,
    );
    await control("settings", { ackHeartbeats: true });
    await waitFor("a RESUME", async () => (await opsReceived(6)).length > 0);
    const ready = await waitForReady();
    expect(ready.sessionId).toBe(before.sessionId);
  });

  it("identifies anew after an invalid session, and goes on answering", async () => {
    const identifies = (await opsReceived(2)).length;
    const { sessionId } = await gatewayState();
    await control("invalidate", { resumable: false });
    await waitFor("a new IDENTIFY", async () => (await opsReceived(2)).length > identifies, 20_000);
    const ready = await waitForReady();
    expect(ready.sessionId).not.toBe(sessionId);
    const channel = snowflake();
    await dispatch(messageEvent(channel, "still there?", { mention: true }));
    await waitForReplies(channel, 1);
  });

  it("reconnects and resumes after the object is evicted, answering what it missed once", async () => {
    const gateway = env.GATEWAY!.getByName(SHARD);
    const { sessionId, connections } = await gatewayState();
    // ctx.abort() resets the object as an eviction, a deploy or a crash does: only storage is left.
    // (evictDurableObject waits for in-flight work, and an open WebSocket never finishes.)
    await runInDurableObject(gateway, (_instance, ctx) => {
      setTimeout(() => {
        try {
          ctx.abort("simulated eviction");
        } catch {
          // abort() throws in the object that called it, as a crash would.
        }
      }, 0);
    });
    await waitFor("the connection closed", async () => !(await gatewayState()).connected);
    const channel = snowflake();
    const missed = messageEvent(channel, "while you were out", { mention: true });
    const seqs = await dispatch(missed);
    // The watchdog alarm wakes the object, which resumes the stored session (a stub of an aborted
    // object stays broken: a new one reaches the new instance).
    await runDurableObjectAlarm(env.GATEWAY!.getByName(SHARD));
    const ready = await waitForReady();
    expect(ready.connections).toBeGreaterThan(connections);
    expect(ready.sessionId).toBe(sessionId);
    expect(await settledTurns(channel, seqs)).toEqual([turnOf(missed)]);
    expect(repliesIn(channel)).toHaveLength(1);
  });
});

describe("Gateway: close codes", () => {
  it("stops for good on 4004 (authentication failed) and says so on /health", async () => {
    const connections = (await gatewayState()).connections;
    await control("close", { code: 4004, reason: "Authentication failed" });
    // The final state: the refusal stored, and nothing left armed that could reconnect: no
    // watchdog alarm, no reconnect timer, no socket.
    const gateway = () => env.GATEWAY!.getByName(SHARD);
    const armed = () =>
      runInDurableObject(gateway(), async (instance, state) => {
        const inner = instance as unknown as Record<"socket" | "reconnectTimer", unknown>;
        return {
          stopped: state.storage.kv.get("stopped") !== undefined,
          alarm: await state.storage.getAlarm(),
          socket: inner.socket,
          reconnectTimer: inner.reconnectTimer,
        };
      });
    await waitFor("the Gateway stopped", async () => {
      const now = await armed();
      return now.stopped && now.alarm === null ? now : null;
    });
    // What every request to the worker does (start the object, which arms the watchdog), then the
    // watchdog itself: neither reopens it, and nothing is left armed.
    await env.GATEWAY!.getByName(APP_ID).start();
    await runDurableObjectAlarm(gateway());
    expect(await armed()).toEqual({
      stopped: true,
      alarm: null,
      socket: null,
      reconnectTimer: null,
    });
    expect((await gatewayState()).connections).toBe(connections);
    const health = await api("GET", "/health", { token: null });
    expect(health.status).toBe(503);
    const body = await json<{ gateway: { state: string; stoppedReason: string } }>(health);
    expect(body.gateway.state).toBe("stopped");
    expect(body.gateway.stoppedReason).toContain("4004");
  });
});
