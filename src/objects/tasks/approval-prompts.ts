// The Approve / Deny prompts of tasks started on a surface (Discord): posted where the task
// reports (its interaction, then the channel), recorded in the task's row so a restarted object
// neither posts one twice nor loses where it is, and edited when the approval expires. A click is
// routed to the agent's AgentTasks object (asker "task"), never to the channel's chat room.
import type { ReplySurface } from "../shared/reply-surface.ts";
import type { StoredTask, TaskStore } from "./task-store.ts";
import { errorField, log } from "../../log.ts";

export interface TaskApprovalPromptsOptions {
  store: TaskStore;
  agentId: string;
  agentName(): Promise<string>;
  surface: ReplySurface;
  /** A prompt the surface refused for good: nobody can be asked, so the approval expires now. */
  expire(payload: { taskId: string; approvalId: string }): Promise<void>;
}

export class TaskApprovalPrompts {
  private readonly options: TaskApprovalPromptsOptions;

  constructor(options: TaskApprovalPromptsOptions) {
    this.options = options;
  }

  /** Posts every prompt a paused task still lacks; throws on a failure worth retrying. */
  async postPending(): Promise<void> {
    for (const task of this.options.store.awaitingApproval()) await this.post(task);
  }

  /** Says on the prompt that nobody answered in time (best effort: the task goes on regardless). */
  async markExpired(task: StoredTask, tool: string): Promise<void> {
    const posted = task.prompt?.message;
    if (!posted) return;
    try {
      await this.options.surface.closeExpiredPrompt(posted, tool);
    } catch (error) {
      const taskId = task.state.taskId;
      log.warn("task_approval_prompt_edit_failed", {
        agent: this.options.agentId,
        taskId,
        error: errorField(error),
      });
    }
  }

  private async post(task: StoredTask): Promise<void> {
    const { store, surface } = this.options;
    const approval = task.state.approval;
    const target = task.delivery;
    if (
      !target ||
      !approval ||
      approval.decision ||
      task.prompt?.approvalId === approval.approvalId
    )
      return;
    const agentName = await this.options.agentName();
    const taskId = task.state.taskId;
    try {
      const message = await surface.postApprovalPrompt(target, {
        asker: "task",
        approvalId: approval.approvalId,
        agentId: this.options.agentId,
        agentName,
        tool: approval.tool,
        arguments: approval.arguments,
        requesterId: task.state.requestedBy,
        expiresAt: approval.expiresAt,
      });
      store.setPrompt(taskId, { approvalId: approval.approvalId, message });
      const used = surface.openingUsed(target);
      if (used !== target) store.setDelivery(taskId, used);
    } catch (error) {
      const final = surface.isPermanentFailure(error);
      log.error("task_approval_prompt_failed", {
        agent: this.options.agentId,
        taskId,
        final,
        error: errorField(error),
      });
      if (!final) throw error;
      store.setPrompt(taskId, { approvalId: approval.approvalId, message: null });
      await this.options.expire({ taskId, approvalId: approval.approvalId });
    }
  }
}
