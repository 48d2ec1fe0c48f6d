// How an agent's paused tasks are answered, for the AgentTasks object: a tool approval (the
// requester's Discord click, or the API for tasks started where nobody can be asked; expiry
// denies), a `needs_input` question (the requester's Discord modal, or the API; expiry cancels the
// task with its report), and a step delegated to another agent's task (started over RPC with a
// key that makes a repeat find the same task; the child's result, a refusal or the wait's expiry
// answers the step; a cancelled parent cancels its child). Each answer is a pure state change
// (src/runtime/tasks/pause-answers.ts) saved in one synchronous block, then the pool is pumped.
import { errorField, log } from "../../log.ts";
import {
  answerApproval,
  answerDelegation,
  answerInput,
  delegationStarted,
  stopTask,
} from "../../runtime/tasks/advance-task.ts";
import { clip } from "../../runtime/tasks/task-plan.ts";
import type { TaskEventBody, TaskState } from "../../runtime/tasks/task-types.ts";
import type { ApprovalDecision } from "../../runtime/turn/turn-types.ts";
import type { ToolOutput } from "../../runtime/ports/tools.ts";
import type { ReplySurface } from "../shared/reply-surface.ts";
import { childNotice, childRequest, type TaskPeers } from "./task-delegations.ts";
import type { TaskReports } from "./task-reports.ts";
import type {
  DelegationNotice,
  TaskApprovalClick,
  TaskApprovalResult,
  TaskInputAnswer,
  TaskInputResult,
  TaskQuestionOpen,
} from "./task-requests.ts";
import type { TaskStore } from "./task-store.ts";

export interface TaskPausesOptions {
  agentId: string;
  store: TaskStore;
  surface: ReplySurface;
  reports: TaskReports;
  peers: TaskPeers;
  emit(taskId: string, event: TaskEventBody): void;
  /** A paused task can run again: fill the slots. */
  resumed(): void;
  /** A task ended while paused (cancelled, expired): deliver its result, tell its parent. */
  finished(state: TaskState): void;
  /** A durable schedule callback at `at` (idempotent per payload). */
  schedule(
    at: number,
    callback: "expireTaskApproval" | "expireTaskInput" | "expireDelegation",
    payload: Record<string, string>,
  ): void;
  /** Arms the durable retry of delegation work (starting children, telling parents). */
  retryLater(): void;
}

export class TaskPauses {
  private readonly options: TaskPausesOptions;

  constructor(options: TaskPausesOptions) {
    this.options = options;
  }

  /** A restarted object: the deadlines, prompts and delegation messages of paused tasks again. */
  resumeAfterRestart(): void {
    const { store, reports } = this.options;
    let prompts = false;
    for (const status of ["awaiting_approval", "needs_input", "awaiting_delegate"] as const) {
      for (const task of store.paused(status)) {
        this.armDeadline(task.state);
        prompts ||= status !== "awaiting_delegate" && task.delivery !== null;
      }
    }
    if (prompts) reports.prompt();
    void this.syncDelegations().catch(() => this.options.retryLater());
  }

  /** A run stopped at a pause: its deadline, its prompt or question, or the delegated task. */
  paused(state: TaskState): void {
    this.armDeadline(state);
    if (state.status === "awaiting_delegate") {
      void this.startChild(state.taskId).catch(() => this.options.retryLater());
    } else if (this.options.store.delivery(state.taskId)) this.options.reports.prompt();
  }

  // ---- approvals ----------------------------------------------------------------------------

  approvalClick(click: TaskApprovalClick): TaskApprovalResult {
    const stored = this.options.store.byApprovalId(click.approvalId);
    if (!stored) return { status: "gone", taskStatus: null };
    if (stored.state.requestedBy === null || stored.state.requestedBy !== click.userId)
      return { status: "not_yours" };
    const decision = click.approve ? "approved" : "denied";
    const result = this.recordApproval(stored.state, click.approvalId, decision, click.userName);
    if (result.status === "resolved" && stored.delivery) {
      // The task's next messages follow the answered prompt, on the click's own handle.
      const next = this.options.surface.afterAnswer(stored.delivery, click.via);
      this.options.store.setDelivery(result.taskId, next);
    }
    return result;
  }

  approvalFromApi(taskId: string, approve: boolean): TaskApprovalResult | null {
    const stored = this.options.store.get(taskId);
    if (!stored) return null;
    const approval = stored.state.approval;
    if (stored.state.status !== "awaiting_approval" || !approval || approval.decision)
      return { status: "gone", taskStatus: stored.state.status };
    if (stored.state.requestedBy !== null) return { status: "on_discord" };
    const decision = approve ? "approved" : "denied";
    return this.recordApproval(stored.state, approval.approvalId, decision, "an API caller");
  }

