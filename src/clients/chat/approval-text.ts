// The words of a tool approval prompt shared by every chat platform: the arguments as shown (cut
// to the platform's room), and what the prompt becomes once answered or expired. Each platform
// gives its own icons and how a tool or a name is quoted in its markup.
import { APPROVAL_WINDOW_MS } from "../../objects/shared/approvals.ts";
import type { ApprovalPromptRequest } from "../../objects/shared/reply-surface.ts";
import type { ApprovalTarget } from "./approval-button.ts";

export type ApprovalOutcome = "approved" | "denied" | "expired";

export interface ApprovalTextStyle {
  icons: Record<ApprovalOutcome, string>;
  /** A tool's name as code (Discord's and Slack's backticks; plain on Telegram). */
  tool: (tool: string) => string;
  /** A person's name, escaped for the platform's markup. */
  name: (name: string) => string;
}

/** What every platform's prompt shows and carries; each adds how it names the requester. */
export interface ApprovalPromptFields {
  target: ApprovalTarget;
  approvalId: string;
  agentId: string;
  agentName: string;
  tool: string;
  arguments: Record<string, unknown>;
  expiresAt: number;
}

/** A room's or task's request, as the prompt's fields. */
export function approvalPromptFields(request: ApprovalPromptRequest): ApprovalPromptFields {
  const { asker, approvalId, agentId, agentName, tool, expiresAt } = request;
  return {
    target: asker,
    approvalId,
    agentId,
    agentName,
    tool,
    arguments: request.arguments,
    expiresAt,
  };
}

/** The arguments as pretty JSON, cut at `maxChars` with an ellipsis line. */
export function shownArguments(args: Record<string, unknown>, maxChars: number): string {
  const json = JSON.stringify(args, null, 2);
  return json.length > maxChars ? `${json.slice(0, maxChars)}\n…` : json;
}

/** What the prompt says once answered (by whom, when the platform names them) or expired. */
export function approvalOutcomeText(
  tool: string,
  outcome: ApprovalOutcome,
  by: string | null | undefined,
  style: ApprovalTextStyle,
): string {
  const icon = style.icons[outcome];
  const code = style.tool(tool);
  switch (outcome) {
    case "approved":
      return `${icon} ${by ? `${style.name(by)} approved` : "Approved"}: running ${code}…`;
    case "denied":
      return `${icon} ${by ? `${style.name(by)} denied` : "Denied"} ${code}: it was not run.`;
    case "expired":
      return `${icon} Nobody answered within ${APPROVAL_WINDOW_MS / 60_000} minutes: ${code} was not run.`;
  }
}
