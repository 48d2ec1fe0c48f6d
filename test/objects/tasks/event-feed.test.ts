// A task's event stream is fed by its object, not polled (issue 38): what a watcher sends, when
// it ends (the task finished, or the stream's lifetime ran out), the keep-alive comments of a
// quiet stream, and the cap on open streams. Timings are shortened through the feed's options;
// the defaults (15 s keep-alive, 10 minute lifetime, 50 streams) are the documented ones.
import { describe, expect, it } from "vitest";
import {
  MAX_TASK_EVENT_WATCHERS,
  TASK_EVENTS_KEEP_ALIVE_MS,
  TASK_EVENTS_MAX_STREAM_MS,
  TaskEventFeed,
  type TaskEventSource,
} from "../../../src/objects/tasks/event-feed.ts";
import type { TaskEvent } from "../../../src/runtime/tasks/task-types.ts";

/** An in-memory task with events; counts how often the feed reads it. */
function fakeTask() {
  const events: { id: number; event: TaskEvent }[] = [];
  let finished = false;
  let reads = 0;
  const source: TaskEventSource = {
    events(_taskId, afterId, limit) {
      reads++;
      return events.filter((e) => e.id > afterId).slice(0, limit);
    },
    finished: () => finished,
  };
  return {
    source,
    add(type: string) {
      const id = events.length + 1;
      events.push({ id, event: { type, taskId: "t1", at: id } as unknown as TaskEvent });
    },
    finish() {
      finished = true;
    },
    get reads() {
      return reads;
    },
  };
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

describe("task event feed", () => {
  it("documents its limits as the API guide says", () => {
    expect(TASK_EVENTS_KEEP_ALIVE_MS).toBe(15_000);
    expect(TASK_EVENTS_MAX_STREAM_MS).toBe(600_000);
    expect(MAX_TASK_EVENT_WATCHERS).toBe(50);
  });

  it("sends the events after the cursor, then each new one when told, and ends with the task", async () => {
    const task = fakeTask();
    task.add("task_started");
    task.add("plan");
    const feed = new TaskEventFeed(task.source);
    const stream = feed.watch("t1", 1)!;
    const text = readAll(stream);
    task.add("step_started");
    feed.changed("t1");
    await new Promise((resolve) => setTimeout(resolve, 5));
    task.add("done");
    task.finish();
    feed.changed("t1");
    const body = await text;
    expect(body.startsWith("retry: 1000\n\n")).toBe(true);
    expect(ids(body)).toEqual([2, 3, 4]);
    expect(body).toContain("event: done\n");
    expect(feed.watching).toBe(0);
    // Read on opening and on each change, never on a timer.
    expect(task.reads).toBe(3);
  });

  it("keeps a quiet stream alive with comments and closes it when its lifetime runs out", async () => {
    const task = fakeTask();
    const feed = new TaskEventFeed(task.source, { keepAliveMs: 20, maxStreamMs: 130 });
    const started = Date.now();
    const body = await readAll(feed.watch("t1", 0)!);
    expect(Date.now() - started).toBeGreaterThanOrEqual(120);
    expect(body.match(/^: keep-alive$/gm)?.length ?? 0).toBeGreaterThanOrEqual(3);
    expect(ids(body)).toEqual([]);
    expect(feed.watching).toBe(0);
    expect(task.reads).toBe(1);
  });

  it("refuses a watcher past the cap and takes one again once a stream ends", async () => {
    const task = fakeTask();
    const feed = new TaskEventFeed(task.source, { maxWatchers: 2 });
    const first = feed.watch("t1", 0)!;
    expect(feed.watch("t1", 0)).not.toBeNull();
    expect(feed.watch("t2", 0)).toBeNull();
    await first.cancel();
    task.finish();
    feed.changed("t1");
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(feed.watching).toBe(0);
    expect(feed.watch("t2", 0)).not.toBeNull();
  });
});
