// Tool approval on Slack: the Block Kit message with Approve / Deny buttons a paused turn or task
// posts, the buttons' action ids, and what the message becomes once answered or expired. A click
// (block_actions) is routed back by the action id, `<ap|tap>:<y|n>:<approval id>:<agent id>` as on
// every platform (src/clients/chat/approval-button.ts), and for a room by the button's value, the room id, checked against the clicked channel.
import {
  type ApprovalTarget,
  canRouteApprovalWithin,
  decodeApprovalButton,
  encodeApprovalButton,
} from "../chat/approval-button.ts";
import {
  type ApprovalOutcome,
  type ApprovalPromptFields,
  approvalOutcomeText,
} from "../chat/approval-text.ts";
import type { BlockAction, BlockActionsPayload } from "./events.ts";
import { escapeSlackText } from "./web-api.ts";

/** Block Kit's limit on an action_id. */
const MAX_ACTION_ID = 255;
/** Block Kit's limit on a section's text is 3,000; the escaped arguments get at most this much. */
const MAX_ARGUMENT_CHARS = 1_800;
const MAX_NAME_CHARS = 100;
const ROOM_ID = /^slack:([A-Z0-9]{2,32})(?::\d{1,12}\.\d{1,9})?$/;

export type { ApprovalTarget };
export type ApprovalVerdict = "approve" | "deny";

export interface ApprovalAction {
  verdict: ApprovalVerdict;
  approvalId: string;
  agentId: string;
  target: ApprovalTarget;
  /** The room that keeps the pending approval (`slack:<channel>[:<thread ts>]`); null for a task. */
  roomId: string | null;
}

export type SlackBlock = Record<string, unknown>;

export interface SlackPrompt {
  /** What notifications show (plain; chat.postMessage / chat.update escape it). */
  text: string;
  blocks: SlackBlock[];
}

export interface ApprovalPromptInput extends ApprovalPromptFields {
  /** The room the prompt is posted in (required for target "room"). */
  roomId: string | null;
  /** Shown, not mentioned: a Slack mention would notify, and nothing the bot posts pings. */
  requesterName: string | null;
}

/** `<ap|tap>:<y|n>:<approval id>:<agent id>`, or null when it does not fit Block Kit's 255. */
export function approvalActionId(
  action: Pick<ApprovalAction, "verdict" | "approvalId" | "agentId" | "target">,
): string | null {
  const { verdict, ...button } = action;
  return encodeApprovalButton({ ...button, approve: verdict === "approve" }, MAX_ACTION_ID);
}

/** A button's action back to what the click handler needs; null for any other button. */
export function parseApprovalAction(
  action: Pick<BlockAction, "action_id" | "value">,
): ApprovalAction | null {
  const button = decodeApprovalButton(action.action_id);
  if (!button) return null;
  let roomId: string | null = null;
  if (button.target === "room") {
    if (!action.value || !ROOM_ID.test(action.value)) return null;
    roomId = action.value;
  }
  return {
    target: button.target,
    verdict: button.approve ? "approve" : "deny",
    approvalId: button.approvalId,
    agentId: button.agentId,
    roomId,
  };
}

export interface ApprovalClick extends ApprovalAction {
  /** The turn user id of who clicked: `slack:<user id>`. */
  userId: string;
  userName: string;
  /** Where the prompt is, to update it. */
  channelId: string;
  messageTs: string | null;
}

/**
 * The approval a block_actions payload answers, or null (not an approval button, or a room id whose
 * channel is not the channel clicked in: a prompt only answers for the room it was posted in).
 */
export function approvalClickOf(payload: BlockActionsPayload): ApprovalClick | null {
  const action = payload.actions[0];
  const channelId = payload.channel?.id ?? payload.container.channel_id;
  if (!action || !channelId) return null;
  const parsed = parseApprovalAction(action);
  if (!parsed) return null;
  if (parsed.roomId !== null && ROOM_ID.exec(parsed.roomId)?.[1] !== channelId) return null;
  return {
    ...parsed,
    userId: `slack:${payload.user.id}`,
    userName: payload.user.name ?? payload.user.username ?? payload.user.id,
    channelId,
    messageTs: payload.message?.ts ?? payload.container.message_ts ?? null,
  };
}

