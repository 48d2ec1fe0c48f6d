// Tool approval through Slack end to end: a character marks `remember` as needing approval; the
// turn pauses and posts Approve / Deny as Block Kit buttons in the message's thread; a click comes
// back through POST /slack/interactions; only the requester's counts; the prompt is updated with
// chat.update to say who answered, and the reply follows in the thread.
import { describe, expect, it, vi } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { createTestAgent, json } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  ADMIN,
  ALICE,
  appMention,
  BOB,
  bindSlack,
  blockActions,
  channelId,
  envelope,
  messageTs,
  OTHER_TEAM,
  postSlack,
  useSlackStandIns,
} from "../../helpers/slack.ts";

const { model, slack } = useSlackStandIns();

const FACT = "Dana's bees are called the Roof Committee";

interface Button {
  action_id: string;
  value?: string;
  text: { text: string };
}

/** A mention whose model calls `remember`, and the prompt it posts with its buttons. */
async function pausedTurn() {
  const agentId = await createTestAgent({
    settings: { memory: { factsEvery: 1000 }, toolApproval: ["remember"] },
  });
  await bindSlack(agentId);
  const channel = channelId();
  const ts = messageTs();
  model.script(
    { toolCalls: [{ name: "remember", arguments: { fact: FACT } }] },
    { text: "Noted." },
  );
  const mention = appMention({ channel, ts, text: "please remember my bees' name" });
  expect((await postSlack("/slack/events", envelope(mention))).status).toBe(200);
  const prompt = await vi.waitFor(
    () => {
      const found = slack.posted(channel).find((message) => message.blocks !== undefined);
      expect(found).toBeDefined();
      return found!;
    },
    { timeout: 15_000, interval: 50 },
  );
  const actions = (prompt.blocks as Array<{ type: string; elements?: Button[] }>).find(
    (block) => block.type === "actions",
  )!.elements!;
  /** A click on the button labelled `label`; `team` as blockActions takes it. */
  const click = (user: string, label: string, team?: string | null) => {
    const button = actions.find((b) => b.text.text === label)!;
    return postSlack(
      "/slack/interactions",
      blockActions({
        user,
        channel,
        messageTs: prompt.ts,
        threadTs: ts,
        actionId: button.action_id,
        ...(button.value ? { value: button.value } : {}),
        ...(team === undefined ? {} : { team }),
      }),
    );
  };
  return { agentId, channel, ts, prompt, click };
}

const outcome = async (response: Response) => (await json<{ outcome: string }>(response)).outcome;

describe("Slack tool approval", () => {
  it("posts Approve / Deny in the thread, refuses another member's click, and runs the tool when the requester approves", async () => {
    const { agentId, channel, ts, prompt, click } = await pausedTurn();
    expect(prompt.thread_ts).toBe(ts);
    expect(JSON.stringify(prompt.blocks)).toContain(FACT);

    expect(await outcome(await click(BOB, "Approve"))).toBe("not_yours");
    const told = await vi.waitFor(() => {
      const shown = slack.ephemerals(channel);
      expect(shown).toHaveLength(1);
      return shown[0]!;
    });
    expect(told).toMatchObject({ user: BOB });
    expect(told.text).toContain("Only the person who asked, or a workspace admin");

    expect(await outcome(await click(ALICE, "Approve"))).toBe("answered");
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
    await vi.waitFor(() => {
      const updated = slack.posted(channel).find((message) => message.ts === prompt.ts)!;
      expect(updated.text).toContain("alice approved");
      expect(updated.blocks).not.toContainEqual(expect.objectContaining({ type: "actions" }));
    });
    expect(slack.posted(channel).at(-1)).toMatchObject({ text: "Noted.", thread_ts: ts });
    const tool = (model.calls[1]!.body.messages as { role: string; content: string }[]).filter(
      (message) => message.role === "tool",
    );
    expect(tool.at(-1)!.content).not.toContain("not allowed");
  });

  it("says the tool was denied when the requester denies, and a second click finds nothing waiting", async () => {
    const { agentId, channel, ts, prompt, click } = await pausedTurn();
    expect(await outcome(await click(ALICE, "Deny"))).toBe("answered");
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
    await vi.waitFor(() => {
      const updated = slack.posted(channel).find((message) => message.ts === prompt.ts)!;
      expect(updated.text).toContain("alice denied");
    });
    expect(await outcome(await click(ALICE, "Approve"))).toBe("gone");
  });

  it("lets a workspace admin answer for the requester (users.info is_admin)", async () => {
    const { agentId, channel, ts, prompt, click } = await pausedTurn();
    expect(await outcome(await click(ADMIN, "Deny"))).toBe("answered");
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
    await vi.waitFor(() => {
      const updated = slack.posted(channel).find((message) => message.ts === prompt.ts)!;
      expect(updated.text).toContain("denied");
      expect(updated.blocks).not.toContainEqual(expect.objectContaining({ type: "actions" }));
    });
    expect(slack.callsTo("users.info").some((call) => call.body.user === ADMIN)).toBe(true);
  });

  it("refuses an unsigned click with 401, deciding nothing", async () => {
    const { click: _click, channel, prompt } = await pausedTurn();
    const form = blockActions({
      user: ALICE,
      channel,
      messageTs: prompt.ts,
      actionId: "ap:y:0123456789abcdef:someone",
    });
    const forged = await postSlack("/slack/interactions", form, {
      signature: `v0=${"a".repeat(64)}`,
    });
    expect(forged.status).toBe(401);
    expect(slack.posted(channel).find((m) => m.ts === prompt.ts)!.updates).toBe(0);
  });
});

describe("Slack tool approval: one workspace", () => {
  it("skips a signed click from another workspace, even with the requester's user id: the turn stays paused", async () => {
    const { agentId, channel, ts, prompt, click } = await pausedTurn();
    expect(await outcome(await click(ALICE, "Approve", OTHER_TEAM))).toBe("skipped");
    expect(slack.posted(channel).find((m) => m.ts === prompt.ts)!.updates).toBe(0);
    // Still waiting: the requester's own click is the one that answers it.
    expect(await outcome(await click(ALICE, "Deny"))).toBe("answered");
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
  });

  it("refuses a click that names no workspace (no team, no user.team_id) with 400: the turn stays paused", async () => {
    const { agentId, channel, ts, prompt, click } = await pausedTurn();
    const response = await click(ALICE, "Approve", null);
    expect(response.status).toBe(400);
    expect(await json<{ error: { code: string; message: string } }>(response)).toMatchObject({
      error: { code: "validation", message: expect.stringContaining("team") },
    });
    expect(slack.posted(channel).find((m) => m.ts === prompt.ts)!.updates).toBe(0);
    expect(await outcome(await click(ALICE, "Deny"))).toBe("answered");
    await settledJournal(roomName(agentId, `slack:${channel}:${ts}`));
  });
});
