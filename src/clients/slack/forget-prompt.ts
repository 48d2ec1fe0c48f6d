// `/forget` on Slack: the confirmation shown only to the person who asked (ephemeral), with
// "Forget me" and "Cancel" buttons whose action ids name that person and the agent, as Discord's
// /forget does: `forget:<yes|no>:<user id>:<agent id>`. Only that person's click counts.
const ACTION_ID = /^forget:(yes|no):([UW][A-Z0-9]{2,31}):([A-Za-z0-9][A-Za-z0-9_-]{0,63})$/;

export interface ForgetClick {
  confirmed: boolean;
  /** The Slack user id (U…) whose memories the button deletes. */
  userId: string;
  agentId: string;
}

export function parseForgetAction(actionId: string): ForgetClick | null {
  const match = ACTION_ID.exec(actionId);
  if (!match) return null;
  return { confirmed: match[1] === "yes", userId: match[2]!, agentId: match[3]! };
}

export const FORGET_QUESTION =
  "Delete everything I remember about you (facts, your profile and your messages)? This cannot be undone.";

/** The ephemeral slash-command answer: the question and its two buttons. */
export function forgetPrompt(userId: string, agentId: string) {
  return {
    response_type: "ephemeral" as const,
    text: FORGET_QUESTION,
    blocks: [
      { type: "section", text: { type: "plain_text", text: FORGET_QUESTION } },
      {
        type: "actions",
        elements: [
          {
            type: "button",
            text: { type: "plain_text", text: "Forget me" },
            style: "danger",
            action_id: `forget:yes:${userId}:${agentId}`,
          },
          {
            type: "button",
            text: { type: "plain_text", text: "Cancel" },
            action_id: `forget:no:${userId}:${agentId}`,
          },
        ],
      },
    ],
  };
}