  expireApproval(payload: { taskId: string; approvalId: string }): void {
    const stored = this.options.store.get(payload.taskId);
    if (!stored) return;
    const tool = stored.state.approval?.tool ?? "";
    if (
      this.recordApproval(stored.state, payload.approvalId, "expired", null).status !== "resolved"
    )
      return;
    this.options.reports.expired(stored, tool);
  }

  private recordApproval(
    state: TaskState,
    approvalId: string,
    decision: ApprovalDecision,
    by: string | null,
  ): TaskApprovalResult {
    const now = Date.now();
    const answered = answerApproval(state, { approvalId, decision, by }, now, (event) =>
      this.options.emit(state.taskId, event),
    );
    if (!answered) return { status: "gone", taskStatus: state.status };
    this.options.store.save(answered, [], now);
    this.options.resumed();
    return { status: "resolved", taskId: state.taskId, tool: state.approval!.tool, decision };
  }

  // ---- questions (needs_input) --------------------------------------------------------------

  inputFromApi(taskId: string, text: string): TaskInputResult | null {
    const stored = this.options.store.get(taskId);
    if (!stored) return null;
    const input = stored.state.input;
    if (stored.state.status !== "needs_input" || !input)
      return { status: "gone", taskStatus: stored.state.status };
    if (stored.state.requestedBy !== null) return { status: "on_discord" };
    return this.recordInput(stored.state, input.inputId, text, "an API caller");
  }

  openQuestion(inputId: string, userId: string): TaskQuestionOpen {
    const stored = this.options.store.byInputId(inputId);
    if (!stored?.state.input) return { status: "gone" };
    if (stored.state.requestedBy === null || stored.state.requestedBy !== userId)
      return { status: "not_yours" };
    return { status: "open", question: stored.state.input.question };
  }

  inputFromModal(answer: TaskInputAnswer): TaskInputResult {
    const stored = this.options.store.byInputId(answer.inputId);
    if (!stored) return { status: "gone", taskStatus: null };
    if (stored.state.requestedBy === null || stored.state.requestedBy !== answer.userId)
      return { status: "not_yours" };
    const result = this.recordInput(stored.state, answer.inputId, answer.text, answer.userName);
    if (result.status === "resolved" && stored.delivery) {
      // What follows goes out on the modal submission's fresh token, after the answered question.
      const next = this.options.surface.afterAnswer(stored.delivery, answer.via);
      this.options.store.setDelivery(result.taskId, next);
    }
    return result;
  }

  /** Nobody answered within the window: the task ends `cancelled` with its report. */
  expireInput(payload: { taskId: string; inputId: string }): void {
    const stored = this.options.store.get(payload.taskId);
    const input = stored?.state.input;
    if (stored?.state.status !== "needs_input" || input?.inputId !== payload.inputId) return;
    const hours = Math.round((input.expiresAt - input.requestedAt) / 3_600_000);
    const cancelled = stopTask(
      stored.state,
      Date.now(),
      (event) => this.options.emit(payload.taskId, event),
      "cancelled",
      `nobody answered its question within ${hours} hours`,
    );
    this.options.store.save(cancelled, [], Date.now());
    this.options.reports.questionExpired(stored);
    this.options.finished(cancelled);
  }

  private recordInput(
    state: TaskState,
    inputId: string,
    text: string,
    by: string | null,
  ): TaskInputResult {
    const now = Date.now();
    const answered = answerInput(state, { inputId, text, by }, now, (event) =>
      this.options.emit(state.taskId, event),
    );
    if (!answered) return { status: "gone", taskStatus: state.status };
    this.options.store.save(answered, [], now);
    this.options.resumed();
    return { status: "resolved", taskId: state.taskId };
  }

  // ---- delegated steps ----------------------------------------------------------------------

  /** A task another agent's step started here: the link, in its events and its audit trail. */
  linkToParent(state: TaskState): void {
    const parent = state.parent!;
    const now = Date.now();
    this.options.emit(state.taskId, {
      type: "delegated_by",
      parentAgentId: parent.agentId,
      parentTaskId: parent.taskId,
      step: parent.step,
    });
    this.options.store.save(
      state,
      [
        {
          kind: "delegated_by",
          step: 0,
          callId: parent.callId,
          tool: "delegate_task",
          arguments: { agentId: this.options.agentId, goal: state.goal },
          result: `started by agent "${parent.agentId}", task ${parent.taskId}, step ${parent.step}`,
          ok: true,
          cached: false,
          durationMs: 0,
          model: "",
          at: now,
          link: { agentId: parent.agentId, taskId: parent.taskId },
        },
      ],
      now,
    );
  }

