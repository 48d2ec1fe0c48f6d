// What an Approve / Deny button carries back, on every platform: `<ap|tap>:<y|n>:<approval id>:
// <agent id>`. `ap` goes to the room the prompt was posted in, `tap` to the agent's task object.
// The agent id follows the one rule agent ids have (AGENT_ID_PATTERN: ASCII, so characters are
// bytes); each platform gives its own limit on the button's data (Discord's custom_id 100
// characters, Telegram's callback_data 64 bytes, Slack's action_id 255).
import { AGENT_ID_PATTERN } from "../../db/stores/agent-store.ts";

const PREFIXES = { room: "ap", task: "tap" } as const;
const BUTTON = new RegExp(
  `^(ap|tap):([yn]):([0-9a-f]{16}):(${AGENT_ID_PATTERN.source.replace(/^\^|\$$/g, "")})$`,
);

export type ApprovalTarget = keyof typeof PREFIXES;

export interface ApprovalButton {
  approve: boolean;
  approvalId: string;
  agentId: string;
  target: ApprovalTarget;
}

/** The button's data, or null when it is not well formed or passes the platform's `maxLength`. */
export function encodeApprovalButton(button: ApprovalButton, maxLength: number): string | null {
  const data = `${PREFIXES[button.target]}:${button.approve ? "y" : "n"}:${button.approvalId}:${button.agentId}`;
  return data.length <= maxLength && BUTTON.test(data) ? data : null;
}

/** The button some data names, or null for any other data. */
export function decodeApprovalButton(data: string): ApprovalButton | null {
  const match = BUTTON.exec(data);
  if (!match) return null;
  return {
    target: match[1] === "tap" ? "task" : "room",
    approve: match[2] === "y",
    approvalId: match[3]!,
    agentId: match[4]!,
  };
}

/** Whether a press on an approval for this agent could be routed back within `maxLength`. */
export function canRouteApprovalWithin(
  agentId: string,
  target: ApprovalTarget,
  maxLength: number,
): boolean {
  const probe = { approve: false, approvalId: "0".repeat(16), agentId, target };
  return encodeApprovalButton(probe, maxLength) !== null;
}
