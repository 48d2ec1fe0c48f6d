// Slack's Events API end to end: signed envelopes posted to POST /slack/events, turns in the bound
// agent's rooms, replies through the Web API stand-in. Grouped by Slack's rules: the signature,
// the events the app is sent, who is answered, and Slack's redelivery.
import { describe, expect, it } from "vitest";
import { DM_CLOSED_TEXT } from "../../../src/clients/chat/dm-notice.ts";
import { UNAVAILABLE_TEXT } from "../../../src/clients/chat/member-error.ts";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import { journalRows, settledJournal } from "../../helpers/room-journal.ts";
import {
  appMention,
  BOT_ID,
  BOT_USER,
  bindSlack,
  channelId,
  dmChannelId,
  envelope,
  messageEvent,
  messageTs,
  postSlack,
  SLACK_OWNER,
  SLACK_SECRET,
  STRANGER,
  useSlackStandIns,
} from "../../helpers/slack.ts";

const { model, slack } = useSlackStandIns();

async function agentBound(allowedChannels: string[] = []): Promise<string> {
  const agentId = await createTestAgent();
  await bindSlack(agentId, allowedChannels);
  return agentId;
}

const stored = async (agentId: string, roomId: string) =>
  (
    await json<{ messages: Array<{ text: string }> }>(
      await api("GET", `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages`),
    )
  ).messages;

const outcome = async (response: Response) => (await json<{ outcome: string }>(response)).outcome;
const postEvent = (body: string, options = {}) => postSlack("/slack/events", body, options);

