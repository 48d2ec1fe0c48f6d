// The span context of what is running now (a request in the worker, a turn in a room), kept in
// AsyncLocalStorage so that nothing has to pass it along: the room RPC carries it on as a
// traceparent, and log lines carry its trace id. No imports from this project: log.ts reads it.
import { AsyncLocalStorage } from "node:async_hooks";
import { formatTraceparent, type SpanContext } from "./trace-context.ts";

const current = new AsyncLocalStorage<SpanContext>();

/** Runs `work` with `context` as the current one. */
export function withSpanContext<T>(context: SpanContext, work: () => T): T {
  return current.run(context, work);
}

/** The current context as a traceparent, for a hop to a Durable Object; none outside a trace. */
export function currentTraceparent(): string | undefined {
  const context = current.getStore();
  return context ? formatTraceparent(context) : undefined;
}

/** The current trace's id, for log lines. */
export function currentTraceId(): string | undefined {
  return current.getStore()?.traceId;
}
