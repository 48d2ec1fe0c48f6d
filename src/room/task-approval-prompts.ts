// The Approve / Deny prompts of tasks started from Discord: posted where the task reports (its
// interaction, then the channel), recorded in the task's row so a restarted object neither posts
// one twice nor loses where it is, and edited when the approval expires. The buttons' custom ids
// route a click to the agent's AgentTasks object (`tap:`), never to the channel's chat room.
import { approvalPrompt, approvalResultText } from "../clients/discord/approval.ts";
import { editPosted, postForInteraction } from "../clients/discord/delivery.ts";
import { DiscordApiError, type DiscordRest } from "../clients/discord/rest.ts";
import type { StoredTask, TaskStore } from "./task-store.ts";
import { errorField, log } from "../log.ts";

export interface TaskApprovalPromptsOptions {
  store: TaskStore;
  agentId: string;
  agentName(): Promise<string>;
  rest(): DiscordRest;
  /** A prompt Discord refused for good: nobody can be asked, so the approval expires now. */
  expire(payload: { taskId: string; approvalId: string }): Promise<void>;
}

export class TaskApprovalPrompts {
  private readonly options: TaskApprovalPromptsOptions;

  constructor(options: TaskApprovalPromptsOptions) {
    this.options = options;
  }

  /** Posts every prompt a paused Discord task still lacks; throws on a failure worth retrying. */
  async postPending(): Promise<void> {
    for (const task of this.options.store.awaitingApproval()) await this.post(task);
  }

  /** Says on the prompt that nobody answered in time (best effort: the task goes on regardless). */
  async markExpired(task: StoredTask, tool: string): Promise<void> {
    const posted = task.prompt?.message;
    if (!posted) return;
    try {
      await editPosted(this.options.rest(), posted, { content: approvalResultText(tool, "expired"), components: [] }, Date.now);
    } catch (error) {
      log.warn("task_approval_prompt_edit_failed", { agent: this.options.agentId, taskId: task.state.taskId, error: errorField(error) });
    }
  }

  private async post(task: StoredTask): Promise<void> {
    const { store } = this.options;
    const approval = task.state.approval;
    const target = task.delivery;
    if (!target || !approval || approval.decision || task.prompt?.approvalId === approval.approvalId) return;
    const body = approvalPrompt({
      target: "task",
      approvalId: approval.approvalId,
      agentId: this.options.agentId,
      agentName: await this.options.agentName(),
      tool: approval.tool,
      arguments: approval.arguments,
      requesterDiscordId: /^discord:(\d{1,20})$/.exec(task.state.requestedBy ?? "")?.[1] ?? null,
      expiresAt: approval.expiresAt,
    });
    const taskId = task.state.taskId;
    try {
      const message = await postForInteraction(this.options.rest(), target, body, Date.now);
      store.setPrompt(taskId, { approvalId: approval.approvalId, message });
      if (!target.originalUsed) store.setDelivery(taskId, { ...target, originalUsed: true });
    } catch (error) {
      const final = error instanceof DiscordApiError && !error.retryable;
      log.error("task_approval_prompt_failed", { agent: this.options.agentId, taskId, final, error: errorField(error) });
      if (!final) throw error;
      store.setPrompt(taskId, { approvalId: approval.approvalId, message: null });
      await this.options.expire({ taskId, approvalId: approval.approvalId });
    }
  }
}
