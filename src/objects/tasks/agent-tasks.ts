// AgentTasks: one Durable Object per agent (named by the agent id) that owns its autonomous tasks
// and their schedules. The loop itself is src/runtime/tasks/advance-task.ts; run-until-pause.ts runs one task and
// persists its state after every unit of work, and task-pool.ts runs up to the agent's
// `settings.tasks.concurrency` of them at once (the rest wait in order, at most 50). While tasks
// run, the SDK's keepAlive heartbeat holds an alarm, and that alarm (or any request) wakes a
// restarted object, whose onStart resumes every task that was running. A paused task (a tool
// approval, a question for a person, a step delegated to another agent's task) holds no slot;
// task-pauses.ts answers those pauses. Schedules fire through the SDK scheduler.
import { traceConfig } from "../../telemetry/otlp.ts";
import { createTaskTracer, type TaskTracer } from "../../telemetry/task-spans.ts";
import { Agent } from "agents";
import type { Env } from "../../env.ts";
import { errorField, log } from "../../log.ts";
import { stopTask } from "../../runtime/tasks/advance-task.ts";
import {
  DEFAULT_TASK_CONCURRENCY,
  DEFAULT_TASK_LIMITS,
  isPaused,
  isTerminal,
  MAX_QUEUED_TASKS,
  newTaskState,
  type TaskEventBody,
  type TaskState,
} from "../../runtime/tasks/task-types.ts";
import type { ReplySurface } from "../shared/reply-surface.ts";
import { createRoomRuntime } from "../shared/agent-wiring.ts";
import type { RoomPluginsFactory } from "../shared/plugin-port.ts";
import { RuntimeCell } from "../shared/runtime-cell.ts";
import { turnOrigin } from "../shared/turn-origin.ts";
import type { AgentTasksRpc } from "../../rpc.ts";
import { TaskEventFeed } from "./event-feed.ts";
import { createTaskPeers } from "./task-delegations.ts";
import { TaskPauses } from "./task-pauses.ts";
import { TaskPool } from "./task-pool.ts";
import { TaskReports } from "./task-reports.ts";
import type {
  CreateTaskRequest,
  CreateTaskResult,
  DelegationNotice,
  ScheduleRequest,
  ScheduleResult,
  TaskApprovalClick,
  TaskApprovalResult,
  TaskEventsPage,
  TaskInputAnswer,
  TaskInputResult,
  TaskQuestionOpen,
  TaskView,
} from "./task-requests.ts";
import { runTaskUnits } from "./run-until-pause.ts";
import { type ScheduleRecord, TaskScheduleStore } from "./schedule-store.ts";
import { TaskStore } from "./task-store.ts";

const DELIVER_ITEM_ID = "deliver-task-results";
const DELEGATION_ITEM_ID = "task-delegations";
const DELIVERY_RETRY = { maxAttempts: 8, baseDelayMs: 5_000, maxDelayMs: 120_000 };
const MAX_SCHEDULES = 100;
/** How long a refused POST is told to wait before trying again (the queue drains as tasks end). */
const QUEUE_FULL_RETRY_SECONDS = 30;
/** The agent's concurrency is read again after this long (its character may have changed). */
const CONCURRENCY_CACHE_MS = 5_000;

/**
 * The class binds to TASKS as `AgentTasks` (src/durable-objects.ts), which plugs in the surface
 * that tasks started there report to.
 */
export abstract class AgentTasksBase extends Agent<Env> implements AgentTasksRpc {
  private store!: TaskStore;
  private schedules!: TaskScheduleStore;
  /** The agent's runtime, built again when its memories moved to another database. */
  private readonly runtime = new RuntimeCell(
    this.env,
    () => this.name,
    () =>
      createRoomRuntime(this.env, this.name, {
        settled: () => Promise.resolve(),
        plugins: this.plugins(),
      }),
  );
  private pool!: TaskPool;
  private pauses!: TaskPauses;
  private surface!: ReplySurface;
  /** Progress lines, approval prompts, questions and results, where a task reports. */
  private reports!: TaskReports;
  private feed!: TaskEventFeed;
  private concurrencyCache: { value: number; at: number } | null = null;
  /** The tasks' events as spans, when traces are on (src/telemetry/task-spans.ts). */
  private tracer: TaskTracer | null = null;

  /** Where tasks started on a surface report (progress, prompts, result). */
  protected abstract replySurface(): ReplySurface;
  /** The deployment's plugins (src/plugins/), handed in so that no object imports them. */
  protected abstract plugins(): RoomPluginsFactory;

