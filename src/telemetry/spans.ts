// The spans one request or one turn records before they are exported together: a small model of
// OpenTelemetry's (name, kind, times, attributes, status) kept as plain data, so recording costs
// a few object writes and nothing waits on it.
import { newSpanId, newTraceId, type SpanContext } from "../trace-context.ts";

export type SpanKind = "internal" | "server" | "client";
export type AttributeValue = string | number | boolean | string[];

export interface Span extends SpanContext {
  parentSpanId: string | null;
  name: string;
  kind: SpanKind;
  /** Milliseconds since the epoch. */
  start: number;
  end: number;
  attributes: Record<string, AttributeValue>;
  /** null: unset (the default); otherwise ok or error with its message. */
  status: { ok: true } | { ok: false; message: string } | null;
}

export interface SpanOptions {
  kind?: SpanKind;
  /** The parent: a span of this batch, or a remote one (from a traceparent). None: a new trace. */
  parent?: SpanContext | null;
  start: number;
  attributes?: Record<string, AttributeValue | null | undefined>;
}

/** Spans of one request or turn, exported in one batch once it is over. */
export class SpanBatch {
  readonly spans: Span[] = [];

  start(name: string, options: SpanOptions): Span {
    const span: Span = {
      traceId: options.parent?.traceId ?? newTraceId(),
      spanId: newSpanId(),
      parentSpanId: options.parent?.spanId ?? null,
      name,
      kind: options.kind ?? "internal",
      start: options.start,
      end: options.start,
      attributes: {},
      status: null,
    };
    setAttributes(span, options.attributes ?? {});
    this.spans.push(span);
    return span;
  }

  /** A span whose start and end are known already (a model call reported once it ended). */
  add(name: string, options: SpanOptions & { end: number }): Span {
    const span = this.start(name, options);
    span.end = Math.max(options.start, options.end);
    return span;
  }
}

/** Sets the attributes that have a value; null and undefined ones are left out. */
export function setAttributes(
  span: Span,
  attributes: Record<string, AttributeValue | null | undefined>,
): void {
  for (const [key, value] of Object.entries(attributes))
    if (value !== null && value !== undefined) span.attributes[key] = value;
}

export function endSpan(
  span: Span,
  end: number,
  status?: { ok: true } | { ok: false; message: string },
): void {
  span.end = Math.max(span.start, end);
  if (status) span.status = status;
}
