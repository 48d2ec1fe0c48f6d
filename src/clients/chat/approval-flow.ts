// One answer to a press on Approve / Deny, for every chat platform: the button (already parsed
// from the platform's wire data) names the room or the agent's task object that keeps the
// pending approval, which decides whether this person's answer counts and resolves it. Each
// platform renders the result its own way (a notice, an ephemeral line, the prompt edited).
import type { Env } from "../../env.ts";
import { resolveApproval } from "../../objects/conversation/room-client.ts";
import type { ApprovalAnswer } from "../../objects/conversation/room-types.ts";
import { answerTaskApprovalClick } from "../../objects/tasks/task-client.ts";
import type { ApprovalButton } from "./approval-button.ts";

export interface ApprovalPress {
  button: ApprovalButton;
  /** The room the prompt is in (`discord:<channel>`, `telegram:<chat>`, `slack:<channel>`…). */
  roomId: string | null;
  /** Who pressed, and the press's own handle on the surface. */
  from: Pick<ApprovalAnswer, "userId" | "userName" | "via">;
}

export type ApprovalPressResult =
  /** Not a press this platform answers (a task's prompt where tasks post none, no room). */
  | { status: "invalid" }
  | { status: "not_yours" }
  /** Nothing waits for this answer: answered already, expired, or unknown. */
  | { status: "gone" }
  | { status: "resolved"; tool: string; decision: "approved" | "denied" | "expired" };

export interface ApprovalPressOptions {
  /** Whether presses on a task's prompt (`tap:`) are answered: only Discord posts them. */
  tasks: boolean;
  /**
   * Whether the person may answer for whoever asked: known up front (Telegram's owners, from the
   * configuration), or asked only once the room said not_yours (Slack's admin lookup costs a Web
   * API call, spared on the requester's own press).
   */
  onBehalf?: boolean | (() => Promise<boolean>);
}

export async function answerApprovalPress(
  env: Env,
  press: ApprovalPress,
  options: ApprovalPressOptions,
): Promise<ApprovalPressResult> {
  const { button, roomId } = press;
  const answer: ApprovalAnswer = {
    ...press.from,
    approvalId: button.approvalId,
    approve: button.approve,
    ...(options.onBehalf === true ? { onBehalf: true } : {}),
  };
  if (button.target === "task") {
    if (!options.tasks) return { status: "invalid" };
    const result = await answerTaskApprovalClick(env, button.agentId, answer);
    if (result.status !== "resolved")
      return { status: result.status === "not_yours" ? "not_yours" : "gone" };
    // A press never gets `on_discord` (the REST answer to a Discord task): it reads as gone.
    return { status: "resolved", tool: result.tool, decision: result.decision };
  }
  if (roomId === null) return { status: "invalid" };
  let result = await resolveApproval(env, button.agentId, roomId, answer);
  const askOnBehalf = options.onBehalf;
  if (result.status === "not_yours" && typeof askOnBehalf === "function" && (await askOnBehalf()))
    result = await resolveApproval(env, button.agentId, roomId, { ...answer, onBehalf: true });
  return result;
}
