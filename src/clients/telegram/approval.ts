// Tool approval on Telegram: the plain-text prompt a paused turn or task posts, its Approve / Deny
// inline keyboard, the buttons' callback_data, and the text the prompt becomes once answered. The
// room (or the agent's task object) keeps the pending state; a press is routed back to it by the
// prefix, the agent id it carries and (for a room) the chat and topic the pressed message is in.
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
import { type InlineKeyboardMarkup, TELEGRAM_MESSAGE_LIMIT } from "./bot-api.ts";

/** Bot API: an inline button's callback_data is 1-64 bytes (agent ids are ASCII: bytes). */
export const MAX_CALLBACK_DATA_BYTES = 64;
const MAX_ARGUMENT_CHARS = 1_200;

export type { ApprovalButton, ApprovalTarget };

/** The button's callback_data, or null when it would pass 64 bytes (an agent id over 41-42 chars). */
export function approvalCallbackData(button: ApprovalButton): string | null {
  return encodeApprovalButton(button, MAX_CALLBACK_DATA_BYTES);
}

/** The button a press names, or null for any other callback_data. */
export function parseApprovalCallbackData(data: string): ApprovalButton | null {
  return data.length > MAX_CALLBACK_DATA_BYTES ? null : decodeApprovalButton(data);
}

/** Whether a press on an approval for this agent could be routed back (its id fits the data). */
export function canRouteApproval(agentId: string, target: ApprovalTarget = "room"): boolean {
  return canRouteApprovalWithin(agentId, target, MAX_CALLBACK_DATA_BYTES);
}

export interface ApprovalPromptInput extends ApprovalPromptFields {
  /** The requester's display name (senderName), or null: named in the prompt, not pinged. */
  requesterName: string | null;
  now: number;
}

export interface ApprovalPrompt {
  text: string;
  reply_markup: InlineKeyboardMarkup;
}

/** Plain text (no parse_mode), so nothing in the arguments or names needs escaping. */
export function approvalPrompt(input: ApprovalPromptInput): ApprovalPrompt {
  const button = { approvalId: input.approvalId, agentId: input.agentId, target: input.target };
  const approve = approvalCallbackData({ ...button, approve: true });
  const deny = approvalCallbackData({ ...button, approve: false });
  if (!approve || !deny) throw new Error("agent id too long for an approval button");
  const shown = shownArguments(input.arguments, MAX_ARGUMENT_CHARS);
  const who = input.requesterName ?? "the person who asked";
  const minutes = Math.max(1, Math.ceil((input.expiresAt - input.now) / 60_000));
  const text =
    `🔐 ${input.agentName} wants to run ${input.tool} with:\n${shown}\n\n` +
    `Only ${who} or an owner can answer, within ${minutes} minute${minutes === 1 ? "" : "s"}. ` +
    "Without an answer it will not run.";
  return {
    // A very long agent or tool name must not make the prompt undeliverable.
    text: text.slice(0, TELEGRAM_MESSAGE_LIMIT),
    reply_markup: {
      inline_keyboard: [
        [
          { text: "✅ Approve", callback_data: approve },
          { text: "🚫 Deny", callback_data: deny },
        ],
      ],
    },
  };
}

/** Plain text: nothing is quoted or escaped. */
const TELEGRAM_TEXT: ApprovalTextStyle = {
  icons: { approved: "✅", denied: "🚫", expired: "⌛" },
  tool: (tool) => tool,
  name: (name) => name,
};

/** What the prompt turns into once answered (edited without a keyboard, which removes it). */
export function approvalResultText(tool: string, decision: ApprovalOutcome, by?: string): string {
  return approvalOutcomeText(tool, decision, by, TELEGRAM_TEXT);
}
