// Tool approval on Slack (Block Kit): the prompt's section and Approve / Deny buttons, the action ids
// that route a click back to the pending approval, and the message once answered or expired.
import { describe, expect, it } from "vitest";
import {
  approvalActionId,
  approvalClickOf,
  approvalOutcomeBlocks,
  approvalPromptBlocks,
  canRouteApproval,
  parseApprovalAction,
} from "../../../src/clients/slack/blocks.ts";
import { parseInteractionForm } from "../../../src/clients/slack/events.ts";
import { ANN, BOT_USER, CHANNEL, TEAM } from "./fixtures.ts";

const APPROVAL = "0123456789abcdef";
const ROOM = `slack:${CHANNEL}:1712345678.000100`;
const EXPIRES = Date.UTC(2024, 3, 5, 19, 30, 0);

function prompt(overrides: Partial<Parameters<typeof approvalPromptBlocks>[0]> = {}) {
  return approvalPromptBlocks({
    target: "room",
    approvalId: APPROVAL,
    agentId: "helper",
    roomId: ROOM,
    agentName: "Helper",
    tool: "send_email",
    arguments: { to: "ann@example.test", subject: "Hi <!channel>" },
    requesterName: "Ann",
    expiresAt: EXPIRES,
    ...overrides,
  });
}

type Buttons = { elements: Array<{ action_id: string; value?: string; style: string }> };