  override onStart(): void {
    this.surface = this.replySurface();
    const tracing = traceConfig(this.env);
    this.tracer = tracing ? createTaskTracer(tracing, (work) => this.ctx.waitUntil(work)) : null;
    this.store = new TaskStore(this.ctx.storage.sql);
    this.store.migrate();
    this.feed = new TaskEventFeed({
      events: (taskId, afterId, limit) => this.store.events(taskId, afterId, limit),
      finished: (taskId) => {
        const stored = this.store.get(taskId);
        return !stored || isTerminal(stored.state.status);
      },
    });
    this.store.onChange = (taskId) => this.feed.changed(taskId);
    this.schedules = new TaskScheduleStore(this.ctx.storage.sql);
    this.schedules.migrate();
    this.store.prune(Date.now());
    this.reports = new TaskReports({
      store: this.store,
      surface: this.surface,
      agentId: this.name,
      agentName: async () =>
        (await (await this.runtime.get()).agents.get(this.name))?.character.name ?? this.name,
      expire: (payload) => this.expireTaskApproval(payload),
      retryLater: () => this.armDelivery(),
    });
    this.pauses = new TaskPauses({
      agentId: this.name,
      store: this.store,
      surface: this.surface,
      reports: this.reports,
      peers: createTaskPeers(this.env),
      emit: (taskId, event) => this.emit(taskId, event),
      resumed: () => this.pool.pump(),
      finished: (state) => this.afterTask(state),
      schedule: (at, callback, payload) => this.armAt(at, callback, payload),
      retryLater: () => this.armDelegations(),
    });
    this.pool = new TaskPool({
      agentId: this.name,
      runnable: () => this.store.runnable(),
      concurrency: () => this.concurrency(),
      keepAlive: () => this.keepAlive(),
      run: (state, signal) => this.runTask(state, signal),
    });
    // Work left by an earlier instance (eviction, crash, deploy) resumes on first contact: every
    // task that was running, then the queue, up to the agent's concurrency.
    this.pool.pump();
    if (this.store.undelivered().length > 0) this.reports.results();
    this.pauses.resumeAfterRestart();
  }

