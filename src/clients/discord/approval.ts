// Tool approval on Discord: the message with Approve / Deny buttons a paused turn or task posts,
// the buttons' custom ids, and the texts that replace the buttons once someone answers. The room
// (or the agent's task object) keeps the pending state; a click is routed back to it by the
// prefix, the agent id and (for a room) the channel it carries.
import {
  type ApprovalButton,
  type ApprovalTarget,
  canRouteApprovalWithin,
  decodeApprovalButton,
  encodeApprovalButton,
} from "../chat/approval-button.ts";
import {
  type ApprovalOutcome,
  type ApprovalPromptFields,
  type ApprovalTextStyle,
  approvalOutcomeText,
  shownArguments,
} from "../chat/approval-text.ts";
import type { DiscordMessageBody } from "./rest.ts";

/** Discord's limit on a component's custom_id. */
const MAX_CUSTOM_ID = 100;
const MAX_ARGUMENT_CHARS = 1_200;

export type { ApprovalButton, ApprovalTarget };

/** `<ap|tap>:<y|n>:<approval id>:<agent id>`, or null when the agent id is too long to fit. */
export function approvalCustomId(button: ApprovalButton): string | null {
  return encodeApprovalButton(button, MAX_CUSTOM_ID);
}

export function parseApprovalCustomId(customId: string): ApprovalButton | null {
  return decodeApprovalButton(customId);
}

/** Whether a click on an approval for this agent could be routed back (its id fits a custom_id). */
export function canRouteApproval(agentId: string, target: ApprovalTarget = "room"): boolean {
  return canRouteApprovalWithin(agentId, target, MAX_CUSTOM_ID);
}

export interface ApprovalPromptInput extends ApprovalPromptFields {
  /** The Discord user id (snowflake) of the person who asked; only they can answer. */
  requesterDiscordId: string | null;
}

export function approvalPrompt(input: ApprovalPromptInput): DiscordMessageBody {
  const button = { approvalId: input.approvalId, agentId: input.agentId, target: input.target };
  const approve = approvalCustomId({ ...button, approve: true });
  const deny = approvalCustomId({ ...button, approve: false });
  if (!approve || !deny) throw new Error("agent id too long for an approval button");
  const shown = shownArguments(input.arguments, MAX_ARGUMENT_CHARS);
  const who = input.requesterDiscordId ? `<@${input.requesterDiscordId}>` : "the person who asked";
  const deadline = Math.floor(input.expiresAt / 1000);
  return {
    content:
      `🔐 ${escapeMarkdown(input.agentName)} wants to run \`${input.tool}\` with:\n` +
      "```json\n" +
      // A ``` inside the arguments would close the block early.
      shown.replaceAll("```", "`\u200b``") +
      "\n```\n" +
      `Only ${who} can answer, until <t:${deadline}:t> (<t:${deadline}:R>). Without an answer it will not run.`,
    components: [
      {
        type: 1,
        components: [
          { type: 2, style: 3, label: "Approve", custom_id: approve },
          { type: 2, style: 4, label: "Deny", custom_id: deny },
        ],
      },
    ],
  };
}

const DISCORD_TEXT: ApprovalTextStyle = {
  icons: { approved: "✅", denied: "🚫", expired: "⌛" },
  tool: (tool) => `\`${tool}\``,
  name: (name) => escapeMarkdown(name),
};

/** What the prompt turns into once answered (the buttons are removed). */
export function approvalResultText(tool: string, decision: ApprovalOutcome, by?: string): string {
  return approvalOutcomeText(tool, decision, by, DISCORD_TEXT);
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~|>]/g, (ch) => `\\${ch}`);
}