describe("Approval prompt: Block Kit", () => {
  it("shows the request and Approve / Deny buttons carrying the approval and the room", () => {
    const { text, blocks } = prompt();
    expect(text).toBe("Helper wants to run send_email: approve or deny.");
    const section = blocks[0] as { text: { text: string } };
    expect(section.text.text).toContain("*Helper* wants to run `send_email` with:");
    expect(section.text.text).toContain('"to": "ann@example.test"');
    // The arguments are the model's: escaped, so they cannot ping.
    expect(section.text.text).toContain("Hi &lt;!channel&gt;");
    expect(section.text.text).not.toContain("<!channel>");
    const context = blocks[1] as { elements: Array<{ text: string }> };
    expect(context.elements[0]?.text).toBe(
      `Only Ann can answer, until <!date^${EXPIRES / 1000}^{time}|19:30 UTC>. Without an answer it will not run.`,
    );
    const buttons = blocks[2] as Buttons;
    expect(buttons.elements.map((b) => [b.action_id, b.value, b.style])).toEqual([
      [`ap:y:${APPROVAL}:helper`, ROOM, "primary"],
      [`ap:n:${APPROVAL}:helper`, ROOM, "danger"],
    ]);
  });

  it("keeps long arguments inside the section's 3,000 characters and closes the code block", () => {
    const { blocks } = prompt({ arguments: { body: "x".repeat(10_000), fence: "```" } });
    const section = (blocks[0] as { text: { text: string } }).text.text;
    expect(section.length).toBeLessThanOrEqual(3_000);
    expect(section.endsWith("```")).toBe(true);
    expect(section.match(/```/g)).toHaveLength(2);
    const escapes = prompt({
      agentName: "<".repeat(300),
      tool: "&".repeat(300),
      arguments: { a: "<>&".repeat(2_000) },
    });
    const escaped = (escapes.blocks[0] as { text: { text: string } }).text.text;
    expect(escaped.length).toBeLessThanOrEqual(3_000);
    // Cut between escapes, never inside one.
    expect(escaped).toMatch(/(&lt;|&gt;|&amp;)\n…```$/);
  });

  it("asks for a task without a room: the buttons carry no value", () => {
    const { blocks } = prompt({ target: "task", roomId: null });
    const buttons = blocks[2] as Buttons;
    expect(buttons.elements[0]).not.toHaveProperty("value");
    expect(buttons.elements[0]?.action_id).toBe(`tap:y:${APPROVAL}:helper`);
  });

  it("refuses to build a room prompt without the room, or for an agent id too long to route", () => {
    expect(() => prompt({ roomId: null })).toThrow();
    expect(() => prompt({ agentId: "a".repeat(300) })).toThrow();
    expect(canRouteApproval("helper")).toBe(true);
    expect(canRouteApproval("a".repeat(300))).toBe(false);
  });
});

describe("Approval action ids: round trip", () => {
  it("parses what it builds, for rooms and tasks, approve and deny", () => {
    for (const target of ["room", "task"] as const)
      for (const verdict of ["approve", "deny"] as const) {
        const action_id = approvalActionId({
          verdict,
          approvalId: APPROVAL,
          agentId: "team-bot_2",
          target,
        });
        expect(action_id).not.toBeNull();
        const value = target === "room" ? ROOM : undefined;
        expect(parseApprovalAction({ action_id: action_id!, value })).toEqual({
          verdict,
          approvalId: APPROVAL,
          agentId: "team-bot_2",
          target,
          roomId: target === "room" ? ROOM : null,
        });
      }
  });

  it("ignores other buttons, malformed ids, and a room button without a Slack room", () => {
    expect(parseApprovalAction({ action_id: "forget:yes" })).toBeNull();
    expect(
      parseApprovalAction({ action_id: `ap:y:${APPROVAL.toUpperCase()}:helper`, value: ROOM }),
    ).toBeNull();
    expect(parseApprovalAction({ action_id: `ap:y:${APPROVAL}:helper` })).toBeNull();
    expect(
      parseApprovalAction({ action_id: `ap:y:${APPROVAL}:helper`, value: "discord:123" }),
    ).toBeNull();
  });
});

function clickForm(action: Record<string, unknown>, channel = CHANNEL) {
  const payload = {
    type: "block_actions",
    user: { id: ANN, username: "ann", name: "ann", team_id: TEAM },
    team: { id: TEAM },
    channel: { id: channel },
    container: { type: "message", message_ts: "1712345690.000150", channel_id: channel },
    message: { ts: "1712345690.000150", thread_ts: "1712345678.000100", user: BOT_USER },
    actions: [{ type: "button", action_ts: "1712345695.000001", ...action }],
    response_url: "https://hooks.slack.com/actions/T0TEAM0001/1/abc",
  };
  const parsed = parseInteractionForm(
    new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
  );
  if (!parsed.ok || parsed.value.type !== "block_actions") throw new Error("fixture did not parse");
  return parsed.value;
}

describe("Approval clicks: block_actions back to the pending approval", () => {
  it("reads who clicked what, where, from a click on the prompt's button", () => {
    const button = (prompt().blocks[2] as Buttons).elements[1]!;
    expect(
      approvalClickOf(clickForm({ action_id: button.action_id, value: button.value })),
    ).toEqual({
      verdict: "deny",
      approvalId: APPROVAL,
      agentId: "helper",
      target: "room",
      roomId: ROOM,
      userId: `slack:${ANN}`,
      userName: "ann",
      channelId: CHANNEL,
      messageTs: "1712345690.000150",
    });
  });

  it("refuses a room button clicked in another channel than its room's", () => {
    const click = clickForm({ action_id: `ap:y:${APPROVAL}:helper`, value: ROOM }, "C0OTHER001");
    expect(approvalClickOf(click)).toBeNull();
  });

  it("returns null for a click on some other button", () => {
    expect(approvalClickOf(clickForm({ action_id: "something_else" }))).toBeNull();
  });
});

describe("Approval prompt once answered or expired", () => {
  it("replaces the buttons with who answered and what happens", () => {
    const approved = approvalOutcomeBlocks("send_email", "approved", "Ann <@U1>");
    expect(approved.blocks).toHaveLength(1);
    expect(JSON.stringify(approved.blocks)).not.toContain('"actions"');
    expect((approved.blocks[0] as { text: { text: string } }).text.text).toBe(
      ":white_check_mark: Ann &lt;@U1&gt; approved: running `send_email`…",
    );
    expect(approved.text).toBe(":white_check_mark: Ann <@U1> approved: running `send_email`…");
    expect(approvalOutcomeBlocks("send_email", "denied", "Ann").text).toBe(
      ":no_entry_sign: Ann denied `send_email`: it was not run.",
    );
    expect(approvalOutcomeBlocks("send_email", "expired").text).toBe(
      ":hourglass: Nobody answered within 10 minutes: `send_email` was not run.",
    );
  });
});
