// An autonomous task's spans, from the events it records (src/runtime/tasks/task-types.ts): the
// task (`invoke_agent`, operation `task`), each step, and each tool call inside a step. A task
// started over HTTP continues that request's trace (its traceparent rides with createTask); one a
// schedule or another task started begins its own. A task runs for minutes and across pauses, so
// each step's spans leave as the step ends, and the task's own span when the task ends. What the
// object holds in memory is lost with an eviction: steps after one start a trace of their own.
import type { TaskEventBody } from "../runtime/tasks/task-types.ts";
import { queueSpans, type TraceConfig } from "./otlp.ts";
import { type Span, SpanBatch } from "./spans.ts";
import { hashedId, parseTraceparent } from "../trace-context.ts";

interface OpenTask {
  task: Span;
  step: { batch: SpanBatch; span: Span } | null;
}

export interface TaskTracer {
  /** The traceparent of the request that created the task, before its first event. */
  carry(taskId: string, traceparent: string | undefined): void;
  record(taskId: string, agentId: string, event: TaskEventBody, at: number): void;
}

const MAX_TASKS = 500;

export function createTaskTracer(
  config: TraceConfig,
  waitUntil: (work: Promise<unknown>) => void,
): TaskTracer {
  const carried = new Map<string, string>();
  const open = new Map<string, OpenTask>();
  const id = (value: string) => (config.plainIds ? value : hashedId(value));

  const begin = (taskId: string, agentId: string, at: number): OpenTask => {
    const batch = new SpanBatch();
    const task = batch.start("invoke_agent task", {
      parent: parseTraceparent(carried.get(taskId)),
      start: at,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": id(agentId),
        "edge_agents.task.id": taskId,
      },
    });
    carried.delete(taskId);
    const entry = { task, step: null };
    open.set(taskId, entry);
    if (open.size > MAX_TASKS) open.delete(open.keys().next().value as string);
    return entry;
  };

  const endStep = (entry: OpenTask, at: number, failed: boolean) => {
    if (!entry.step) return;
    entry.step.span.end = Math.max(entry.step.span.start, at);
    if (failed) entry.step.span.status = { ok: false, message: "the step failed" };
    queueSpans(config, entry.step.batch.spans, waitUntil);
    entry.step = null;
  };

  return {
    carry(taskId, traceparent) {
      if (!traceparent) return;
      carried.set(taskId, traceparent);
      if (carried.size > MAX_TASKS) carried.delete(carried.keys().next().value as string);
    },
    record(taskId, agentId, event, at) {
      const entry = open.get(taskId) ?? (event.type === "done" ? null : begin(taskId, agentId, at));
      if (!entry) return;
      switch (event.type) {
        case "step_started": {
          endStep(entry, at, false);
          const batch = new SpanBatch();
          const span = batch.start(`task_step ${event.step}`, {
            parent: entry.task,
            start: at,
            attributes: {
              "edge_agents.task.step": event.step,
              "edge_agents.task.plan_step": event.planStep,
            },
          });
          entry.step = { batch, span };
          return;
        }
        case "tool_called": {
          const step = entry.step;
          if (!step) return;
          const call = step.batch.add(`execute_tool ${event.tool}`, {
            parent: step.span,
            start: at - event.durationMs,
            end: at,
            attributes: {
              "gen_ai.operation.name": "execute_tool",
              "gen_ai.tool.name": event.tool,
              "edge_agents.tool.cached": event.cached,
            },
          });
          if (!event.ok) call.status = { ok: false, message: "the tool failed" };
          return;
        }
        case "step_finished":
          endStep(entry, at, event.outcome === "failed");
          return;
        case "done": {
          endStep(entry, at, false);
          open.delete(taskId);
          entry.task.end = Math.max(entry.task.start, at);
          entry.task.attributes["edge_agents.task.status"] = event.status;
          entry.task.attributes["edge_agents.task.stop_reason"] = event.stopReason;
          if (event.status !== "completed")
            entry.task.status = { ok: false, message: `the task ended ${event.status}` };
          queueSpans(config, [entry.task], waitUntil);
          return;
        }
        default:
          return;
      }
    },
  };
}
