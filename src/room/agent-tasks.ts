// AgentTasks: one Durable Object per agent (named by the agent id) that owns its autonomous tasks
// and their schedules. The loop itself is src/runtime/task-loop.ts; this class persists the state
// after every unit of work, so a task cut off by eviction resumes at the step it was in: while
// tasks run, the SDK's keepAlive heartbeat holds an alarm, and that alarm (or any request) wakes
// a restarted object, whose onStart resumes the work. Tasks run outside the alarm handler, so
// schedules keep firing while a long task works. An agent's tasks run one at a time, oldest first.
// A task that reaches a tool needing a person's approval pauses (`awaiting_approval`, holding no
// slot) until the person who started it on Discord clicks, an API caller answers, or it expires.
import { Agent } from "agents";
import { MODEL_NOT_CONFIGURED_MESSAGE } from "../config.ts";
import type { Env } from "../env.ts";
import { DEFAULT_LIMITS, type ApprovalDecision } from "../runtime/turn-types.ts";
import { AppError, ModelNotConfiguredError, NotFoundError } from "../runtime/errors.ts";
import { modelChoiceFor } from "../runtime/turn-runner.ts";
import { assertWithinDailyBudget, dailyCeiling, utcDay } from "../runtime/spend.ts";
import { advanceTask, answerApproval, stopTask, type TaskLoopDeps } from "../runtime/task-loop.ts";
import { APPROVAL_WINDOW_MS, newApprovalId } from "./approvals.ts";
import {
  DEFAULT_TASK_LIMITS,
  isTerminal,
  newTaskState,
  type TaskEventBody,
  type TaskState,
} from "../runtime/task-types.ts";
import { effectiveServers } from "../mcp/registry.ts";
import { createRoomRuntime, type RoomRuntime } from "./room-runtime.ts";
import { MAX_STEP_ATTEMPTS, TaskStore, type ScheduleRecord } from "./task-store.ts";
import type { ReplySurface } from "./reply-surface.ts";
import { turnOrigin } from "./turn-origin.ts";
import { TaskReports } from "./task-reports.ts";
import type { AgentTasksRpc } from "./rpc.ts";
import type {
  CreateTaskRequest,
  ScheduleRequest,
  ScheduleResult,
  TaskApprovalClick,
  TaskApprovalResult,
  TaskEventsPage,
  TaskView,
} from "./task-requests.ts";
import { errorField, log } from "../log.ts";

const DELIVER_ITEM_ID = "deliver-task-results";
const DELIVERY_RETRY = { maxAttempts: 8, baseDelayMs: 5_000, maxDelayMs: 120_000 };
/** A cancelled step is given this long to stop before cancel answers with the state as it is. */
const CANCEL_WAIT_MS = 5_000;
const MAX_SCHEDULES = 100;

/**
 * The class binds to TASKS as `AgentTasks` (src/durable-objects.ts), which plugs in the surface
 * that tasks started there report to.
 */
export abstract class AgentTasksBase extends Agent<Env> implements AgentTasksRpc {
  private store!: TaskStore;
  private runtime: Promise<RoomRuntime> | null = null;
  private draining: Promise<void> | null = null;
  private running: { taskId: string; controller: AbortController; done: Promise<void> } | null =
    null;
  private surface!: ReplySurface;
  /** Progress lines, approval prompts and results, where a task reports. */
  private reports!: TaskReports;

  /** Where tasks started on a surface report (progress, prompts, result). */
  protected abstract replySurface(): ReplySurface;

  override onStart(): void {
    this.surface = this.replySurface();
    this.store = new TaskStore(this.ctx.storage.sql);
    this.store.migrate();
    this.store.prune(Date.now());
    this.reports = new TaskReports({
      store: this.store,
      surface: this.surface,
      agentId: this.name,
      agentName: async () =>
        (await (await this.getRuntime()).agents.get(this.name))?.character.name ?? this.name,
      expire: (payload) => this.expireTaskApproval(payload),
      retryLater: () => this.armDelivery(),
    });
    // Work left by an earlier instance (eviction, crash, deploy) resumes on first contact.
    if (this.store.nextRunnable()) void this.drain();
    if (this.store.undelivered().length > 0) this.reports.results();
    const paused = this.store.awaitingApproval();
    for (const task of paused) this.armApprovalExpiry(task.state);
    if (paused.length > 0) this.reports.prompt();
  }

  /** Stores a new task and starts it (after the agent's earlier tasks). */
  async createTask(request: CreateTaskRequest): Promise<{ taskId: string }> {
    const taskId = crypto.randomUUID();
    const now = Date.now();
    const state = newTaskState({
      taskId,
      agentId: this.name,
      roomId: request.roomId ?? `task:${taskId}`,
      goal: request.goal,
      limits: request.limits,
      source: request.source,
      scheduleId: request.scheduleId ?? null,
      requestedBy: request.requestedBy ?? null,
      now,
    });
    this.store.insert(state, request.delivery ?? null, now);
    void this.drain();
    return { taskId };
  }