describe("Slack Events API: a mention", () => {
  it("is answered once, in the thread of the message", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    model.script({ text: "Four." });
    const response = await postEvent(envelope(appMention({ channel, ts, text: "what is 2+2?" })));
    expect(response.status).toBe(200);
    expect(await outcome(response)).toBe("queued");
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
    const posted = slack.posted(channel);
    expect(posted.map((m) => [m.text, m.thread_ts])).toEqual([["Four.", ts]]);
    // Nothing the bot posts unfurls or pings.
    expect(posted[0]!.args).toMatchObject({ unfurl_links: false, link_names: false });
    // The model read the question without the bot's mention, from a person with a name.
    const prompt = JSON.stringify(model.calls.at(0)!.messages);
    expect(prompt).toContain("what is 2+2?");
    expect(prompt).not.toContain(`<@${BOT_USER}>`);
  });

  it("tells the member in neutral words when the model fails, never the model's error", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    model.script({ status: 400, body: { error: { message: "model fake-large does not exist" } } });
    await postEvent(envelope(appMention({ channel, ts, text: "are you there?" })));
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
    expect(slack.posted(channel).map((m) => m.text)).toEqual([UNAVAILABLE_TEXT]);
  });

  it("takes the same message under app_mention, message.channels and a retry as one turn", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    model.script({ text: "Once." });
    const mention = appMention({ channel, ts, text: "hello there" });
    const asMessage = messageEvent({ channel, ts, text: mention.text });
    expect(await outcome(await postEvent(envelope(mention)))).toBe("queued");
    expect(await outcome(await postEvent(envelope(asMessage)))).toBe("duplicate");
    // Slack's retry carries the same event_id and body; here a fresh envelope, same message.
    const retried = await postEvent(envelope(mention), { retryNum: 1 });
    expect(await outcome(retried)).toBe("duplicate");
    const rows = await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
    expect(rows.map((row) => row.idempotencyKey)).toEqual([`slack-msg:${channel}:${ts}`]);
    expect(slack.posted(channel).map((m) => m.text)).toEqual(["Once."]);
    expect(model.callsFor("test-primary")).toHaveLength(1);
  });

  it("answers a reply in a thread in that thread's room", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const root = messageTs();
    const ts = messageTs();
    model.script({ text: "In the thread." });
    const event = { ...appMention({ channel, ts, text: "and now?" }), thread_ts: root };
    expect(await outcome(await postEvent(envelope(event)))).toBe("queued");
    await settledJournal(roomName(agentId, `slack:${channel}:${root}`));
    expect(slack.posted(channel).map((m) => m.thread_ts)).toEqual([root]);
  });

  it("starts no turn for the bot's own message, another bot's, or a channel message without a mention", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    const own = messageEvent({ channel, ts, text: `<@${BOT_USER}> echo`, user: BOT_USER });
    const otherBot = messageEvent({
      channel,
      ts: messageTs(),
      text: `<@${BOT_USER}> hi`,
      extra: { bot_id: "B0OTHER001", subtype: "bot_message" },
    });
    const ownByBotId = { ...appMention({ channel, ts: messageTs(), text: "x" }), bot_id: BOT_ID };
    const chatter = messageEvent({ channel, ts: messageTs(), text: "lunch?" });
    for (const event of [own, otherBot, ownByBotId, chatter])
      expect(await outcome(await postEvent(envelope(event)))).toBe("skipped");
    expect(await journalRows(roomName(agentId, `slack:${channel}:${ts}`))).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });

  it("amends the stored text when the message is edited, and forgets it when deleted, without a turn", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    const roomId = `slack:${channel}:${ts}`;
    model.script({ text: "Noted." });
    const before = `<@${BOT_USER}> meet at 5`;
    await postEvent(envelope(appMention({ channel, ts, text: "meet at 5" })));
    await settledJournal(roomName(agentId, roomId));
    const changed = messageEvent({
      channel,
      ts: messageTs(),
      text: "",
      extra: {
        subtype: "message_changed",
        hidden: true,
        message: { type: "message", user: "U0ALICE001", text: `<@${BOT_USER}> meet at 6`, ts },
        previous_message: { type: "message", user: "U0ALICE001", text: before, ts },
      },
    });
    delete (changed as { user?: string }).user;
    expect(await outcome(await postEvent(envelope(changed)))).toBe("amended");
    const texts = (await stored(agentId, roomId)).map((m) => m.text);
    expect(texts).toContain("meet at 6");
    expect(texts).not.toContain("meet at 5");
    const deleted = messageEvent({
      channel,
      ts: messageTs(),
      text: "",
      extra: {
        subtype: "message_deleted",
        hidden: true,
        deleted_ts: ts,
        previous_message: { type: "message", user: "U0ALICE001", text: before, ts },
      },
    });
    delete (deleted as { user?: string }).user;
    expect(await outcome(await postEvent(envelope(deleted)))).toBe("amended");
    expect((await stored(agentId, roomId)).map((m) => m.text)).not.toContain("meet at 6");
    expect(await journalRows(roomName(agentId, roomId))).toHaveLength(1);
  });

  it("ignores a channel that is not in allowedChannels", async () => {
    const agentId = await agentBound(["C0ELSEWHERE"]);
    const channel = channelId();
    const ts = messageTs();
    const response = await postEvent(envelope(appMention({ channel, ts, text: "anyone?" })));
    expect(await outcome(response)).toBe("skipped");
    expect(await journalRows(roomName(agentId, `slack:${channel}:${ts}`))).toEqual([]);
  });

  it("serves one workspace: an event from another team starts nothing", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    const body = envelope(appMention({ channel, ts, text: "hi" }), { team_id: "T0OTHER001" });
    expect(await outcome(await postEvent(body))).toBe("other_workspace");
    expect(await journalRows(roomName(agentId, `slack:${channel}:${ts}`))).toEqual([]);
  });
});

