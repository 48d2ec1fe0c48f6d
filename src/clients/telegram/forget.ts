// `/forget` on Telegram: the question, as a reply to the person who asked, with "Forget me" and
// "Cancel" buttons, as Discord's and Slack's /forget do. callback_data holds at most 64 bytes
// (Bot API, InlineKeyboardButton), too few for a 64-character agent id, so it carries the
// asker's user id and a short digest of the agent: `fg:<yes|no>:<user id>:<agent tag>`. Only that
// person's press counts, and only while the chat is still bound to that agent.
import { toBase64Url } from "../../runtime/util/hashing.ts";
import type { InlineKeyboardMarkup } from "./bot-api.ts";

export const FORGET_QUESTION =
  "Delete everything I remember about you (facts, your profile and your messages)? This cannot be undone.";

const DATA = /^fg:(yes|no):(\d{1,20}):([A-Za-z0-9_-]{11})$/;

export interface ForgetPress {
  confirmed: boolean;
  /** The Telegram user id whose memories the button deletes. */
  userId: string;
  /** A digest of the agent the question was asked for (agentTag). */
  agentTag: string;
}

export function parseForgetCallbackData(data: string): ForgetPress | null {
  const match = DATA.exec(data);
  if (!match) return null;
  return { confirmed: match[1] === "yes", userId: match[2]!, agentTag: match[3]! };
}

/** The first 8 bytes of SHA-256 of the agent id, base64url: 11 characters. */
export async function agentTag(agentId: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(agentId));
  return toBase64Url(new Uint8Array(digest).subarray(0, 8));
}

export async function forgetKeyboard(
  userId: string,
  agentId: string,
): Promise<InlineKeyboardMarkup> {
  const tag = await agentTag(agentId);
  return {
    inline_keyboard: [
      [
        { text: "Forget me", callback_data: `fg:yes:${userId}:${tag}` },
        { text: "Cancel", callback_data: `fg:no:${userId}:${tag}` },
      ],
    ],
  };
}

export function forgottenText(deleted: number): string {
  return `Done: I forgot ${deleted} ${deleted === 1 ? "memory" : "memories"} about you.`;
}
