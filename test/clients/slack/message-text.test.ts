// How a Slack event becomes the chat layer's terms: the room (one per DM, one per channel thread),
// addressing, the turn key that collapses app_mention + message.* and retries, what starts no turn,
// edits and deletions as amendments, and the text as the model reads it.
import { describe, expect, it } from "vitest";
import { parseEventEnvelope, type SlackEvent } from "../../../src/clients/slack/events.ts";
import {
  addressing,
  amendmentOf,
  replyThreadOf,
  roomIdOf,
  shouldIgnore,
  textForModel,
  turnKey,
  type SlackMessageEvent,
} from "../../../src/clients/slack/message-text.ts";
import {
  ANN,
  BOT_ID,
  BOT_USER,
  CHANNEL,
  DM,
  appMention,
  channelMessage,
  directMessage,
  envelope,
} from "./fixtures.ts";

/** Through the real parser, so the functions see what the route will hand them. */
function event(raw: Record<string, unknown>): SlackMessageEvent {
  const result = parseEventEnvelope(envelope(raw));
  if (!result.ok || result.value.type !== "event_callback")
    throw new Error("fixture did not parse");
  const inner: SlackEvent = result.value.event;
  if (inner.type === "unsupported") throw new Error("fixture is unsupported");
  return inner;
}

const TOP = "1712345678.000100";
const REPLY = "1712345700.000200";

describe("Rooms: a DM is one room, a channel has one room per thread", () => {
  it("puts every direct message of a DM channel in one room, threaded or not", () => {
    expect(roomIdOf(event(directMessage()))).toBe(`slack:${DM}`);
    expect(roomIdOf(event(directMessage({ ts: REPLY, thread_ts: TOP })))).toBe(`slack:${DM}`);
  });

  it("roots a top-level mention's room at its own ts, where the bot answers", () => {
    const mention = event(appMention());
    expect(roomIdOf(mention)).toBe(`slack:${CHANNEL}:${TOP}`);
    expect(replyThreadOf(mention)).toBe(TOP);
  });

  it("puts a reply in a thread in the thread's room and answers in that thread", () => {
    const reply = event(appMention({ ts: REPLY, event_ts: REPLY, thread_ts: TOP }));
    expect(roomIdOf(reply)).toBe(`slack:${CHANNEL}:${TOP}`);
    expect(replyThreadOf(reply)).toBe(TOP);
    expect(roomIdOf(event(channelMessage({ ts: REPLY, thread_ts: TOP })))).toBe(
      `slack:${CHANNEL}:${TOP}`,
    );
  });

  it("reads an app_mention in a DM channel (D…) as direct", () => {
    const mention = event(appMention({ channel: DM }));
    expect(roomIdOf(mention)).toBe(`slack:${DM}`);
    expect(addressing(mention, BOT_USER)).toEqual({ mentionsBot: true, isDirect: true });
  });
});

describe("Turn key: one per channel and ts", () => {
  it("is the same for the app_mention and the message.channels event of one message", () => {
    const viaMention = event(appMention());
    const viaMessage = event(channelMessage());
    expect(turnKey(viaMention)).toBe(`slack-msg:${CHANNEL}:${TOP}`);
    expect(turnKey(viaMessage)).toBe(turnKey(viaMention));
  });

  it("is the same for a retried delivery under another event_id", () => {
    const first = parseEventEnvelope(envelope(appMention()));
    const retry = parseEventEnvelope(envelope(appMention()));
    if (!first.ok || !retry.ok) throw new Error("fixture did not parse");
    if (first.value.type !== "event_callback" || retry.value.type !== "event_callback")
      throw new Error("fixture did not parse");
    expect(first.value.event_id).not.toBe(retry.value.event_id);
    const [a, b] = [first.value.event, retry.value.event];
    if (a.type === "unsupported" || b.type === "unsupported") throw new Error("unsupported");
    expect(turnKey(a)).toBe(turnKey(b));
  });

  it("differs for another message in the same thread", () => {
    expect(turnKey(event(appMention({ ts: REPLY, event_ts: REPLY, thread_ts: TOP })))).not.toBe(
      turnKey(event(appMention())),
    );
  });
});

describe("Addressing", () => {
  it("counts an app_mention, and a message naming the bot, as mentioning it", () => {
    expect(addressing(event(appMention()), BOT_USER)).toEqual({
      mentionsBot: true,
      isDirect: false,
    });
    expect(addressing(event(channelMessage()), BOT_USER)).toEqual({
      mentionsBot: true,
      isDirect: false,
    });
    expect(
      addressing(event(channelMessage({ text: `hi <@${BOT_USER}|agent>` })), BOT_USER),
    ).toMatchObject({ mentionsBot: true });
  });

  it("does not count a message naming someone else, or a DM without a mention", () => {
    expect(addressing(event(channelMessage({ text: `ask <@${ANN}>` })), BOT_USER)).toEqual({
      mentionsBot: false,
      isDirect: false,
    });
    expect(addressing(event(directMessage()), BOT_USER)).toEqual({
      mentionsBot: false,
      isDirect: true,
    });
  });
});

