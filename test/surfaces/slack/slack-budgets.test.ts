// The workspace's daily budget on Slack (`dailyTokens` in /clients/slack/config): the chat layer
// carries it into the turn as a Discord server's; once the workspace's turns reach it, each member
// is told once and no model is asked.
import { describe, expect, it } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { api, createTestAgent } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  appMention,
  BOB,
  channelId,
  envelope,
  messageTs,
  postSlack,
  useSlackStandIns,
} from "../../helpers/slack.ts";

const { model, slack } = useSlackStandIns();

describe("Slack: the workspace's daily budget", () => {
  it("reached: a member is told once, then nothing, and the model is not asked", async () => {
    const agentId = await createTestAgent();
    const bound = await api("POST", "/clients/slack/config", {
      body: { defaultAgentId: agentId, dailyTokens: 50 },
    });
    expect(bound.status).toBe(200);
    try {
      const channel = channelId();
      const mention = async (text: string, user?: string) => {
        const ts = messageTs();
        const response = await postSlack(
          "/slack/events",
          envelope(appMention({ channel, ts, text, ...(user ? { user } : {}) })),
        );
        expect(response.status).toBe(200);
        await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
      };
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
});
