// Where spans go: an OTLP/HTTP collector, configured with the OpenTelemetry exporter variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, whose /v1/traces is appended, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// used as given; OTEL_EXPORTER_OTLP_HEADERS; OTEL_SERVICE_NAME), in OTLP's JSON encoding. Export
// happens after the response (waitUntil): an isolate gathers the spans of its requests and turns
// for up to a second (or 500 spans) and sends them in one POST, since a POST costs more CPU than
// the spans of a turn do; a collector that fails or hangs (5 s) costs a counted drop and a warning,
// never a failed turn.
import { z } from "zod";
import type { Env } from "../env.ts";
import { errorField, log } from "../log.ts";
import type { AttributeValue, Span } from "./spans.ts";

export interface TraceConfig {
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: model messages go into spans. */
  captureContent: boolean;
  /** OTEL_TRACE_PLAIN_IDS=true: agent, room and user ids as they are, not hashed. */
  plainIds: boolean;
}

export const EXPORT_TIMEOUT_MS = 5_000;
/** How long an isolate gathers spans before sending them, and how many it sends at most at once. */
export const FLUSH_AFTER_MS = 1_000;
export const MAX_BATCH_SPANS = 500;
const DEFAULT_SERVICE_NAME = "edge-agents";

/** Counted per isolate; /health shows the worker's. */
export const exportStats = { batches: 0, spans: 0, dropped: 0, lastError: null as string | null };

const Url = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

const cache = new WeakMap<object, TraceConfig | null>();

/** The tracing configuration, or null when no endpoint is set (then nothing is recorded). */
export function traceConfig(env: Env): TraceConfig | null {
  const cached = cache.get(env);
  if (cached !== undefined) return cached;
  const given = (name: keyof Env) => {
    const value = env[name];
    return typeof value === "string" && value.trim() ? value.trim() : undefined;
  };
  const traces = given("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = given("OTEL_EXPORTER_OTLP_ENDPOINT");
  let config: TraceConfig | null = null;
  const url = traces ?? (base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined);
  if (url) {
    // A bad endpoint is the operator's to fix: said once per isolate, and nothing is recorded.
    if (!Url.safeParse(url).success)
      log.warn("trace_endpoint_invalid", {
        variable: traces ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT",
      });
    else
      config = {
        url,
        headers: parseHeaders(given("OTEL_EXPORTER_OTLP_HEADERS")),
        serviceName: given("OTEL_SERVICE_NAME") ?? DEFAULT_SERVICE_NAME,
        captureContent: given("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") === "true",
        plainIds: given("OTEL_TRACE_PLAIN_IDS") === "true",
      };
  }
  cache.set(env, config);
  return config;
}

/** `key1=value1,key2=value2`, values percent-decoded, as the exporter spec writes them. */
export function parseHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const name = pair.slice(0, at).trim().toLowerCase();
    let value = pair.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // Not percent-encoded after all: kept as written.
    }
    if (name) headers[name] = value;
  }
  return headers;
}

type ExportOptions = { fetcher?: typeof fetch; timeoutMs?: number; flushAfterMs?: number };

interface Gathering {
  spans: Span[];
  /** Sends the batch now rather than when its timer ends. */
  sendNow: () => void;
}

/** Spans waiting for this isolate's next POST, per collector configuration. */
const gathering = new Map<TraceConfig, Gathering>();

/**
 * Adds spans to this isolate's next export. The first spans of a batch start its timer, kept
 * alive by `waitUntil` (the request's or the object's); a full batch goes at once.
 */
export function queueSpans(
  config: TraceConfig,
  spans: Span[],
  waitUntil: (work: Promise<unknown>) => void,
  options: ExportOptions = {},
): void {
  if (spans.length === 0) return;
  let batch = gathering.get(config);
  if (!batch) {
    let sendNow: () => void = () => {};
    const due = new Promise<void>((resolve) => {
      sendNow = resolve;
      setTimeout(resolve, options.flushAfterMs ?? FLUSH_AFTER_MS);
    });
    const started: Gathering = { spans: [], sendNow: () => sendNow() };
    gathering.set(config, started);
    waitUntil(
      due.then(() => {
        if (gathering.get(config) === started) gathering.delete(config);
        return exportSpans(config, started.spans, options);
      }),
    );
    batch = started;
  }
  batch.spans.push(...spans);
  if (batch.spans.length >= MAX_BATCH_SPANS) {
    gathering.delete(config);
    batch.sendNow();
  }
}

/** Sends the spans in one request; never throws. */
export async function exportSpans(
  config: TraceConfig,
  spans: Span[],
  options: ExportOptions = {},
): Promise<void> {
  if (spans.length === 0) return;
  const fetcher = options.fetcher ?? ((input, init) => fetch(input, init));
  try {
    const response = await fetcher(config.url, {
      method: "POST",
      headers: { ...config.headers, "content-type": "application/json" },
      body: JSON.stringify(otlpBody(config.serviceName, spans)),
      signal: AbortSignal.timeout(options.timeoutMs ?? EXPORT_TIMEOUT_MS),
    });
    // The body is the collector's; only its status is ours to keep.
    await response.body?.cancel();
    if (!response.ok) throw new Error(`the collector answered HTTP ${response.status}`);
    exportStats.batches += 1;
    exportStats.spans += spans.length;
  } catch (error) {
    exportStats.dropped += spans.length;
    exportStats.lastError = errorField(error);
    log.warn("trace_export_failed", { spans: spans.length, error: exportStats.lastError });
  }
}

const KIND = { internal: 1, server: 2, client: 3 } as const;

/** OTLP's JSON encoding (ids in hex, times as nanosecond strings). */
export function otlpBody(serviceName: string, spans: Span[]) {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: attributesOf({
            "service.name": serviceName,
            "telemetry.sdk.name": "edge-agents",
            "telemetry.sdk.language": "webjs",
          }),
        },
        scopeSpans: [
          {
            scope: { name: "edge-agents" },
            spans: spans.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              kind: KIND[span.kind],
              startTimeUnixNano: nanos(span.start),
              endTimeUnixNano: nanos(span.end),
              attributes: attributesOf(span.attributes),
              ...(span.status
                ? {
                    status: span.status.ok
                      ? { code: 1 }
                      : { code: 2, message: span.status.message },
                  }
                : {}),
            })),
          },
        ],
      },
    ],
  };
}

const nanos = (ms: number): string => `${BigInt(Math.round(ms)) * 1_000_000n}`;

function attributesOf(attributes: Record<string, AttributeValue>) {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: attributeValue(value) }));
}

function attributeValue(value: AttributeValue): Record<string, unknown> {
  if (Array.isArray(value))
    return { arrayValue: { values: value.map((v) => ({ stringValue: v })) } };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number")
    return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { stringValue: value };
}
