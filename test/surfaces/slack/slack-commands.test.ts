// Slack's slash commands end to end through POST /slack/commands: /ask posts the question and
// answers in its thread, /forget asks first and deletes only the asker's memories once they
// confirm. Answers are ephemeral JSON, within Slack's 3 s.
import { describe, expect, it, vi } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  ALICE,
  BOB,
  bindSlack,
  blockActions,
  channelId,
  messageTs,
  OTHER_TEAM,
  postSlack,
  slashCommand,
  useSlackStandIns,
} from "../../helpers/slack.ts";

const { model, slack, hooks } = useSlackStandIns();

const answer = async (response: Response) =>
  await json<{ response_type: string; text: string; blocks?: unknown[] }>(response);

describe("Slack slash command /ask", () => {
  it("posts the question in the channel and answers once in its thread", async () => {
    const agentId = await createTestAgent();
    await bindSlack(agentId);
    const channel = channelId();
    model.script({ text: "Tuesday." });
    const response = await postSlack(
      "/slack/commands",
      slashCommand({ command: "/ask", text: "when is the release?", channel }),
    );
    expect(response.status).toBe(200);
    expect(await answer(response)).toMatchObject({ response_type: "ephemeral" });
    const [question] = slack.posted(channel);
    expect(question!.text).toBe("alice asked: when is the release?");
    await settledJournal(roomName(agentId, `slack:${channel}:${question!.ts}`));
    expect(
      slack
        .posted(channel)
        .slice(1)
        .map((m) => [m.text, m.thread_ts]),
    ).toEqual([["Tuesday.", question!.ts]]);
  });

  it("refuses a channel that is not allowed, and an empty question, posting nothing", async () => {
    const agentId = await createTestAgent();
    await bindSlack(agentId, ["C0ELSEWHERE"]);
    const channel = channelId();
    const refused = await answer(
      await postSlack("/slack/commands", slashCommand({ command: "/ask", text: "hi", channel })),
    );
    expect(refused.text).toContain("don't answer in this channel");
    const empty = await answer(
      await postSlack("/slack/commands", slashCommand({ command: "/ask", text: " ", channel })),
    );
    expect(empty.text).toContain("Ask me something");
    expect(slack.posted(channel)).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });
});

describe("Slack slash commands: signing", () => {
  it("refuses an unsigned or stale command with 401, posting and queueing nothing", async () => {
    const agentId = await createTestAgent();
    await bindSlack(agentId);
    const channel = channelId();
    const form = slashCommand({ command: "/ask", text: "hi", channel });
    const forged = await postSlack("/slack/commands", form, { signature: `v0=${"b".repeat(64)}` });
    expect(forged.status).toBe(401);
    const stale = Math.floor(Date.now() / 1000) - 600;
    expect((await postSlack("/slack/commands", form, { timestampSec: stale })).status).toBe(401);
    expect(slack.calls).toHaveLength(0);
    expect(model.calls).toHaveLength(0);
  });
});

describe("Slack slash commands: one workspace", () => {
  it("refuses a signed /ask or /forget from another workspace: nothing posted, no turn", async () => {
    const agentId = await createTestAgent();
    await bindSlack(agentId);
    const channel = channelId();
    for (const command of ["/ask", "/forget"]) {
      const response = await postSlack(
        "/slack/commands",
        slashCommand({ command, text: "what is on the roadmap?", channel, team: OTHER_TEAM }),
      );
      expect(response.status).toBe(200);
      expect(await answer(response)).toEqual({
        response_type: "ephemeral",
        text: "This app answers in one workspace only.",
      });
    }
    expect(slack.posted(channel)).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });

  it("refuses a command that names no workspace (no team_id) with 400, posting nothing", async () => {
    const agentId = await createTestAgent();
    await bindSlack(agentId);
    const channel = channelId();
    const response = await postSlack(
      "/slack/commands",
      slashCommand({ command: "/ask", text: "hi", channel, team: null }),
    );
    expect(response.status).toBe(400);
    expect(await json<{ error: { code: string; message: string } }>(response)).toMatchObject({
      error: { code: "validation", message: expect.stringContaining("team_id") },
    });
    expect(slack.posted(channel)).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });
});

describe("Slack slash command /forget", () => {
  it("asks first, ignores anyone else's click, and deletes only the asker's memories", async () => {
    const agentId = await createTestAgent();
    await bindSlack(agentId);
    const channel = channelId();
    const stored = await api("POST", "/memories", {
      body: {
        memories: [
          { agentId, type: "fact", text: "Alice keeps bees", userId: `slack:${ALICE}` },
          { agentId, type: "fact", text: "Bob sails", userId: `slack:${BOB}` },
        ],
      },
    });
    expect(stored.status).toBe(201);
    const prompt = await answer(
      await postSlack("/slack/commands", slashCommand({ command: "/forget", channel })),
    );
    expect(prompt.response_type).toBe("ephemeral");
    const ids = JSON.stringify(prompt.blocks).match(/forget:(?:yes|no):[A-Z0-9]+:[\w-]+/g)!;
    const yes = ids.find((id) => id.startsWith("forget:yes"))!;
    const click = (user: string, actionId: string) =>
      postSlack(
        "/slack/interactions",
        blockActions({ user, channel, messageTs: messageTs(), actionId }),
      );
    const memoriesOf = async (user: string) =>
      (
        await json<{ memories: unknown[] }>(
          await api("GET", `/memories?agentId=${agentId}&userId=slack:${user}`),
        )
      ).memories;

    expect((await json<{ outcome: string }>(await click(BOB, yes))).outcome).toBe("not_yours");
    expect(await memoriesOf(ALICE)).toHaveLength(1);

    expect((await json<{ outcome: string }>(await click(ALICE, yes))).outcome).toBe("forgotten");
    expect(await memoriesOf(ALICE)).toEqual([]);
    expect(await memoriesOf(BOB)).toHaveLength(1);
    await vi.waitFor(() => expect(hooks).toHaveLength(1));
    expect(hooks[0]!.body).toMatchObject({ replace_original: true });
    expect(String(hooks[0]!.body.text)).toContain("I forgot 1 memory");
  });
});