describe("What starts no turn", () => {
  it("ignores a bot's post (bot_id), the bot's own user, and a message with no user", () => {
    expect(shouldIgnore(event(channelMessage({ bot_id: BOT_ID })), BOT_USER)).toBe(true);
    expect(shouldIgnore(event(appMention({ bot_id: "B0OTHER001" })), BOT_USER)).toBe(true);
    expect(shouldIgnore(event(directMessage({ user: BOT_USER })), BOT_USER)).toBe(true);
    expect(
      shouldIgnore(
        event(channelMessage({ subtype: "bot_message", user: undefined, bot_id: BOT_ID })),
        BOT_USER,
      ),
    ).toBe(true);
  });

  it("ignores joins, topic changes, edits and deletions, but not file shares or broadcasts", () => {
    for (const subtype of ["channel_join", "channel_topic", "message_changed", "message_deleted"])
      expect(shouldIgnore(event(channelMessage({ subtype })), BOT_USER)).toBe(true);
    for (const subtype of ["file_share", "thread_broadcast"])
      expect(shouldIgnore(event(channelMessage({ subtype })), BOT_USER)).toBe(false);
    expect(shouldIgnore(event(appMention()), BOT_USER)).toBe(false);
    expect(shouldIgnore(event(directMessage()), BOT_USER)).toBe(false);
  });
});

function changed(now: Record<string, unknown>, before: Record<string, unknown>, extra = {}) {
  return event({
    type: "message",
    subtype: "message_changed",
    hidden: true,
    channel: CHANNEL,
    channel_type: "channel",
    ts: "1712345800.000300",
    event_ts: "1712345800.000300",
    message: { type: "message", user: ANN, ts: REPLY, thread_ts: TOP, ...now },
    previous_message: { type: "message", user: ANN, ts: REPLY, thread_ts: TOP, ...before },
    ...extra,
  });
}

describe("Edits and deletions amend the turn they belong to", () => {
  it("reads message_changed as an edit keyed like the original message, in its thread's room", () => {
    const edit = changed(
      { text: "and the day after?", edited: { user: ANN, ts: "1712345800.000000" } },
      { text: "and tomorrow?" },
    );
    expect(amendmentOf(edit, BOT_USER)).toEqual({
      kind: "edit",
      key: `slack-msg:${CHANNEL}:${REPLY}`,
      roomId: `slack:${CHANNEL}:${TOP}`,
      text: "and the day after?",
    });
    expect(amendmentOf(edit, BOT_USER)?.key).toBe(
      turnKey(event(channelMessage({ ts: REPLY, thread_ts: TOP }))),
    );
  });

  it("reads message_deleted as a deletion of that key, and a tombstone as one too", () => {
    const deleted = event({
      type: "message",
      subtype: "message_deleted",
      hidden: true,
      channel: DM,
      channel_type: "im",
      ts: "1712345900.000400",
      deleted_ts: TOP,
      event_ts: "1712345900.000400",
      previous_message: { type: "message", user: ANN, text: "hello there", ts: TOP },
    });
    expect(amendmentOf(deleted, BOT_USER)).toEqual({
      kind: "delete",
      key: `slack-msg:${DM}:${TOP}`,
      roomId: `slack:${DM}`,
    });
    const tombstone = changed(
      { subtype: "tombstone", text: "This message was deleted.", ts: TOP, thread_ts: TOP },
      { text: "root", ts: TOP, thread_ts: TOP },
    );
    expect(amendmentOf(tombstone, BOT_USER)).toEqual({
      kind: "delete",
      key: `slack-msg:${CHANNEL}:${TOP}`,
      roomId: `slack:${CHANNEL}:${TOP}`,
    });
  });

  it("ignores a change that leaves the text as it was (a link preview attached)", () => {
    expect(
      amendmentOf(
        changed({ text: "see https://x.test" }, { text: "see https://x.test" }),
        BOT_USER,
      ),
    ).toBeNull();
  });

  it("ignores edits of the bot's own or another bot's messages, and ordinary messages", () => {
    expect(
      amendmentOf(changed({ text: "new", user: BOT_USER }, { text: "old" }), BOT_USER),
    ).toBeNull();
    expect(
      amendmentOf(changed({ text: "new", bot_id: BOT_ID }, { text: "old" }), BOT_USER),
    ).toBeNull();
    expect(amendmentOf(event(channelMessage()), BOT_USER)).toBeNull();
    expect(amendmentOf(event(appMention()), BOT_USER)).toBeNull();
  });
});

describe("Text for the model", () => {
  it("removes the bot's mention that addresses the message", () => {
    expect(textForModel(`<@${BOT_USER}> what is on today?`, BOT_USER, "Helper")).toBe(
      "what is on today?",
    );
    expect(textForModel(`<@${BOT_USER}|agent>: hi`, BOT_USER, "Helper")).toBe("hi");
  });

  it("names the bot elsewhere and keeps other people's mentions readable", () => {
    expect(textForModel(`thanks <@${BOT_USER}>, and <@${ANN}> too`, BOT_USER, "Helper")).toBe(
      `thanks @Helper, and @${ANN} too`,
    );
    expect(textForModel("ping <@U0BOB00001|bob>", BOT_USER, "Helper")).toBe("ping @bob");
  });

  it("shows links as label (url), and bare links, channels and broadcasts as text", () => {
    expect(textForModel("read <https://x.test/a?b=1&amp;c=2|the plan>", BOT_USER, "H")).toBe(
      "read the plan (https://x.test/a?b=1&c=2)",
    );
    expect(textForModel("read <https://x.test/a>", BOT_USER, "H")).toBe("read https://x.test/a");
    expect(textForModel("mail <mailto:a@x.test|a@x.test>", BOT_USER, "H")).toBe("mail a@x.test");
    expect(textForModel("in <#C0CHAN0001|general> <!here>", BOT_USER, "H")).toBe(
      "in #general @here",
    );
    expect(
      textForModel("<!subteam^S0TEAM|@design> at <!date^1712345678^{time}|10:14>", BOT_USER, "H"),
    ).toBe("@design at 10:14");
  });

  it("undoes Slack's &amp; &lt; &gt; escapes once, last", () => {
    expect(textForModel("a &lt;b&gt; &amp; c &amp;lt;", BOT_USER, "H")).toBe("a <b> & c &lt;");
  });
});
