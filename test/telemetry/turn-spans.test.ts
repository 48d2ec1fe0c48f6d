// The turn tracer on the pure runtime's events, without a worker: message content goes into the
// model spans only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT asks for it, ids are
// plain only when OTEL_TRACE_PLAIN_IDS says so, the exporter writes OTLP's JSON encoding, and an
// isolate's spans go out in batches.
import { describe, expect, it } from "vitest";
import { historyProvider } from "../../src/runtime/context/history-provider.ts";
import { createBuiltinToolHost } from "../../src/runtime/turn/builtin-tools.ts";
import { createTurnRunner } from "../../src/runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../src/runtime/turn/turn-types.ts";
import { createEventBus } from "../../src/runtime/util/events.ts";
import { loadTokenCounter } from "../../src/runtime/util/tokens.ts";
import {
  MAX_BATCH_SPANS,
  type otlpBody,
  parseHeaders,
  queueSpans,
  type TraceConfig,
} from "../../src/telemetry/otlp.ts";
import { SpanBatch } from "../../src/telemetry/spans.ts";
import { createTurnTracer } from "../../src/telemetry/turn-spans.ts";
import {
  character,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../helpers/fakes.ts";

const CONFIG: TraceConfig = {
  url: "http://collector.test/v1/traces",
  headers: {},
  serviceName: "svc",
  captureContent: false,
  plainIds: false,
};

/** One turn through the runner with a tracer; returns the spans the collector received. */
async function tracedTurn(config: TraceConfig) {
  const bodies: unknown[] = [];
  const pending: Promise<unknown>[] = [];
  const tracer = createTurnTracer(config, (work) => pending.push(work), {
    flushAfterMs: 0,
    fetcher: async (_url, init) => {
      bodies.push(JSON.parse(String(init?.body)));
      return new Response("{}");
    },
  });
  const events = createEventBus({ log: null, fields: tracer.fieldsFor });
  events.subscribe(tracer.record);
  const memory = new FakeMemoryStore();
  const clock = tickingClock();
  const runner = createTurnRunner({
    model: scriptedModel([textReply("Tea it is.", "big-1")]),
    observeModel: tracer.observe,
    modelNotConfiguredMessage: "no model",
    models: { primary: "big", fallbacks: [], small: "small" },
    memory,
    tools: createBuiltinToolHost({ memory, clock, listAll: async () => [] }),
    providers: [historyProvider],
    evaluators: [],
    clock,
    events,
    tokens: await loadTokenCounter(),
    limits: DEFAULT_LIMITS,
  });
  await runner.respond(
    character(),
    turnInput({ source: "rest", text: "tea or coffee?", userId: "alice" }),
  );
  await Promise.all(pending);
  const body = bodies[0] as ReturnType<typeof otlpBody>;
  return body.resourceSpans[0]!.scopeSpans[0]!.spans;
}

const attr = (span: { attributes: Array<{ key: string; value: unknown }> }, key: string) =>
  span.attributes.find((a) => a.key === key)?.value as Record<string, unknown> | undefined;

describe("the turn tracer", () => {
  it("leaves message content out by default, and hashes the ids", async () => {
    const spans = await tracedTurn(CONFIG);
    expect(spans.map((span) => span.name)).toEqual(["invoke_agent", "compose_context", "chat big"]);
    const text = JSON.stringify(spans);
    expect(text).not.toContain("tea or coffee");
    expect(text).not.toContain("Tea it is");
    expect(attr(spans[0]!, "user.id")).toEqual({ stringValue: expect.stringMatching(/^h:/) });
    const chat = spans.find((span) => span.name === "chat big")!;
    expect(attr(chat, "gen_ai.response.model")).toEqual({ stringValue: "big-1" });
  });

  it("records the messages and the answer when asked, and plain ids when configured", async () => {
    const spans = await tracedTurn({ ...CONFIG, captureContent: true, plainIds: true });
    const chat = spans.find((span) => span.name === "chat big")!;
    const input = JSON.parse(String(attr(chat, "gen_ai.input.messages")!.stringValue)) as Array<{
      role: string;
      parts: Array<{ content: string }>;
    }>;
    expect(input.at(-1)).toMatchObject({ role: "user" });
    expect(input.at(-1)!.parts[0]!.content).toContain("tea or coffee?");
    const output = JSON.parse(String(attr(chat, "gen_ai.output.messages")!.stringValue));
    expect(output).toEqual([
      {
        role: "assistant",
        parts: [{ type: "text", content: "Tea it is." }],
        finish_reason: "stop",
      },
    ]);
    expect(attr(spans[0]!, "user.id")).toEqual({ stringValue: "alice" });
  });

  it("gathers an isolate's spans into one POST, and sends a full batch at once", async () => {
    const posts: number[] = [];
    const pending: Promise<unknown>[] = [];
    const options = {
      flushAfterMs: 30,
      fetcher: async (_url: RequestInfo | URL, init?: RequestInit) => {
        posts.push(JSON.stringify(init?.body).split("spanId").length - 1);
        return new Response("{}");
      },
    };
    const config = { ...CONFIG };
    const spans = (count: number) => {
      const batch = new SpanBatch();
      for (let i = 0; i < count; i++) batch.add("s", { start: 1, end: 2 });
      return batch.spans;
    };
    queueSpans(config, spans(3), (work) => pending.push(work), options);
    queueSpans(config, spans(2), (work) => pending.push(work), options);
    await Promise.all(pending);
    expect(posts).toEqual([5]);
    // 500 at once do not wait for the timer.
    const started = Date.now();
    queueSpans(config, spans(MAX_BATCH_SPANS), (work) => pending.push(work), {
      ...options,
      flushAfterMs: 60_000,
    });
    await Promise.all(pending);
    expect(posts).toEqual([5, MAX_BATCH_SPANS]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("reads OTEL_EXPORTER_OTLP_HEADERS as the exporter spec writes it", () => {
    expect(parseHeaders("api-key=a%2Cb%3Dc, X-Team = core ,broken,=x")).toEqual({
      "api-key": "a,b=c",
      "x-team": "core",
    });
  });
});