  /** The durable part (queue item): children not started yet, parents not told yet. */
  async syncDelegations(): Promise<void> {
    for (const task of this.options.store.paused("awaiting_delegate"))
      if (!task.state.delegation?.childTaskId) await this.startChild(task.state.taskId);
    await this.tellParents();
  }

  /** A delegated task of this agent finished: its parent hears, retried until it does. */
  notifyParents(): void {
    void this.tellParents().catch(() => this.options.retryLater());
  }

  delegationFinished(notice: DelegationNotice): void {
    this.answerStep(notice.parentTaskId, {
      callId: notice.callId,
      childTaskId: notice.childTaskId,
      output: notice.output,
      status: notice.status,
    });
  }

  /** The wait is over: the step goes on without the result, and the other agent's task stops. */
  expireDelegation(payload: { taskId: string; callId: string }): void {
    const stored = this.options.store.get(payload.taskId);
    const pending = stored?.state.delegation;
    if (!stored || !pending || pending.output || pending.callId !== payload.callId) return;
    const minutes = Math.round((pending.expiresAt - pending.requestedAt) / 60_000);
    this.answerStep(payload.taskId, {
      callId: payload.callId,
      childTaskId: pending.childTaskId,
      output: {
        ok: false,
        error: `agent "${pending.agentId}"'s task did not finish within ${minutes} minutes and was cancelled`,
      },
      status: "timed_out",
    });
    this.cancelChild(stored.state);
  }

  /** A parent that stops waiting (cancelled, expired) stops its child too (best effort). */
  cancelChild(state: TaskState): void {
    const pending = state.delegation;
    if (!pending?.childTaskId) return;
    const { agentId, childTaskId } = pending;
    void this.options.peers.cancel(agentId, childTaskId).catch((error: unknown) => {
      log.warn("delegated_task_not_cancelled", {
        agent: this.options.agentId,
        child: `${agentId}/${childTaskId}`,
        error: errorField(error),
      });
    });
  }

  private answerStep(
    taskId: string,
    answer: { callId: string; childTaskId: string | null; output: ToolOutput; status: string },
  ): void {
    const stored = this.options.store.get(taskId);
    if (!stored) return;
    const now = Date.now();
    const answered = answerDelegation(stored.state, answer, now, (event) =>
      this.options.emit(taskId, event),
    );
    if (!answered) return;
    this.options.store.save(answered, [], now);
    this.options.resumed();
  }

  /** Asks the other agent's object for the task (idempotent by the step's key), records its id. */
  private async startChild(taskId: string): Promise<void> {
    const { store, peers, agentId } = this.options;
    const state = store.get(taskId)?.state;
    const pending = state?.delegation;
    if (state?.status !== "awaiting_delegate" || !pending || pending.childTaskId) return;
    const result = await peers.createTask(pending.agentId, childRequest(agentId, state));
    // The step may have been answered meanwhile (the child finished first, or the wait expired).
    const current = store.get(taskId)?.state;
    if (!current) return;
    if (!result.ok) {
      this.answerStep(taskId, {
        callId: pending.callId,
        childTaskId: null,
        output: {
          ok: false,
          error: clip(`agent "${pending.agentId}" refused the task: ${result.message}`, 1_000),
        },
        status: "refused",
      });
      return;
    }
    const started = delegationStarted(current, result.taskId, (event) =>
      this.options.emit(taskId, event),
    );
    if (started) store.save(started, [], Date.now());
  }

  private async tellParents(): Promise<void> {
    const { store, peers, agentId } = this.options;
    for (const child of store.unnotifiedChildren()) {
      const parent = child.state.parent;
      if (parent) await peers.delegationFinished(parent.agentId, childNotice(agentId, child.state));
      store.markParentNotified(child.state.taskId);
    }
  }

  private armDeadline(state: TaskState): void {
    const { schedule } = this.options;
    const { taskId } = state;
    if (state.status === "awaiting_approval" && state.approval && !state.approval.decision)
      schedule(state.approval.expiresAt, "expireTaskApproval", {
        taskId,
        approvalId: state.approval.approvalId,
      });
    else if (state.status === "needs_input" && state.input)
      schedule(state.input.expiresAt, "expireTaskInput", { taskId, inputId: state.input.inputId });
    else if (state.status === "awaiting_delegate" && state.delegation && !state.delegation.output)
      schedule(state.delegation.expiresAt, "expireDelegation", {
        taskId,
        callId: state.delegation.callId,
      });
  }
}
