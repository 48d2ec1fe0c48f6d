// W3C trace context (https://www.w3.org/TR/trace-context/): the ids a span carries, the
// `traceparent` that carries them across a hop, and the context of what runs now (a request in the
// worker, a turn in a room), kept in AsyncLocalStorage so nothing has to pass it along. A Durable
// Object RPC has no headers, so the worker passes the traceparent to the room as a plain field.
// Below both src/log.ts (each line names its trace) and src/telemetry/ (which records the spans).
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";

export interface SpanContext {
  /** 32 lower-case hex digits, never all zeros. */
  traceId: string;
  /** 16 lower-case hex digits, never all zeros. */
  spanId: string;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

function randomHex(bytes: number): string {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  let hex = "";
  for (const value of values) hex += value.toString(16).padStart(2, "0");
  // All zeros is invalid in both ids; one in 2^64 at worst, so simply draw again.
  return /^0+$/.test(hex) ? randomHex(bytes) : hex;
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

/** The context in a `traceparent` header or field; null when absent or malformed (then: a new trace). */
export function parseTraceparent(value: string | null | undefined): SpanContext | null {
  const match = value ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return null;
  return { traceId: match[1]!, spanId: match[2]! };
}

/** Version 00, sampled: every span this worker records is exported. */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-01`;
}

/**
 * An agent, room or user id as a span shows it unless OTEL_TRACE_PLAIN_IDS=true: the same id gives
 * the same value (so one person's turns group together), but the value does not name them.
 */
export function hashedId(id: string): string {
  return `h:${createHash("sha256").update(id).digest("hex").slice(0, 16)}`;
}

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
