// The workspace's daily budget on Slack (`dailyTokens` in /clients/slack/config): the chat layer
// carries it into the turn as a Discord server's; once the workspace's turns reach it, each member
// is told once and no model is asked. A member's own budget (`memberDailyTokens`) the same way.
import { describe, expect, it } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { api, createTestAgent } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  ADMIN,
  appMention,
  BOB,
  channelId,
  envelope,
  messageTs,
  postSlack,
  useSlackStandIns,
} from "../../helpers/slack.ts";

const { model, slack } = useSlackStandIns();

/** Mentions the bot in `channel` (as Alice unless `user` is named) and waits for the turn. */
function mentionIn(agentId: string, channel: string) {
  return async (text: string, user?: string) => {
    const ts = messageTs();
    const response = await postSlack(
      "/slack/events",
      envelope(appMention({ channel, ts, text, ...(user ? { user } : {}) })),
    );
    expect(response.status).toBe(200);
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
  };
}

describe("Slack: the workspace's daily budget", () => {
  it("reached: a member is told once, then nothing, and the model is not asked", async () => {
    const agentId = await createTestAgent();
    const bound = await api("POST", "/clients/slack/config", {
      body: { defaultAgentId: agentId, dailyTokens: 50 },
    });
    expect(bound.status).toBe(200);
    try {
      const channel = channelId();
      const mention = mentionIn(agentId, channel);
      model.script({ text: "First answer." });
      await mention("hello");
      const calls = model.callsFor("test-primary").length;
      await mention("me too?", BOB);
      await mention("still?", BOB);
      expect(slack.posted(channel).map((m) => m.text)).toEqual([
        "First answer.",
        "This workspace's budget for today is used; it resets at 00:00 UTC.",
      ]);
      expect(model.callsFor("test-primary").length).toBe(calls);
    } finally {
      await api("POST", "/clients/slack/config", { body: { defaultAgentId: null } });
    }
  });

  it("a member over memberDailyTokens gets one notice in the thread and no model call", async () => {
    const agentId = await createTestAgent();
    const bound = await api("POST", "/clients/slack/config", {
      body: { defaultAgentId: agentId, memberDailyTokens: 50 },
    });
    expect(bound.status).toBe(200);
    try {
      const channel = channelId();
      const mention = mentionIn(agentId, channel);
      // Alice spent the day in the test above: another member, with nothing spent yet.
      model.script({ text: "First answer." });
      await mention("hello", ADMIN);
      const calls = model.callsFor("test-primary").length;
      await mention("again?", ADMIN);
      await mention("and again?", ADMIN);
      expect(slack.posted(channel).map((m) => m.text)).toEqual([
        "First answer.",
        "Your budget for today is used; it resets at 00:00 UTC.",
      ]);
      expect(model.callsFor("test-primary").length).toBe(calls);
      // Another member of the workspace is still answered.
      model.script({ text: "Bob's answer." });
      await mention("my turn", BOB);
      expect(slack.posted(channel).at(-1)?.text).toBe("Bob's answer.");
    } finally {
      await api("POST", "/clients/slack/config", { body: { defaultAgentId: null } });
    }
  });
});