  async getTask(taskId: string): Promise<TaskView | null> {
    const stored = this.store.get(taskId);
    return stored ? { state: stored.state, audit: this.store.audit(taskId) } : null;
  }

  async listTasks(limit: number): Promise<TaskState[]> {
    return this.store.list(limit);
  }

  async taskEvents(taskId: string, afterId: number, limit: number): Promise<TaskEventsPage | null> {
    const stored = this.store.get(taskId);
    if (!stored) return null;
    const events = this.store.events(taskId, afterId, limit);
    // Finished means nothing more will come once these are read.
    return { events, finished: isTerminal(stored.state.status) && events.length < limit };
  }

  /** Cancels a task: a running step is aborted and the task ends `cancelled` with its report. */
  async cancel(taskId: string): Promise<TaskState | null> {
    const stored = this.store.get(taskId);
    if (!stored) return null;
    if (isTerminal(stored.state.status)) return stored.state;
    if (this.running?.taskId === taskId) {
      const running = this.running;
      running.controller.abort(new Error("cancelled"));
      await Promise.race([
        running.done,
        new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_MS)),
      ]);
      return this.store.get(taskId)?.state ?? null;
    }
    const cancelled = stopTask(
      stored.state,
      Date.now(),
      (event) => this.emit(taskId, event),
      "cancelled",
      "the task was cancelled",
    );
    this.store.save(cancelled, [], Date.now());
    this.afterTask(cancelled);
    return cancelled;
  }

  // ---- approvals ----------------------------------------------------------------------------

  /** A click on a task's Approve / Deny button: only the person who started the task counts. */
  async answerClick(click: TaskApprovalClick): Promise<TaskApprovalResult> {
    const stored = this.store.byApprovalId(click.approvalId);
    if (!stored) return { status: "gone", taskStatus: null };
    if (stored.state.requestedBy === null || stored.state.requestedBy !== click.userId)
      return { status: "not_yours" };
    const result = this.recordAnswer(
      stored.state,
      click.approvalId,
      click.approve ? "approved" : "denied",
      click.userName,
    );
    if (result.status === "resolved" && stored.delivery) {
      // The task's next messages follow the answered prompt, on the click's own handle.
      this.store.setDelivery(result.taskId, this.surface.afterAnswer(stored.delivery, click.via));
    }
    return result;
  }

  /** POST /agents/:agentId/tasks/:taskId/approval: for tasks started where nobody can be asked. */
  async answerFromApi(taskId: string, approve: boolean): Promise<TaskApprovalResult | null> {
    const stored = this.store.get(taskId);
    if (!stored) return null;
    const approval = stored.state.approval;
    if (stored.state.status !== "awaiting_approval" || !approval || approval.decision)
      return { status: "gone", taskStatus: stored.state.status };
    if (stored.state.requestedBy !== null) return { status: "on_discord" };
    return this.recordAnswer(
      stored.state,
      approval.approvalId,
      approve ? "approved" : "denied",
      "an API caller",
    );
  }

  /** Schedule callback: nobody answered in time, which counts as a denial. */
  async expireTaskApproval(payload: { taskId: string; approvalId: string }): Promise<void> {
    const stored = this.store.get(payload.taskId);
    if (!stored) return;
    const tool = stored.state.approval?.tool ?? "";
    if (this.recordAnswer(stored.state, payload.approvalId, "expired", null).status !== "resolved")
      return;
    this.reports.expired(stored, tool);
  }

  private recordAnswer(
    state: TaskState,
    approvalId: string,
    decision: ApprovalDecision,
    by: string | null,
  ): TaskApprovalResult {
    const now = Date.now();
    const answered = answerApproval(state, { approvalId, decision, by }, now, (event) =>
      this.emit(state.taskId, event),
    );
    if (!answered) return { status: "gone", taskStatus: state.status };
    this.store.save(answered, [], now);
    void this.drain();
    return { status: "resolved", taskId: state.taskId, tool: state.approval!.tool, decision };
  }

  private armApprovalExpiry(state: TaskState): void {
    const approval = state.approval;
    if (!approval || approval.decision) return;
    const payload = { taskId: state.taskId, approvalId: approval.approvalId };
    // Idempotent: re-arming on every start never doubles it, and a lost one is re-created.
    this.schedule(
      new Date(Math.max(approval.expiresAt, Date.now() + 1_000)),
      "expireTaskApproval",
      payload,
      { idempotent: true },
    ).catch((error: unknown) => {
      log.error("task_approval_expiry_failed", {
        agent: this.name,
        taskId: state.taskId,
        error: errorField(error),
      });
    });
  }

  // ---- schedules ----------------------------------------------------------------------------

  async createTaskSchedule(request: ScheduleRequest): Promise<ScheduleResult> {
    if (this.store.schedules().length >= MAX_SCHEDULES) {
      return {
        ok: false,
        code: "conflict",
        message: `an agent can have at most ${MAX_SCHEDULES} schedules; delete one first`,
      };
    }
    const scheduleId = crypto.randomUUID();
    const payload = { scheduleId };
    let sdkId: string;
    try {
      if (request.kind === "every")
        sdkId = (await this.scheduleEvery(Number(request.when), "runSchedule", payload)).id;
      else if (request.kind === "at")
        sdkId = (await this.schedule(new Date(request.when), "runSchedule", payload)).id;
      else sdkId = (await this.schedule(request.when, "runSchedule", payload)).id;
    } catch (error) {
      // The SDK parses the cron expression: a bad one is the caller's mistake. (Class identity
      // does not survive RPC, so the refusal travels as data.)
      return {
        ok: false,
        code: "validation",
        message: `invalid schedule: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    this.store.insertSchedule({ ...request, scheduleId }, sdkId, Date.now());
    return { ok: true, schedule: this.store.schedule(scheduleId)! };
  }

  async taskSchedules(): Promise<ScheduleRecord[]> {
    return this.store.schedules();
  }

  async deleteTaskSchedule(scheduleId: string): Promise<boolean> {
    const record = this.store.schedule(scheduleId);
    if (!record) return false;
    await this.cancelSchedule(record.sdkScheduleId);
    this.store.deleteSchedule(scheduleId);
    return true;
  }

  /**
   * Schedule callback: starts one run as a task. A run whose previous task is still unfinished
   * is skipped (and counted), never started twice. It never throws: a failed run is reported on
   * the schedule, and the schedule goes on.
   */
  async runSchedule(payload: { scheduleId: string }): Promise<void> {
    const record = this.store.schedule(payload.scheduleId);
    if (!record) return;
    const previous = record.lastTaskId ? this.store.get(record.lastTaskId) : null;
    if (previous && !isTerminal(previous.state.status)) {
      this.store.recordSkip(record.scheduleId);
      return;
    }
    const { taskId } = await this.createTask({
      goal: record.goal,
      roomId: record.roomId ?? undefined,
      limits: DEFAULT_TASK_LIMITS,
      source: "schedule",
      scheduleId: record.scheduleId,
    });
    this.store.recordRun(record.scheduleId, taskId, Date.now(), record.kind === "at");
  }

  /**
   * The agent was deleted: its schedules stop, and tasks not finished are cancelled (their record
   * stays readable until it ages out).
   */
  async stopAll(): Promise<{ schedules: number; tasks: number }> {
    const schedules = this.store.schedules();
    for (const record of schedules) {
      await this.cancelSchedule(record.sdkScheduleId);
      this.store.deleteSchedule(record.scheduleId);
    }
    let tasks = 0;
    // Paused tasks hold no slot, so nextRunnable does not see them.
    for (const paused of this.store.awaitingApproval()) {
      await this.cancel(paused.state.taskId);
      tasks += 1;
    }
    for (let state = this.store.nextRunnable(); state; state = this.store.nextRunnable()) {
      await this.cancel(state.taskId);
      tasks += 1;
      // A step that would not stop in time stays "running"; it ends cancelled once it returns.
      if (this.running?.taskId === state.taskId) break;
    }
    return { schedules: schedules.length, tasks };
  }

  /** Queue callback: retries task results that could not reach their surface yet. */
  async deliverTaskResults(): Promise<void> {
    await this.reports.retry();
  }

  // ---- running ------------------------------------------------------------------------------

  private drain(): Promise<void> {
    if (!this.draining) {
      let completed = false;
      this.draining = (async () => {
        // The heartbeat alarm doubles as the wake-up after an eviction (onStart resumes).
        const release = await this.keepAlive();
        try {
          for (let state = this.store.nextRunnable(); state; state = this.store.nextRunnable())
            await this.runOne(state);
          completed = true;
        } finally {
          release();
        }
      })()
        .catch((error: unknown) => {
          log.error("task_drain_failed", { agent: this.name, error: errorField(error) });
        })
        .finally(() => {
          this.draining = null;
          // A task created while the loop was finishing would otherwise wait for the next wake-up.
          if (completed && this.store.nextRunnable()) void this.drain();
        });
    }
    return this.draining;
  }

  private async runOne(initial: TaskState): Promise<void> {
    const controller = new AbortController();
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    this.running = { taskId: initial.taskId, controller, done };
    let state = initial;
    try {
      const runtime = await this.getRuntime();
      const deps = await this.loopDeps(runtime, state, controller.signal);
      while (!isTerminal(state.status) && state.status !== "awaiting_approval") {
        if (this.store.beginAttempt(state.taskId) > MAX_STEP_ATTEMPTS) {
          throw new AppError(
            "internal",
            500,
            `the task was interrupted ${MAX_STEP_ATTEMPTS} times in one step and was given up`,
          );
        }
        const spentBefore = state.usage.promptTokens + state.usage.completionTokens;
        const advance = await advanceTask(state, deps);
        state = advance.state;
        this.store.save(state, advance.audit, Date.now());
        await this.recordSpend(
          runtime,
          state.usage.promptTokens + state.usage.completionTokens - spentBefore,
        );
      }
    } catch (error) {
      // Setting up failed (agent deleted, daily budget spent) or the object keeps crashing.
      const failure =
        error instanceof AppError
          ? error
          : new AppError("internal", 500, "the task failed unexpectedly; see the worker logs");
      if (!(error instanceof AppError))
        log.error("task_failed", {
          agent: this.name,
          taskId: state.taskId,
          error: errorField(error),
        });
      const current = this.store.get(state.taskId)?.state ?? state;
      if (!isTerminal(current.status)) {
        const failed = { ...current, error: { code: failure.code, message: failure.message } };
        state = stopTask(
          failed,
          Date.now(),
          (event) => this.emit(failed.taskId, event),
          "error",
          failure.message,
        );
        this.store.save(state, [], Date.now());
      }
    } finally {
      this.running = null;
      finished();
    }
    if (state.status === "awaiting_approval") {
      this.armApprovalExpiry(state);
      if (this.store.delivery(state.taskId)) this.reports.prompt();
      return;
    }
    this.afterTask(state);
  }

  private async loopDeps(
    runtime: RoomRuntime,
    state: TaskState,
    signal: AbortSignal,
  ): Promise<TaskLoopDeps> {
    const record = await runtime.agents.get(this.name);
    if (!record) throw new NotFoundError(`no agent with id "${this.name}"`);
    const character = record.character;
    const model = runtime.chat.model;
    if (!model) throw new ModelNotConfiguredError(MODEL_NOT_CONFIGURED_MESSAGE);
    // A task's later steps were admitted when it started.
    if (state.status === "queued") {
      await assertWithinDailyBudget(
        runtime.spend,
        this.name,
        dailyCeiling(character, runtime.config.dailyTokenLimit),
        Date.now(),
      );
    }
    await runtime.mcp.prepare(
      effectiveServers(
        character.settings.mcpServers,
        await runtime.mcpPlatform.servers.list(this.name),
      ),
    );
    // Plugins see the task's character, and a proposal filed in a step is shown where it started.
    runtime.plugins.prepare(
      character,
      turnOrigin("task", this.surface, this.store.delivery(state.taskId)),
    );
    return {
      model,
      models: modelChoiceFor(character, runtime.chat.models),
      character,
      tools: runtime.tools,
      now: () => Date.now(),
      emit: (event) => this.emit(state.taskId, event),
      signal,
      toolTimeoutMs: DEFAULT_LIMITS.toolTimeoutMs,
      maxToolResultChars: DEFAULT_LIMITS.maxToolResultChars,
      stepTimeoutMs: DEFAULT_LIMITS.turnTimeoutMs,
      approvalWindowMs: APPROVAL_WINDOW_MS,
      newApprovalId,
    };
  }

  private emit(taskId: string, event: TaskEventBody): void {
    this.store.appendEvent(taskId, event, Date.now());
    this.reports.line(taskId, event);
  }

  /** Counting never fails a task: a lost count only makes the ceiling more lenient (and is logged). */
  private async recordSpend(runtime: RoomRuntime, tokens: number): Promise<void> {
    if (tokens <= 0) return;
    try {
      await runtime.spend.add(this.name, utcDay(Date.now()), tokens);
    } catch (error) {
      log.warn("task_spend_not_recorded", { agent: this.name, tokens, error: errorField(error) });
    }
  }

  private afterTask(state: TaskState): void {
    if (!isTerminal(state.status)) return;
    if (state.scheduleId) this.store.recordOutcome(state.scheduleId, state.taskId, state.status);
    if (this.store.delivery(state.taskId)) this.reports.results();
  }

  private armDelivery(): void {
    this.queue("deliverTaskResults", {}, { id: DELIVER_ITEM_ID, retry: DELIVERY_RETRY }).catch(
      (error: unknown) => {
        log.error("task_deliver_item_failed", { agent: this.name, error: errorField(error) });
      },
    );
  }

  private getRuntime(): Promise<RoomRuntime> {
    this.runtime ??= createRoomRuntime(this.env, this.name, {
      settled: () => Promise.resolve(),
    }).catch((error: unknown) => {
      this.runtime = null;
      throw error;
    });
    return this.runtime;
  }
}