  /**
   * Stores a new task; it starts when a slot is free. A full queue refuses it (429). A delegated
   * step's repeated request gets the task it started.
   */
  async createTask(request: CreateTaskRequest): Promise<CreateTaskResult> {
    if (request.originKey) {
      const existing = this.store.byOriginKey(request.originKey);
      if (existing) return { ok: true, taskId: existing.state.taskId };
    }
    if (this.store.queuedCount() >= MAX_QUEUED_TASKS) {
      return {
        ok: false,
        code: "rate_limited",
        message: `agent "${this.name}" already has ${MAX_QUEUED_TASKS} tasks waiting to run; try again once some have started`,
        retryAfterSeconds: QUEUE_FULL_RETRY_SECONDS,
      };
    }
    const taskId = crypto.randomUUID();
    this.tracer?.carry(taskId, request.traceparent);
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
      requester: request.requester ?? null,
      place: request.place ?? null,
      chain: request.chain ?? [],
      parent: request.parent ?? null,
      now,
    });
    this.store.insert(state, request.delivery ?? null, now, request.originKey ?? null);
    if (request.parent) this.pauses.linkToParent(state);
    this.pool.pump();
    return { ok: true, taskId };
  }

  async getTask(taskId: string): Promise<TaskView | null> {
    const stored = this.store.get(taskId);
    return stored ? { state: stored.state, audit: this.store.audit(taskId) } : null;
  }

  async listTasks(limit: number): Promise<TaskState[]> {
    return this.store.list(limit);
  }

  /**
   * The task's events after `afterId` as a server-sent-event stream, written as they happen;
   * `busy` when this object already serves its most streams; null for an unknown task.
   */
  async watchTask(
    taskId: string,
    afterId: number,
  ): Promise<{ stream: ReadableStream<Uint8Array> } | "busy" | null> {
    if (!this.store.get(taskId)) return null;
    const stream = this.feed.watch(taskId, afterId);
    return stream ? { stream } : "busy";
  }

  async taskEvents(taskId: string, afterId: number, limit: number): Promise<TaskEventsPage | null> {
    const stored = this.store.get(taskId);
    if (!stored) return null;
    const events = this.store.events(taskId, afterId, limit);
    // Finished means nothing more will come once these are read.
    return { events, finished: isTerminal(stored.state.status) && events.length < limit };
  }

  /**
   * Cancels one task: a running step is aborted and the task ends `cancelled` with its report;
   * the agent's other tasks go on. A task it delegated to another agent is cancelled too.
   */
  async cancel(taskId: string): Promise<TaskState | null> {
    const stored = this.store.get(taskId);
    if (!stored) return null;
    if (isTerminal(stored.state.status)) return stored.state;
    if (this.pool.isRunning(taskId)) {
      await this.pool.abort(taskId, new Error("cancelled"));
      return this.store.get(taskId)?.state ?? null;
    }
    // Not running: ended here in one synchronous block, so no slot can pick it up meanwhile.
    const cancelled = stopTask(
      stored.state,
      Date.now(),
      (event) => this.emit(taskId, event),
      "cancelled",
      "the task was cancelled",
    );
    this.store.save(cancelled, [], Date.now());
    this.pauses.cancelChild(stored.state);
    this.afterTask(cancelled);
    return cancelled;
  }

  // ---- pauses: approvals, questions, delegated steps (task-pauses.ts) -----------------------

  /** A click on a task's Approve / Deny button: only the person who started the task counts. */
  async answerClick(click: TaskApprovalClick): Promise<TaskApprovalResult> {
    return this.pauses.approvalClick(click);
  }

  /** POST /agents/:agentId/tasks/:taskId/approval: for tasks started where nobody can be asked. */
  async answerFromApi(taskId: string, approve: boolean): Promise<TaskApprovalResult | null> {
    return this.pauses.approvalFromApi(taskId, approve);
  }

  /** Schedule callback: nobody answered in time, which counts as a denial. */
  async expireTaskApproval(payload: { taskId: string; approvalId: string }): Promise<void> {
    this.pauses.expireApproval(payload);
  }

  /** POST /agents/:agentId/tasks/:taskId/input: the answer to a `needs_input` task's question. */
  async answerInputFromApi(taskId: string, text: string): Promise<TaskInputResult | null> {
    return this.pauses.inputFromApi(taskId, text);
  }

  /** A click on a question's Answer button: the question, for a modal, if the clicker may answer. */
  async openQuestion(inputId: string, userId: string): Promise<TaskQuestionOpen> {
    return this.pauses.openQuestion(inputId, userId);
  }

  /** A question's modal was submitted. */
  async answerQuestion(answer: TaskInputAnswer): Promise<TaskInputResult> {
    return this.pauses.inputFromModal(answer);
  }

  /** Schedule callback: nobody answered the question in time; the task is cancelled. */
  async expireTaskInput(payload: { taskId: string; inputId: string }): Promise<void> {
    this.pauses.expireInput(payload);
  }

  /** Another agent's task, delegated by one of this agent's task steps, finished. */
  async delegationFinished(notice: DelegationNotice): Promise<void> {
    this.pauses.delegationFinished(notice);
  }

  /** Schedule callback: a delegated task did not finish in time; the step goes on without it. */
  async expireDelegation(payload: { taskId: string; callId: string }): Promise<void> {
    this.pauses.expireDelegation(payload);
  }

  /** Queue callback: starts delegated tasks and tells parents about finished ones (throws to retry). */
  async syncDelegations(): Promise<void> {
    await this.pauses.syncDelegations();
  }

  // ---- schedules ----------------------------------------------------------------------------

  async createTaskSchedule(request: ScheduleRequest): Promise<ScheduleResult> {
    if (this.schedules.schedules().length >= MAX_SCHEDULES) {
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
    this.schedules.insertSchedule({ ...request, scheduleId }, sdkId, Date.now());
    return { ok: true, schedule: this.schedules.schedule(scheduleId)! };
  }

  async taskSchedules(): Promise<ScheduleRecord[]> {
    return this.schedules.schedules();
  }

  async deleteTaskSchedule(scheduleId: string): Promise<boolean> {
    const record = this.schedules.schedule(scheduleId);
    if (!record) return false;
    await this.cancelSchedule(record.sdkScheduleId);
    this.schedules.deleteSchedule(scheduleId);
    return true;
  }

  /**
   * Schedule callback: starts one run as a task. A run whose previous task is unfinished (queued,
   * running or paused) is skipped (and counted), never started twice; a run that only has to
   * wait for a free slot waits in the queue. It never throws: a refused run (the queue is full)
   * is counted as skipped, and the schedule goes on.
   */
  async runSchedule(payload: { scheduleId: string }): Promise<void> {
    const record = this.schedules.schedule(payload.scheduleId);
    if (!record) return;
    const previous = record.lastTaskId ? this.store.get(record.lastTaskId) : null;
    if (previous && !isTerminal(previous.state.status)) {
      this.schedules.recordSkip(record.scheduleId);
      return;
    }
    const created = await this.createTask({
      goal: record.goal,
      roomId: record.roomId ?? undefined,
      limits: DEFAULT_TASK_LIMITS,
      source: "schedule",
      scheduleId: record.scheduleId,
      requester: { kind: "schedule", scheduleId: record.scheduleId, for: record.createdBy ?? null },
    });
    if (!created.ok) {
      log.warn("schedule_run_refused", { agent: this.name, scheduleId: record.scheduleId });
      this.schedules.recordSkip(record.scheduleId);
      return;
    }
    this.schedules.recordRun(record.scheduleId, created.taskId, Date.now(), record.kind === "at");
  }

  /**
   * The agent was deleted: its schedules stop, and tasks not finished are cancelled (their record
   * stays readable until it ages out).
   */
  async stopAll(): Promise<{ schedules: number; tasks: number }> {
    const schedules = this.schedules.schedules();
    for (const record of schedules) {
      await this.cancelSchedule(record.sdkScheduleId);
      this.schedules.deleteSchedule(record.scheduleId);
    }
    const unfinished = [
      ...this.store.paused("awaiting_approval"),
      ...this.store.paused("needs_input"),
      ...this.store.paused("awaiting_delegate"),
    ].map((task) => task.state.taskId);
    unfinished.push(...this.store.runnable().map((state) => state.taskId));
    // Concurrently: each running one gets its own few seconds to stop. A step that would not
    // stop in time stays "running"; it ends cancelled once it returns.
    await Promise.all(unfinished.map((taskId) => this.cancel(taskId)));
    return { schedules: schedules.length, tasks: unfinished.length };
  }

  /** Queue callback: retries task results that could not reach their surface yet. */
  async deliverTaskResults(): Promise<void> {
    await this.reports.retry();
  }

  // ---- running ------------------------------------------------------------------------------

  private async runTask(initial: TaskState, signal: AbortSignal): Promise<void> {
    const state = await runTaskUnits(
      {
        agentId: this.name,
        store: this.store,
        runtime: () => this.runtime.get(),
        emit: (taskId, event) => this.emit(taskId, event),
        // Plugins see where the task started: a proposal filed in a step is shown there.
        origin: (taskId) => turnOrigin("task", this.surface, this.store.delivery(taskId)),
      },
      initial,
      signal,
    );
    if (isPaused(state.status)) this.pauses.paused(state);
    else this.afterTask(state);
  }

  /** How many of the agent's tasks may run at once (its character's setting, read now and then). */
  private async concurrency(): Promise<number> {
    const cached = this.concurrencyCache;
    if (cached && Date.now() - cached.at < CONCURRENCY_CACHE_MS) return cached.value;
    let value = DEFAULT_TASK_CONCURRENCY;
    try {
      const record = await (await this.runtime.get()).agents.get(this.name);
      value = record?.character.settings.tasks?.concurrency ?? DEFAULT_TASK_CONCURRENCY;
    } catch (error) {
      log.warn("task_concurrency_unread", { agent: this.name, error: errorField(error) });
    }
    this.concurrencyCache = { value, at: Date.now() };
    return value;
  }

  private emit(taskId: string, event: TaskEventBody): void {
    this.tracer?.record(taskId, this.name, event, Date.now());
    this.store.appendEvent(taskId, event, Date.now());
    this.reports.line(taskId, event);
  }

  private afterTask(state: TaskState): void {
    if (!isTerminal(state.status)) return;
    if (state.scheduleId)
      this.schedules.recordOutcome(state.scheduleId, state.taskId, state.status);
    if (this.store.delivery(state.taskId)) this.reports.results();
    // A delegated task tells the step that waits for it (durably, retried until it is heard).
    if (state.parent) this.pauses.notifyParents();
  }

  private armDelivery(): void {
    this.queue("deliverTaskResults", {}, { id: DELIVER_ITEM_ID, retry: DELIVERY_RETRY }).catch(
      (error: unknown) => {
        log.error("task_deliver_item_failed", { agent: this.name, error: errorField(error) });
      },
    );
  }

  private armDelegations(): void {
    this.queue("syncDelegations", {}, { id: DELEGATION_ITEM_ID, retry: DELIVERY_RETRY }).catch(
      (error: unknown) => {
        log.error("task_delegation_item_failed", { agent: this.name, error: errorField(error) });
      },
    );
  }

  /** A schedule callback at `at`; idempotent, so re-arming on every start never doubles it. */
  private armAt(
    at: number,
    callback: "expireTaskApproval" | "expireTaskInput" | "expireDelegation",
    payload: Record<string, string>,
  ): void {
    this.schedule(new Date(Math.max(at, Date.now() + 1_000)), callback, payload, {
      idempotent: true,
    }).catch((error: unknown) => {
      log.error("task_expiry_failed", { agent: this.name, callback, error: errorField(error) });
    });
  }
}