describe("Slack Events API: direct messages (the DM policy)", () => {
  it("refuses a stranger's DM under the default policy (owners)", async () => {
    const agentId = await agentBound();
    const dm = dmChannelId();
    const event = messageEvent({
      channel: dm,
      ts: messageTs(),
      text: "hi bot",
      user: STRANGER,
      channel_type: "im",
    });
    expect(await outcome(await postEvent(envelope(event)))).toBe("dm_refused");
    expect(await journalRows(roomName(agentId, `slack:${dm}`))).toEqual([]);
    expect(model.calls).toHaveLength(0);
    // Told once, in the DM, that DMs are closed; a second DM gets silence.
    const again = messageEvent({ ...event, ts: messageTs() });
    expect(await outcome(await postEvent(envelope(again)))).toBe("dm_refused");
    expect(slack.posted(dm).map((m) => m.text)).toEqual([DM_CLOSED_TEXT]);
  });

  it("answers an owner's DM (SLACK_OWNER_IDS) in the message's thread, one room per DM", async () => {
    const agentId = await agentBound();
    const dm = dmChannelId();
    const ts = messageTs();
    model.script({ text: "Hello, owner." });
    const event = messageEvent({
      channel: dm,
      ts,
      text: "hi bot",
      user: SLACK_OWNER,
      channel_type: "im",
    });
    expect(await outcome(await postEvent(envelope(event)))).toBe("queued");
    await settledJournal(roomName(agentId, `slack:${dm}`));
    expect(slack.posted(dm).map((m) => [m.text, m.thread_ts])).toEqual([["Hello, owner.", ts]]);
  });
});

describe("Slack Events API: signing and the body", () => {
  it("answers url_verification with its challenge", async () => {
    const body = JSON.stringify({
      token: "deprecated",
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
      type: "url_verification",
    });
    const response = await postEvent(body);
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    });
  });

  it("refuses a wrong, missing or stale signature with 401 and stores nothing", async () => {
    const agentId = await agentBound();
    const channel = channelId();
    const ts = messageTs();
    const body = envelope(appMention({ channel, ts, text: "sneaky" }));
    const forged = `v0=${"0".repeat(64)}`;
    const stale = Math.floor(Date.now() / 1000) - 6 * 60;
    const future = Math.floor(Date.now() / 1000) + 6 * 60;
    const attempts = [
      await postEvent(body, { signature: forged }),
      await postEvent(body, { signature: "" }),
      await postEvent(body, { timestampSec: stale }),
      await postEvent(body, { timestampSec: future }),
    ];
    for (const response of attempts) {
      expect(response.status).toBe(401);
      const problem = await json<{ error: { code: string; message: string } }>(response);
      expect(problem.error.code).toBe("unauthorized");
      expect(problem.error.message).not.toContain(SLACK_SECRET);
    }
    // Signed for another body: the signature covers the bytes, not the JSON's meaning.
    const { signSlackRequest } = await import("../../../src/clients/slack/signature.ts");
    const now = Math.floor(Date.now() / 1000);
    const other = await signSlackRequest(SLACK_SECRET, now, `${body} `);
    expect((await postEvent(body, { signature: other, timestampSec: now })).status).toBe(401);
    expect(await journalRows(roomName(agentId, `slack:${channel}:${ts}`))).toEqual([]);
    expect(await stored(agentId, `slack:${channel}:${ts}`)).toEqual([]);
    expect(model.calls).toHaveLength(0);
    expect(slack.calls).toHaveLength(0);
  });

  it("answers 400 to a signed body that is not an envelope, naming the path", async () => {
    expect((await postEvent("{not json")).status).toBe(400);
    const bad = await postEvent(envelope({ type: "app_mention", channel: "C1" }));
    expect(bad.status).toBe(400);
    const problem = await json<{ error: { code: string; message: string } }>(bad);
    expect(problem.error.code).toBe("validation");
    expect(problem.error.message).toContain("event.");
  });

  it("answers 413 to a body over 1 MB, before checking anything else", async () => {
    const response = await postEvent(`{"pad":"${"x".repeat(1024 * 1024)}"}`);
    expect(response.status).toBe(413);
  });

  it("answers 200 to a signed event of a kind it does not act on", async () => {
    const response = await postEvent(envelope({ type: "reaction_added", user: "U0ALICE001" }));
    expect(response.status).toBe(200);
    expect(await outcome(response)).toBe("skipped");
  });
});
