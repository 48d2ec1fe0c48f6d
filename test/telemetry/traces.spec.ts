// Traces end to end, against an OTLP/HTTP collector stand-in at collector.test (the `telemetry`
// project sets OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS): a REST turn arrives as
// one trace across the worker -> room hop, with the GenAI attributes on its model and tool calls,
// ids hashed and no message content; a client's traceparent is continued; a collector that fails
// or hangs costs the turn nothing and is counted on /health; log lines carry the trace id.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDiscordStandIn } from "../stand-ins/discord-stand-in.ts";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";
import { chat, post, useAgentIn } from "../helpers/discord.ts";
import { oneStepScript, scriptTask, standInResponder } from "../helpers/task-script.ts";
import { api, createTestAgent, json, MODEL_HOST } from "../helpers/api.ts";
import { hashedId } from "../../src/trace-context.ts";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code: number; message?: string };
}
interface Export {
  headers: Record<string, string>;
  service: unknown;
  spans: OtlpSpan[];
}

const model = createOpenAIStandIn();
const discord = createDiscordStandIn();
let exports: Export[] = [];
let collector: "ok" | "fail" | "hang" = "ok";

beforeEach(() => {
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.host === MODEL_HOST) return model.fetch(input, init);
    if (url.host === "discord.test") return discord.fetch(input, init);
    if (url.host === "collector.test") {
      expect(url.pathname).toBe("/otlp/v1/traces");
      if (collector === "hang")
        return new Promise<Response>((_, reject) =>
          request.signal.addEventListener("abort", () => reject(request.signal.reason)),
        );
      if (collector === "fail") return new Response("collector down", { status: 500 });
      const body = (await request.json()) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: Record<string, unknown> }> };
          scopeSpans: Array<{ spans: OtlpSpan[] }>;
        }>;
      };
      const [resource] = body.resourceSpans;
      exports.push({
        headers: Object.fromEntries(request.headers),
        service: resource!.resource.attributes.find((a) => a.key === "service.name")?.value,
        spans: resource!.scopeSpans.flatMap((scope) => scope.spans),
      });
      return new Response("{}", { status: 200 });
    }
    return realFetch(input, init);
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  model.reset();
  discord.reset();
  exports = [];
  collector = "ok";
});

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value)
    return (value.arrayValue as { values: Array<{ stringValue: string }> }).values.map(
      (v) => v.stringValue,
    );
  return value;
};

/** Every span exported so far of the trace that holds a span named `name`, once it has `count`. */
async function traceWith(name: string, count: number): Promise<OtlpSpan[]> {
  let found: OtlpSpan[] = [];
  await vi.waitFor(
    () => {
      const all = exports.flatMap((e) => e.spans);
      const anchor = all.find((span) => span.name === name);
      expect(anchor, `a span named ${name}`).toBeDefined();
      found = all.filter((span) => span.traceId === anchor!.traceId);
      expect(found.length).toBeGreaterThanOrEqual(count);
    },
    { timeout: 10_000, interval: 50 },
  );
  return found;
}

async function health(): Promise<{ traces: { exported: number; dropped: number } | null }> {
  return json(await api("GET", "/health"));
}

