// The questions of `needs_input` tasks started on a surface (Discord): posted where the task
// reports, with an Answer button for the person who started it, recorded in the task's row so a
// restarted object neither posts one twice nor loses where it is, and edited when nobody answered
// within the window (the task is then cancelled). The click and the modal are routed to the
// agent's AgentTasks object, never to a chat room.
import { errorField, log } from "../../log.ts";
import type { ReplySurface } from "../shared/reply-surface.ts";
import type { StoredTask, TaskStore } from "./task-store.ts";

export interface TaskQuestionsOptions {
  store: TaskStore;
  agentId: string;
  agentName(): Promise<string>;
  surface: ReplySurface;
}

export class TaskQuestions {
  private readonly options: TaskQuestionsOptions;

  constructor(options: TaskQuestionsOptions) {
    this.options = options;
  }

  /** Posts every question a paused task still lacks; throws on a failure worth retrying. */
  async postPending(): Promise<void> {
    for (const task of this.options.store.paused("needs_input")) await this.post(task);
  }

  /** Says on the question that nobody answered in time (best effort: the task ends regardless). */
  async markExpired(task: StoredTask): Promise<void> {
    const posted = task.inputPrompt?.message;
    if (!posted) return;
    try {
      await this.options.surface.closeExpiredQuestion(posted);
    } catch (error) {
      log.warn("task_question_edit_failed", {
        agent: this.options.agentId,
        taskId: task.state.taskId,
        error: errorField(error),
      });
    }
  }

  private async post(task: StoredTask): Promise<void> {
    const { store, surface } = this.options;
    const input = task.state.input;
    const target = task.delivery;
    if (!target || !input || task.inputPrompt?.inputId === input.inputId) return;
    const taskId = task.state.taskId;
    try {
      const message = await surface.postQuestion(target, {
        inputId: input.inputId,
        agentId: this.options.agentId,
        agentName: await this.options.agentName(),
        question: input.question,
        requesterId: task.state.requestedBy,
        expiresAt: input.expiresAt,
      });
      store.setInputPrompt(taskId, { inputId: input.inputId, message });
      const used = surface.openingUsed(target);
      if (used !== target) store.setDelivery(taskId, used);
    } catch (error) {
      const final = surface.isPermanentFailure(error);
      log.error("task_question_failed", {
        agent: this.options.agentId,
        taskId,
        final,
        error: errorField(error),
      });
      if (!final) throw error;
      // Nobody can be asked there: the task waits out its window, then ends cancelled.
      store.setInputPrompt(taskId, { inputId: input.inputId, message: null });
    }
  }
}
