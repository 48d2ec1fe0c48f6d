// The running slots of an agent's task object: up to `concurrency` tasks run at once (the
// character's `settings.tasks.concurrency`, default 2), the rest wait in the store in arrival
// order. Paused tasks are not runnable, so they hold no slot. Each running task has its own abort
// controller, so cancelling one never touches another, and its own keepAlive reference, so the
// object's heartbeat alarm wakes it after an eviction while any task runs (onStart pumps again).
import type { TaskState } from "../../runtime/tasks/task-types.ts";
import { errorField, log } from "../../log.ts";

/** A cancelled step is given this long to stop before cancel answers with the state as it is. */
export const CANCEL_WAIT_MS = 5_000;

export interface TaskPoolOptions {
  /** Tasks to run, oldest first (queued ones and those running when the object restarted). */
  runnable(): TaskState[];
  /** How many may run at once now. */
  concurrency(): Promise<number>;
  /** Runs one task until it ends or pauses. Never throws (failures end the task). */
  run(state: TaskState, signal: AbortSignal): Promise<void>;
  /** The SDK's keepAlive: a heartbeat alarm while the returned release is not called. */
  keepAlive(): Promise<() => void>;
  /** For logs. */
  agentId: string;
}

interface Running {
  controller: AbortController;
  done: Promise<void>;
}

export class TaskPool {
  private readonly options: TaskPoolOptions;
  private readonly running = new Map<string, Running>();
  private pumping: Promise<void> | null = null;
  private again = false;

  constructor(options: TaskPoolOptions) {
    this.options = options;
  }

  /** Starts runnable tasks into free slots, oldest first. Safe to call any time, any number of times. */
  pump(): void {
    if (this.pumping) {
      // A pump is choosing already: it looks again when it is done.
      this.again = true;
      return;
    }
    this.pumping = this.fill()
      .catch((error: unknown) => {
        log.error("task_pump_failed", { agent: this.options.agentId, error: errorField(error) });
      })
      .finally(() => {
        this.pumping = null;
        if (this.again) {
          this.again = false;
          this.pump();
        }
      });
  }

  isRunning(taskId: string): boolean {
    return this.running.has(taskId);
  }

  /** How many run now. */
  get size(): number {
    return this.running.size;
  }

  /**
   * Aborts a running task (its model call and tool) and waits, at most CANCEL_WAIT_MS, for it to
   * stop; false when it was not running here.
   */
  async abort(taskId: string, reason: Error): Promise<boolean> {
    const running = this.running.get(taskId);
    if (!running) return false;
    running.controller.abort(reason);
    await Promise.race([
      running.done,
      new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_MS)),
    ]);
    return true;
  }

  /** Resolves once no task runs (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0 || this.pumping) {
      await Promise.race([this.pumping, ...[...this.running.values()].map((r) => r.done)]);
    }
  }

  private async fill(): Promise<void> {
    const limit = await this.options.concurrency();
    for (const state of this.options.runnable()) {
      if (this.running.size >= limit) break;
      if (this.running.has(state.taskId)) continue;
      this.start(state);
    }
  }

  private start(state: TaskState): void {
    const controller = new AbortController();
    const { taskId } = state;
    // Reserved before the first await, so a concurrent pump never starts it twice.
    const running: Running = { controller, done: Promise.resolve() };
    this.running.set(taskId, running);
    running.done = (async () => {
      const release = await this.options.keepAlive();
      try {
        await this.options.run(state, controller.signal);
      } finally {
        release();
      }
    })()
      .catch((error: unknown) => {
        log.error("task_run_failed", {
          agent: this.options.agentId,
          taskId,
          error: errorField(error),
        });
      })
      .finally(() => {
        this.running.delete(taskId);
        // A slot is free: the next queued task starts.
        this.pump();
      });
  }
}