describe("traces", () => {
  it("a REST turn is one trace: the request, the turn in the room, its model call, with GenAI attributes and hashed ids", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    model.script({
      model: "test-primary",
      text: "Hello, Ada here.",
      usage: { promptTokens: 120, completionTokens: 9 },
    });
    const response = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "Say hello to me, please" },
    });
    expect(response.status).toBe(200);
    const spans = await traceWith("invoke_agent", 3);
    const request = spans.find((span) => span.name === "POST /agents/:agentId/messages")!;
    const turn = spans.find((span) => span.name === "invoke_agent")!;
    const chat = spans.find((span) => span.name === "chat test-primary")!;
    expect(request).toBeDefined();
    expect(request.kind).toBe(2);
    expect(request.parentSpanId).toBeUndefined();
    expect(attribute(request, "http.route")).toBe("/agents/:agentId/messages");
    expect(attribute(request, "http.response.status_code")).toBe(200);
    // Across the hop to the room: the turn's parent is the request.
    expect(turn.parentSpanId).toBe(request.spanId);
    expect(chat.parentSpanId).toBe(turn.spanId);
    expect(chat.kind).toBe(3);
    expect(attribute(chat, "gen_ai.operation.name")).toBe("chat");
    expect(attribute(chat, "gen_ai.provider.name")).toBe("openai");
    expect(attribute(chat, "gen_ai.request.model")).toBe("test-primary");
    expect(attribute(chat, "gen_ai.response.model")).toBe("test-primary");
    expect(attribute(chat, "gen_ai.usage.input_tokens")).toBe(120);
    expect(attribute(chat, "gen_ai.usage.output_tokens")).toBe(9);
    // A provider that reports no cached tokens: none read from its cache.
    expect(attribute(chat, "gen_ai.usage.cache_read.input_tokens")).toBe(0);
    expect(attribute(chat, "gen_ai.response.finish_reasons")).toEqual(["stop"]);
    expect(BigInt(chat.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(chat.startTimeUnixNano));
    // The room's D1 round trips during the turn: the one before the model carries several
    // statements (the inbound message's write, the history and memory reads).
    const trips = spans.filter((span) => span.name === "batch");
    expect(trips.length).toBeGreaterThanOrEqual(1);
    for (const trip of trips) {
      expect(trip.parentSpanId).toBe(turn.spanId);
      expect(attribute(trip, "db.system.name")).toBe("cloudflare.d1");
    }
    expect(
      Math.max(...trips.map((trip) => attribute(trip, "db.operation.batch.size") as number)),
    ).toBeGreaterThanOrEqual(2);
    // The context composed, with what each search leg found (nothing yet in a new agent).
    const compose = spans.find((span) => span.name === "compose_context")!;
    expect(compose.parentSpanId).toBe(turn.spanId);
    expect(attribute(compose, "edge_agents.retrieval.hits.text")).toBe(0);
    expect(attribute(compose, "edge_agents.context.memories")).toBe(0);
    // Ids are hashed; no message text is in any span.
    const agent = attribute(turn, "gen_ai.agent.id") as string;
    expect(agent).toMatch(/^h:[0-9a-f]{16}$/);
    expect(attribute(turn, "user.id")).not.toBe("alice");
    const everything = JSON.stringify(spans);
    expect(everything).not.toContain(agentId);
    expect(everything).not.toContain("Say hello");
    expect(everything).not.toContain("Ada here");
    expect(everything).not.toContain("gen_ai.input.messages");
    // The exporter's headers and service name, as the variables give them.
    expect(exports[0]!.headers["x-api-key"]).toBe("secret key");
    expect(exports[0]!.headers["x-tenant"]).toBe("acme");
    expect(exports[0]!.service).toEqual({ stringValue: "edge-agents-test" });
  });

  it("the model span and the turn carry the input tokens the provider read from its prompt cache", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    model.script({
      model: "test-primary",
      text: "Cached, mostly.",
      usage: { promptTokens: 2048, completionTokens: 4, cachedTokens: 1792 },
    });
    const response = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "Hello again" },
    });
    expect(response.status).toBe(200);
    const spans = await traceWith("invoke_agent", 3);
    const chat = spans.find((span) => span.name === "chat test-primary")!;
    const turn = spans.find((span) => span.name === "invoke_agent")!;
    expect(attribute(chat, "gen_ai.usage.input_tokens")).toBe(2048);
    expect(attribute(chat, "gen_ai.usage.cache_read.input_tokens")).toBe(1792);
    expect(attribute(turn, "gen_ai.usage.cache_read.input_tokens")).toBe(1792);
  });

  it("continues the client's traceparent, and a tool call is an execute_tool span", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    model.script(
      {
        model: "test-primary",
        toolCalls: [{ name: "remember", arguments: { fact: "likes tea" } }],
      },
      { model: "test-primary", text: "Noted." },
    );
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "remember that I like tea" },
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(response.status).toBe(200);
    const spans = await traceWith("execute_tool remember", 5);
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([traceId]));
    const request = spans.find((span) => span.kind === 2)!;
    expect(request.parentSpanId).toBe("00f067aa0ba902b7");
    const tool = spans.find((span) => span.name === "execute_tool remember")!;
    const turn = spans.find((span) => span.name === "invoke_agent")!;
    expect(tool.parentSpanId).toBe(turn.spanId);
    expect(attribute(tool, "gen_ai.operation.name")).toBe("execute_tool");
    expect(attribute(tool, "gen_ai.tool.name")).toBe("remember");
    expect(spans.filter((span) => span.name === "chat test-primary")).toHaveLength(2);
    expect(JSON.stringify(spans)).not.toContain("likes tea");
  });

  it("a Discord /chat is one trace from the interaction to the reply's delivery", async () => {
    const channel = "800000000000000321";
    await useAgentIn(channel);
    model.script({ model: "test-primary", text: "Hello from the bot." });
    const response = await post(chat(channel, "hello bot"));
    expect(response.status).toBe(200);
    const spans = await traceWith("deliver discord", 4);
    const request = spans.find((span) => span.name === "POST /discord/interactions")!;
    const turn = spans.find((span) => span.name === "invoke_agent")!;
    const delivery = spans.find((span) => span.name === "deliver discord")!;
    expect(request).toBeDefined();
    expect(turn.parentSpanId).toBe(request.spanId);
    expect(delivery.parentSpanId).toBe(turn.spanId);
    expect(delivery.kind).toBe(3);
    expect(attribute(turn, "edge_agents.source")).toBe("discord");
    expect(delivery.status?.code ?? 0).not.toBe(2);
  });

  it("a task started over REST continues the request's trace: the task, its step, the step's tool call", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const script = scriptTask(
      oneStepScript("Noted.", [
        { toolCalls: [{ name: "remember", arguments: { fact: "the task ran" } }] },
        { text: "Noted." },
      ]),
    );
    model.respondWith(standInResponder(script) as never);
    const started = await api("POST", `/agents/${agentId}/tasks`, {
      body: { goal: "remember that the task ran" },
    });
    expect(started.status).toBe(202);
    const spans = await traceWith("invoke_agent task", 4);
    const request = spans.find((span) => span.name === "POST /agents/:agentId/tasks")!;
    const task = spans.find((span) => span.name === "invoke_agent task")!;
    const step = spans.find((span) => span.name.startsWith("task_step"))!;
    const tool = spans.find((span) => span.name === "execute_tool remember")!;
    expect(task.parentSpanId).toBe(request.spanId);
    expect(step.parentSpanId).toBe(task.spanId);
    expect(tool.parentSpanId).toBe(step.spanId);
    expect(attribute(task, "edge_agents.task.status")).toBe("completed");
    expect(JSON.stringify(spans)).not.toContain("the task ran");
  });

  it("a task's spans name its agent by the hashed id a turn's do, never the raw id", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const script = scriptTask(oneStepScript("Done.", [{ text: "Done." }]));
    model.respondWith(standInResponder(script) as never);
    const started = await api("POST", `/agents/${agentId}/tasks`, {
      body: { goal: "say that it is done" },
    });
    expect(started.status).toBe(202);
    const spans = await traceWith("invoke_agent task", 3);
    const task = spans.find((span) => span.name === "invoke_agent task")!;
    expect(attribute(task, "gen_ai.agent.id")).toBe(hashedId(agentId));
    expect(JSON.stringify(spans)).not.toContain(agentId);
  });

  it("a collector that fails or hangs costs the turn nothing: the drop is counted", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    for (const answer of ["fail", "hang"] as const) {
      collector = answer;
      const before = (await health()).traces!.dropped;
      model.script({ model: "test-primary", text: "still here" });
      const response = await api("POST", `/agents/${agentId}/messages`, {
        body: { userId: "alice", text: "are you there?" },
      });
      expect(response.status, answer).toBe(200);
      expect((await json<{ reply: { text: string } }>(response)).reply.text).toBe("still here");
      await vi.waitFor(
        async () => expect((await health()).traces!.dropped).toBeGreaterThan(before),
        { timeout: 15_000, interval: 100 },
      );
    }
  });

  it("log lines of a traced turn carry its trace id", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const lines: string[] = [];
    const log = console.log;
    vi.spyOn(console, "log").mockImplementation((line: unknown, ...rest: unknown[]) => {
      lines.push(String(line));
      log(line, ...rest);
    });
    model.script({ model: "test-primary", text: "ok" });
    await api("POST", `/agents/${agentId}/messages`, { body: { userId: "alice", text: "hi" } });
    const spans = await traceWith("invoke_agent", 2);
    const traceId = spans[0]!.traceId;
    const events = lines
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg: string; type?: string; trace_id?: string })
      .filter((line) => line.msg === "runtime_event");
    expect(events.find((e) => e.type === "run_started")?.trace_id).toBe(traceId);
    expect(events.find((e) => e.type === "model_called")?.trace_id).toBe(traceId);
  });
});