/** Whether a click on an approval for this agent could be routed back (its id fits an action_id). */
export function canRouteApproval(agentId: string, target: ApprovalTarget = "room"): boolean {
  return canRouteApprovalWithin(agentId, target, MAX_ACTION_ID);
}

export function approvalPromptBlocks(input: ApprovalPromptInput): SlackPrompt {
  const common = { approvalId: input.approvalId, agentId: input.agentId, target: input.target };
  const approve = approvalActionId({ ...common, verdict: "approve" });
  const deny = approvalActionId({ ...common, verdict: "deny" });
  if (!approve || !deny) throw new Error("agent id too long for an approval button");
  if (input.target === "room" && (!input.roomId || !ROOM_ID.test(input.roomId)))
    throw new Error("an approval asked in a room needs the room's Slack id");
  const value = input.target === "room" ? { value: input.roomId! } : {};
  const args = JSON.stringify(input.arguments, null, 2);
  // A ``` inside the arguments would close the code block early.
  const shown = escapedPrefix(args.replaceAll("```", "`\u200b``"), MAX_ARGUMENT_CHARS);
  const agent = escapeSlackText(bounded(input.agentName));
  const who = input.requesterName ? escapeSlackText(bounded(input.requesterName)) : null;
  const seconds = Math.floor(input.expiresAt / 1000);
  const fallbackTime = `${new Date(seconds * 1000).toISOString().slice(11, 16)} UTC`;
  return {
    text: `${bounded(input.agentName)} wants to run ${bounded(input.tool)}: approve or deny.`,
    blocks: [
      {
        type: "section",
        block_id: `approval:${input.approvalId}`,
        text: {
          type: "mrkdwn",
          text:
            `:closed_lock_with_key: *${agent}* wants to run \`${escapeSlackText(bounded(input.tool))}\` with:\n` +
            `\`\`\`${shown}\`\`\``,
        },
      },
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            // <!date^…|fallback> shows the time in each reader's own time zone.
            text:
              `Only ${who ?? "the person who asked"} can answer, until ` +
              `<!date^${seconds}^{time}|${fallbackTime}>. Without an answer it will not run.`,
          },
        ],
      },
      {
        type: "actions",
        block_id: `approval-buttons:${input.approvalId}`,
        elements: [
          button("Approve", "primary", approve, value),
          button("Deny", "danger", deny, value),
        ],
      },
    ],
  };
}

const SLACK_ICONS = {
  approved: ":white_check_mark:",
  denied: ":no_entry_sign:",
  expired: ":hourglass:",
};

/** What the prompt becomes once answered or expired: the outcome, no buttons. */
export function approvalOutcomeBlocks(
  tool: string,
  outcome: ApprovalOutcome,
  by?: string,
): SlackPrompt {
  const name = by ? bounded(by) : null;
  const code = (text: string) => `\`${text}\``;
  const plain = approvalOutcomeText(bounded(tool), outcome, name, {
    icons: SLACK_ICONS,
    tool: code,
    name: (text) => text,
  });
  const mrkdwn = approvalOutcomeText(escapeSlackText(bounded(tool)), outcome, name, {
    icons: SLACK_ICONS,
    tool: code,
    name: escapeSlackText,
  });
  return { text: plain, blocks: [{ type: "section", text: { type: "mrkdwn", text: mrkdwn } }] };
}

function button(
  label: string,
  style: "primary" | "danger",
  actionId: string,
  value: { value?: string },
): SlackBlock {
  return {
    type: "button",
    text: { type: "plain_text", text: label },
    style,
    action_id: actionId,
    ...value,
  };
}

function bounded(text: string): string {
  return text.length > MAX_NAME_CHARS ? `${text.slice(0, MAX_NAME_CHARS - 1)}…` : text;
}

/**
 * The text escaped for Slack, cut to at most `max` characters after escaping (so `&lt;` counts as
 * four and is never cut in half), with an ellipsis line when something was left out.
 */
function escapedPrefix(text: string, max: number): string {
  const escaped = escapeSlackText(text);
  if (escaped.length <= max) return escaped;
  let out = "";
  for (const ch of text) {
    const next = escapeSlackText(ch);
    if (out.length + next.length > max - 2) break;
    out += next;
  }
  return `${out}\n…`;
}
