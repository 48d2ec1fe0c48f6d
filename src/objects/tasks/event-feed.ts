// A task's progress as server-sent events, fed by the task's own object as events are written:
// nobody polls. `GET …/tasks/:taskId/events` opens one watcher here (over RPC, as a byte stream);
// it gets the events after the client's cursor at once, then each new one when the task store
// says its task changed, a keep-alive comment while nothing happens, and the stream ends after the
// task finishes or after TASK_EVENTS_MAX_STREAM_MS (the client reconnects with Last-Event-ID).
// Watchers are capped per object, so open streams cannot grow without bound.
import { log } from "../../log.ts";
import type { TaskEvent } from "../../runtime/tasks/task-types.ts";

/** A comment line this often keeps proxies from closing a quiet stream. */
export const TASK_EVENTS_KEEP_ALIVE_MS = 15_000;
/** A stream ends after this long; the client resumes from its Last-Event-ID. */
export const TASK_EVENTS_MAX_STREAM_MS = 10 * 60_000;
/** Open event streams per agent's task object, all tasks together. */
export const MAX_TASK_EVENT_WATCHERS = 50;
const EVENTS_PAGE = 100;

export interface TaskEventSource {
  events(taskId: string, afterId: number, limit: number): { id: number; event: TaskEvent }[];
  /** The task has ended: nothing more will be written for it. */
  finished(taskId: string): boolean;
}

export interface TaskEventFeedOptions {
  keepAliveMs?: number;
  maxStreamMs?: number;
  maxWatchers?: number;
}

export class TaskEventFeed {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private open = 0;
  private readonly source: TaskEventSource;
  private readonly limits: Required<TaskEventFeedOptions>;

  constructor(source: TaskEventSource, options: TaskEventFeedOptions = {}) {
    this.source = source;
    this.limits = {
      keepAliveMs: options.keepAliveMs ?? TASK_EVENTS_KEEP_ALIVE_MS,
      maxStreamMs: options.maxStreamMs ?? TASK_EVENTS_MAX_STREAM_MS,
      maxWatchers: options.maxWatchers ?? MAX_TASK_EVENT_WATCHERS,
    };
  }

  /** A stream of the task's events after `afterId`; null when the object holds its most streams. */
  watch(taskId: string, afterId: number): ReadableStream<Uint8Array> | null {
    if (this.open >= this.limits.maxWatchers) return null;
    const watcher = new Watcher(taskId, afterId, this.source, this.limits, () => {
      this.open -= 1;
      const set = this.watchers.get(taskId);
      set?.delete(watcher);
      if (set?.size === 0) this.watchers.delete(taskId);
    });
    this.open += 1;
    const set = this.watchers.get(taskId) ?? new Set<Watcher>();
    set.add(watcher);
    this.watchers.set(taskId, set);
    watcher.flush();
    return watcher.readable;
  }

  /** The task's events or status changed: its watchers send what is new (after the write commits). */
  changed(taskId: string): void {
    const set = this.watchers.get(taskId);
    if (!set) return;
    queueMicrotask(() => {
      for (const watcher of [...set]) watcher.flush();
    });
  }

  get watching(): number {
    return this.open;
  }
}

class Watcher {
  readonly readable: ReadableStream<Uint8Array>;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly encoder = new TextEncoder();
  private readonly keepAlive: ReturnType<typeof setInterval>;
  private readonly deadline: ReturnType<typeof setTimeout>;
  private lastWrite = Date.now();
  private closed = false;
  private opened = false;
  private readonly taskId: string;
  private last: number;
  private readonly source: TaskEventSource;
  private readonly onClose: () => void;

  constructor(
    taskId: string,
    last: number,
    source: TaskEventSource,
    limits: Required<TaskEventFeedOptions>,
    onClose: () => void,
  ) {
    this.taskId = taskId;
    this.last = last;
    this.source = source;
    this.onClose = onClose;
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    this.readable = pipe.readable;
    this.writer = pipe.writable.getWriter();
    this.keepAlive = setInterval(() => {
      if (Date.now() - this.lastWrite >= limits.keepAliveMs) this.write(": keep-alive\n\n");
    }, limits.keepAliveMs);
    this.deadline = setTimeout(() => this.close(), limits.maxStreamMs);
  }

  /** Sends every event after the cursor; ends the stream once the task has finished. */
  flush(): void {
    if (this.closed) return;
    // One write per flush: what is new reaches the client as one chunk, the retry hint first.
    let text = this.opened ? "" : "retry: 1000\n\n";
    this.opened = true;
    for (;;) {
      const page = this.source.events(this.taskId, this.last, EVENTS_PAGE);
      for (const { id, event } of page) {
        // SSE framing (WHATWG HTML, server-sent events): a data line holds no newline, and JSON
        // text never does.
        text += `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
        this.last = id;
      }
      if (page.length < EVENTS_PAGE) break;
    }
    if (text) this.write(text);
    if (this.source.finished(this.taskId)) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    clearTimeout(this.deadline);
    this.writer.close().catch(() => {});
    this.onClose();
  }

  private write(text: string): void {
    if (this.closed) return;
    this.lastWrite = Date.now();
    // Not awaited: the task never waits for a slow reader; a reader that left ends the watcher.
    this.writer.write(this.encoder.encode(text)).catch(() => {
      if (!this.closed) {
        log.info("task_events_client_gone", { taskId: this.taskId });
        this.close();
      }
    });
  }
}
