// What tasks started on a surface (Discord) post there, in order through one chain: a progress
// line per plan and finished step (best effort), the Approve / Deny prompts and the questions of
// paused tasks (approval-prompts.ts, task-questions.ts), and after them each result,
// delivered durably: a failure worth retrying is handed to `retryLater` (the object's queue
// item), which calls retry().
import type { TaskEventBody } from "../../runtime/tasks/task-types.ts";
import { errorField, log } from "../../log.ts";
import type { ReplySurface } from "../shared/reply-surface.ts";
import { TaskApprovalPrompts } from "./approval-prompts.ts";
import { TaskQuestions } from "./task-questions.ts";
import { taskProgressLine, taskResultText } from "./task-messages.ts";
import type { StoredTask, TaskStore } from "./task-store.ts";

export interface TaskReportsOptions {
  store: TaskStore;
  surface: ReplySurface;
  agentId: string;
  agentName(): Promise<string>;
  /** A prompt the surface refused for good: the approval expires now. */
  expire(payload: { taskId: string; approvalId: string }): Promise<void>;
  /** Arms the durable retry, which calls retry(). */
  retryLater(): void;
}

export class TaskReports {
  private readonly options: TaskReportsOptions;
  private readonly prompts: TaskApprovalPrompts;
  private readonly questions: TaskQuestions;
  /** Lines, prompts and results in the order they were asked for; never left rejected. */
  private chain: Promise<void> = Promise.resolve();

  constructor(options: TaskReportsOptions) {
    this.options = options;
    const { store, surface, agentId, agentName, expire } = options;
    this.prompts = new TaskApprovalPrompts({ store, surface, agentId, agentName, expire });
    this.questions = new TaskQuestions({ store, surface, agentId, agentName });
  }

  /** A task event: a progress line where the task reports, when the event is worth one. */
  line(taskId: string, event: TaskEventBody): void {
    const { store, surface, agentId } = this.options;
    const delivery = store.delivery(taskId);
    const line = delivery ? taskProgressLine(event) : null;
    if (!delivery || !line) return;
    // The first line replaces the deferred "thinking" response; the rest follow it.
    const used = surface.openingUsed(delivery);
    if (used !== delivery) store.setDelivery(taskId, used);
    this.chain = this.chain.then(async () => {
      try {
        await surface.postLine(delivery, line);
      } catch (error) {
        log.warn("task_progress_not_posted", { agent: agentId, error: errorField(error) });
      }
    });
  }

  /** Posts the prompts and questions paused tasks still lack, after the lines on their way. */
  prompt(): void {
    this.chain = this.chain
      .then(async () => {
        await this.prompts.postPending();
        await this.questions.postPending();
      })
      .catch(() => this.options.retryLater());
  }

  /** Says on a question that nobody answered in time (best effort). */
  questionExpired(task: StoredTask): void {
    this.chain = this.chain.then(() => this.questions.markExpired(task));
  }

  /** Says on a prompt that nobody answered in time (best effort). */
  expired(task: StoredTask, tool: string): void {
    this.chain = this.chain.then(() => this.prompts.markExpired(task, tool));
  }

  /** Delivers the results of finished tasks that report somewhere. */
  results(): void {
    void this.deliverResults().catch(() => this.options.retryLater());
  }

  /** The queue item's work: what could not be posted yet. Throws to be retried. */
  async retry(): Promise<void> {
    await this.prompts.postPending();
    await this.questions.postPending();
    await this.deliverResults();
  }

  private async deliverResults(): Promise<void> {
    const { store, surface, agentId } = this.options;
    await this.chain;
    for (const task of store.undelivered()) {
      const taskId = task.state.taskId;
      try {
        const job = { reply: taskResultText(task.state), error: null, sentParts: 0 };
        await surface.sendReply(task.delivery!, job, () => {});
        store.markDelivered(taskId);
      } catch (error) {
        const final = surface.isPermanentFailure(error);
        log.error("task_delivery_failed", {
          agent: agentId,
          taskId,
          final,
          error: errorField(error),
        });
        if (!final) throw error;
        store.markDelivered(taskId);
      }
    }
  }
}
