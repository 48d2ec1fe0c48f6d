// Specs for the model clients: the OpenAI client against the scripted stand-in (mapping, retries,
// Retry-After, timeouts, aborts, error classification) and the Workers AI adapter against a fake
// binding. Sleeps are injected and recorded, so retry schedules are checked without waiting.

import { afterEach, describe, expect, it, vi } from "vitest";
import { createOpenAIChatModel, type OpenAIChatModelOptions } from "../../src/model/openai-chat.ts";
import { createWorkersAIChatModel } from "../../src/model/workers-ai-chat.ts";
import { ModelCallError, ModelNotConfiguredError } from "../../src/runtime/util/errors.ts";
import type { ChatRequest } from "../../src/runtime/ports/model.ts";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";

const API_KEY = "sk-test-5ecret-never-log-me";
const MODEL = "gpt-x";

function setup(overrides: Partial<OpenAIChatModelOptions> = {}) {
  const standIn = createOpenAIStandIn();
  const delays: number[] = [];
  const model = createOpenAIChatModel({
    apiKey: API_KEY,
    baseURL: "https://models.test/v1",
    fetch: standIn.fetch,
    sleep: async (ms) => void delays.push(ms),
    random: () => 0.5,
    ...overrides,
  });
  return { standIn, model, delays };
}

function ask(text: string, extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: MODEL, messages: [{ role: "user", content: text }], ...extra };
}

async function failureOf(promise: Promise<unknown>): Promise<ModelCallError> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ModelCallError);
  return error as ModelCallError;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("OpenAI chat model: mapping", () => {
  it("maps a plain reply with its usage", async () => {
    const { standIn, model } = setup();
    standIn.script({ text: "hello there", usage: { promptTokens: 12, completionTokens: 3 } });

    const response = await model.complete(ask("hi"));

    expect(model.backend).toBe("openai");
    const usage = { promptTokens: 12, completionTokens: 3 };
    expect(response).toEqual({
      model: MODEL,
      text: "hello there",
      toolCalls: [],
      usage,
      finishReason: "stop",
    });
  });

  it("reads the cached prompt tokens the provider reports, streamed or not", async () => {
    const { standIn, model } = setup();
    const usage = { promptTokens: 2048, completionTokens: 5, cachedTokens: 1024 };
    standIn.script({ text: "plain", usage }, { text: "streamed", usage });

    const plain = await model.complete(ask("hi"));
    const streamed = await model.complete(ask("hi", { onText: () => undefined }));

    const expected = { promptTokens: 2048, completionTokens: 5, cachedPromptTokens: 1024 };
    expect(plain.usage).toEqual(expected);
    expect(streamed.usage).toEqual(expected);
  });

  it("sends a hash of the cache scope as prompt_cache_key, the same for the same scope", async () => {
    const { standIn, model } = setup();
    await model.complete(ask("one", { cacheScope: "agent-1:discord:dm:4242" }));
    await model.complete(ask("two", { cacheScope: "agent-1:discord:dm:4242" }));
    await model.complete(ask("three", { cacheScope: "agent-1:room-2" }));
    await model.complete(ask("four"));

    const keys = standIn.calls.map((call) => call.promptCacheKey);
    expect(keys[0]).toMatch(/^ea-[0-9a-f]{32}$/);
    expect(keys[0]).not.toContain("4242");
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
    // No scope, no key: the body carries no prompt_cache_key at all.
    expect(standIn.calls[3]!.body).not.toHaveProperty("prompt_cache_key");
  });

  it("maps tool calls with names, raw argument text and ids", async () => {
    const { standIn, model } = setup();
    standIn.script({
      toolCalls: [
        { name: "search", arguments: { query: "cats" } },
        { name: "remember", arguments: '{"fact": "broken json' },
      ],
    });

    const response = await model.complete(ask("find cats"));

    expect(response.text).toBeNull();
    expect(response.finishReason).toBe("tool_calls");
    expect(response.toolCalls.map((call) => [call.name, call.arguments])).toEqual([
      ["search", '{"query":"cats"}'],
      ["remember", '{"fact": "broken json'],
    ]);
    const ids = response.toolCalls.map((call) => call.id);
    expect(ids.every((id) => id.startsWith("call_"))).toBe(true);
    expect(new Set(ids).size).toBe(2);
  });

  it("sends history with tool calls and tool results in the wire format", async () => {
    const { standIn, model } = setup();
    await model.complete({
      model: MODEL,
      temperature: 0.2,
      maxOutputTokens: 300,
      tools: [
        {
          name: "search",
          description: "Search the web",
          parameters: { type: "object", properties: {} },
        },
      ],
      messages: [
        { role: "system", content: "You are Ada." },
        { role: "user", content: "find cats", name: "bob" },
        {
          role: "assistant",
          content: null,
          toolCalls: [{ id: "call_1", name: "search", arguments: '{"q":"cats"}' }],
        },
        { role: "tool", toolCallId: "call_1", content: "3 cats found" },
        { role: "assistant", content: "Found 3 cats." },
      ],
    });

    const [call] = standIn.calls;
    expect(call?.messages).toEqual([
      { role: "system", content: "You are Ada." },
      { role: "user", content: "find cats", name: "bob" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "search", arguments: '{"q":"cats"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "3 cats found" },
      { role: "assistant", content: "Found 3 cats." },
    ]);
    const parameters = { type: "object", properties: {} };
    expect(call?.tools).toEqual([
      { type: "function", function: { name: "search", description: "Search the web", parameters } },
    ]);
    expect(call?.body).toMatchObject({
      model: MODEL,
      temperature: 0.2,
      max_completion_tokens: 300,
    });
    expect(call?.body).not.toHaveProperty("max_tokens");
    expect(call?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it("leaves out tools when there are none", async () => {
    const { standIn, model } = setup();
    await model.complete(ask("hi", { tools: [] }));
    expect(standIn.calls[0]?.body).not.toHaveProperty("tools");
  });

  it("reports zero usage when the server sends none", async () => {
    const { standIn, model } = setup();
    standIn.script({
      status: 200,
      body: { choices: [{ message: { content: "hi" }, finish_reason: "stop" }] },
    });
    const response = await model.complete(ask("hi"));
    expect(response).toMatchObject({
      model: MODEL,
      text: "hi",
      usage: { promptTokens: 0, completionTokens: 0 },
    });
  });

  it("refuses to start without an API key", () => {
    const options = { apiKey: "", baseURL: "https://x/v1", fetch: createOpenAIStandIn().fetch };
    expect(() => createOpenAIChatModel(options)).toThrow(ModelNotConfiguredError);
  });
});

describe("OpenAI chat model: retries", () => {
  it("retries a 500 once and returns the next answer", async () => {
    const { standIn, model, delays } = setup();
    standIn.script({ status: 500 }, { text: "recovered" });

    const response = await model.complete(ask("hi"));

    expect(response.text).toBe("recovered");
    expect(standIn.calls).toHaveLength(2);
    expect(delays).toEqual([250]); // full jitter: random 0.5 of the 500 ms base
  });

  it("backs off exponentially up to the maximum delay", async () => {
    const { standIn, model, delays } = setup({
      random: () => 1,
      retry: { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 1_500 },
    });
    standIn.script(
      { status: 502 },
      { status: 503 },
      { status: 504 },
      { status: 500 },
      { text: "finally" },
    );

    expect((await model.complete(ask("hi"))).text).toBe("finally");
    expect(delays).toEqual([500, 1_000, 1_500, 1_500]);
  });

  it("waits as long as a 429's retry-after says", async () => {
    const { standIn, model, delays } = setup();
    standIn.script({ status: 429, headers: { "retry-after": "2" } }, { text: "ok now" });

    expect((await model.complete(ask("hi"))).text).toBe("ok now");
    expect(delays).toEqual([2_000]);
  });

  it("honours retry-after-ms and retry-after as an HTTP date", async () => {
    const now = Date.UTC(2026, 10, 20, 12, 0, 0);
    const { standIn, model, delays } = setup({ now: () => now });
    standIn.script(
      { status: 503, headers: { "retry-after-ms": "1250", "retry-after": "9" } },
      { status: 429, headers: { "retry-after": new Date(now + 3_000).toUTCString() } },
      { text: "ok" },
    );

    await model.complete(ask("hi"));
    expect(delays).toEqual([1_250, 3_000]);
  });

  it("gives up at once, failover allowed, when the server asks for a wait over the cap", async () => {
    const { standIn, model, delays } = setup();
    standIn.script({ status: 429, headers: { "retry-after": "120" } });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error.failover).toBe(true);
    expect(error.upstreamStatus).toBe(429);
    expect(error.message).toContain("120 s");
    expect(standIn.calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("fails with failover after exhausting its attempts", async () => {
    const { standIn, model, delays } = setup();
    standIn.failModel(MODEL, 503);

    const error = await failureOf(model.complete(ask("hi")));

    expect(error.failover).toBe(true);
    expect(error.upstreamStatus).toBe(503);
    expect(error.model).toBe(MODEL);
    expect(error.message).toContain(`model ${MODEL}: HTTP 503 after 4 attempts`);
    expect(standIn.calls).toHaveLength(4);
    expect(delays).toHaveLength(3);
  });

  it("retries malformed output, then returns the good answer", async () => {
    const { standIn, model } = setup();
    standIn.script(
      { malformed: true },
      { malformed: "not-json" },
      { malformed: "non-string-content" },
      { text: "fine" },
    );

    expect((await model.complete(ask("hi"))).text).toBe("fine");
    expect(standIn.calls).toHaveLength(4);
  });

  it("reports a body that is not JSON as malformed output", async () => {
    const { standIn, model } = setup({ retry: { maxAttempts: 2 } });
    standIn.script({ malformed: "not-json" }, { malformed: "not-json" });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error).toMatchObject({ failover: true });
    expect(error.message).toContain(
      "malformed output after 2 attempts: response body is not valid JSON",
    );
  });

  it("stops retrying when the server says x-should-retry: false", async () => {
    const { standIn, model } = setup();
    standIn.script({ status: 503, headers: { "x-should-retry": "false" } });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error).toMatchObject({ failover: true, upstreamStatus: 503 });
    expect(standIn.calls).toHaveLength(1);
  });

  it("tells the server which retry each attempt is", async () => {
    const { standIn, model } = setup();
    standIn.script({ status: 500 }, { status: 500 }, { text: "ok" });
    await model.complete(ask("hi"));
    expect(standIn.calls.map((call) => call.headers["x-stainless-retry-count"])).toEqual([
      "0",
      "1",
      "2",
    ]);
  });

  it("fails with failover when the output stays malformed", async () => {
    const { standIn, model } = setup({ retry: { maxAttempts: 2 } });
    standIn.script({ malformed: "nameless-tool-call" }, { malformed: "nameless-tool-call" });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error.failover).toBe(true);
    expect(error.message).toMatch(/malformed output after 2 attempts: .*name/);
  });
});

describe("OpenAI chat model: final errors", () => {
  it("does not retry a 401, blocks failover and never shows the key", async () => {
    const { standIn, model, delays } = setup();
    standIn.script({
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${API_KEY}` } },
    });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error.failover).toBe(false);
    expect(error.upstreamStatus).toBe(401);
    expect(error.message).toContain("OPENAI_API_KEY");
    expect(error.message).not.toContain(API_KEY);
    expect(JSON.stringify(error.toJSON())).not.toContain(API_KEY);
    expect(standIn.calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("does not retry a 400 and blocks failover", async () => {
    const { standIn, model } = setup();
    standIn.script({
      status: 400,
      body: { error: { message: "Invalid value for 'temperature'" } },
    });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error).toMatchObject({ failover: false, upstreamStatus: 400 });
    expect(error.message).toContain("Invalid value for 'temperature'");
    expect(standIn.calls).toHaveLength(1);
  });

  it("treats a 404 (unknown model) as worth a failover, without retrying", async () => {
    const { standIn, model } = setup();
    standIn.script({
      status: 404,
      body: { error: { message: "The model `gpt-x` does not exist" } },
    });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error).toMatchObject({ failover: true, upstreamStatus: 404 });
    expect(error.message).toMatch(/check MODEL, SMALL_MODEL and OPENAI_BASE_URL \(https?:/);
    expect(standIn.calls).toHaveLength(1);
  });

  it("retries network errors and then fails with failover", async () => {
    const lostConnection = async (): Promise<Response> => {
      throw new TypeError("Network connection lost.");
    };
    const { model, delays } = setup({ retry: { maxAttempts: 2 }, fetch: lostConnection });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error.failover).toBe(true);
    expect(error.message).toContain("network error after 2 attempts: Network connection lost.");
    // Where the operator looks: the endpoint's origin and the variable that names it.
    expect(error.message).toMatch(/is the endpoint at https?:\/\/[^ /]+ \(OPENAI_BASE_URL\) up/);
    expect(delays).toHaveLength(1);
  });
});

describe("OpenAI chat model: timeouts and aborts", () => {
  it("times out a hung attempt and retries it", async () => {
    const { standIn, model, delays } = setup({ timeoutMs: 50 });
    standIn.script({ hang: true }, { text: "second try" });

    const started = Date.now();
    const response = await model.complete(ask("hi"));

    expect(response.text).toBe("second try");
    expect(standIn.calls).toHaveLength(2);
    expect(standIn.hangingCount).toBe(0);
    expect(delays).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("fails with failover when every attempt times out", async () => {
    const { standIn, model } = setup({ timeoutMs: 30, retry: { maxAttempts: 2 } });
    standIn.script({ hang: true }, { hang: true });

    const error = await failureOf(model.complete(ask("hi")));

    expect(error.failover).toBe(true);
    expect(error.message).toContain("no answer within 30 ms after 2 attempts");
  });

  it("stops a pending request when the caller aborts", async () => {
    const { standIn, model } = setup();
    standIn.script({ hang: true });
    const controller = new AbortController();
    const reason = new Error("turn cancelled");

    const pending = model.complete(ask("hi", { signal: controller.signal }));
    await standIn.waitForHang();
    controller.abort(reason);

    await expect(pending).rejects.toBe(reason);
    expect(standIn.hangingCount).toBe(0);
    expect(standIn.calls).toHaveLength(1);
  });

  it("stops during the backoff when the caller aborts", async () => {
    const controller = new AbortController();
    const reason = new Error("turn cancelled");
    const { standIn, model } = setup({
      sleep: async () => {
        controller.abort(reason);
      },
    });
    standIn.script({ status: 500 }, { text: "never reached" });

    await expect(model.complete(ask("hi", { signal: controller.signal }))).rejects.toBe(reason);
    expect(standIn.calls).toHaveLength(1);
  });

  it("cuts a real backoff sleep short on abort", async () => {
    // No injected sleep: the real one, which would wait 20 s.
    const { standIn, model } = setup({
      sleep: undefined,
      random: () => 1,
      retry: { baseDelayMs: 20_000, maxDelayMs: 20_000 },
    });
    standIn.script({ status: 500 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("turn cancelled")), 30);

    const started = Date.now();
    await expect(model.complete(ask("hi", { signal: controller.signal }))).rejects.toThrow(
      "turn cancelled",
    );
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("makes no call at all for an already aborted signal", async () => {
    const { standIn, model } = setup();
    await expect(model.complete(ask("hi", { signal: AbortSignal.abort() }))).rejects.toThrow();
    expect(standIn.calls).toHaveLength(0);
  });
});

describe("OpenAI stand-in", () => {
  it("serves as a global fetch spy and keeps model-specific steps for their model", async () => {
    const { standIn, model } = setup({ fetch: (input, init) => globalThis.fetch(input, init) });
    vi.spyOn(globalThis, "fetch").mockImplementation(standIn.fetch);
    standIn.script({ model: "big", text: "from big" });

    expect((await model.complete({ ...ask("hi"), model: "small" })).text).toBe("ok");
    expect((await model.complete({ ...ask("hi"), model: "big" })).text).toBe("from big");
    expect(standIn.callsFor("big")).toHaveLength(1);
    expect(standIn.pendingSteps).toBe(0);
  });

  it("answers other paths with a JSON 404", async () => {
    const standIn = createOpenAIStandIn();
    const response = await standIn.fetch("https://x.test/v1/embeddings", {
      method: "POST",
      body: "{}",
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { type: "invalid_request_error" } });
  });

  it("lets a test release a hung request", async () => {
    const { standIn, model } = setup();
    standIn.script({ hang: true });
    const pending = model.complete(ask("hi"));
    await standIn.waitForHang();
    expect(standIn.releaseHung({ text: "released" })).toBe(1);
    expect((await pending).text).toBe("released");
  });
});

describe("Workers AI chat model", () => {
  function fakeAI(...outputs: (unknown | Error)[]) {
    const inputs: Record<string, unknown>[] = [];
    const ai = {
      run: vi.fn(async (_model: string, input: Record<string, unknown>) => {
        inputs.push(input);
        const next = outputs.shift();
        if (next instanceof Error) throw next;
        return next;
      }),
    };
    return { ai, inputs };
  }
  const request: ChatRequest = {
    model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
    messages: [{ role: "user", content: "weather?" }],
    tools: [{ name: "weather", description: "Get the weather", parameters: { type: "object" } }],
    maxOutputTokens: 200,
  };

  it("reads the classic shape, synthesizing tool call ids", async () => {
    const { ai, inputs } = fakeAI({
      response: null,
      tool_calls: [
        { name: "weather", arguments: { city: "Oslo" } },
        { name: "weather", arguments: '{"city":"Rome"}' },
        { type: "function", function: { name: "weather", arguments: { city: "Lima" } } },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 },
    });
    const model = createWorkersAIChatModel({ ai });

    const response = await model.complete(request);

    expect(model.backend).toBe("workers-ai");
    expect(response).toEqual({
      model: request.model,
      text: null,
      toolCalls: [
        { id: "call_0", name: "weather", arguments: '{"city":"Oslo"}' },
        { id: "call_1", name: "weather", arguments: '{"city":"Rome"}' },
        { id: "call_2", name: "weather", arguments: '{"city":"Lima"}' },
      ],
      usage: { promptTokens: 40, completionTokens: 9 },
      finishReason: null,
    });
    expect(inputs[0]).toEqual({
      messages: [{ role: "user", content: "weather?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "weather",
            description: "Get the weather",
            parameters: { type: "object" },
          },
        },
      ],
      max_tokens: 200,
    });
  });

  it("reads a classic text reply without usage", async () => {
    const { ai } = fakeAI({ response: "Sunny." });
    const response = await createWorkersAIChatModel({ ai }).complete(request);
    expect(response).toMatchObject({
      text: "Sunny.",
      toolCalls: [],
      usage: { promptTokens: 0, completionTokens: 0 },
    });
  });

  it("reads the OpenAI-compatible shape", async () => {
    const toolCall = {
      id: "chatcmpl-tool-1",
      type: "function",
      function: { name: "weather", arguments: '{"city":"Oslo"}' },
    };
    const { ai } = fakeAI({
      choices: [
        {
          message: { role: "assistant", content: null, tool_calls: [toolCall] },
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
    const response = await createWorkersAIChatModel({ ai }).complete(request);
    expect(response).toMatchObject({
      toolCalls: [{ id: "chatcmpl-tool-1", name: "weather", arguments: '{"city":"Oslo"}' }],
      finishReason: "tool_calls",
      usage: { promptTokens: 5, completionTokens: 2 },
    });
  });

  it("retries a thrown error once", async () => {
    const { ai } = fakeAI(new Error("3040: Capacity temporarily exceeded"), {
      response: "second time lucky",
    });
    expect((await createWorkersAIChatModel({ ai }).complete(request)).text).toBe(
      "second time lucky",
    );
    expect(ai.run).toHaveBeenCalledTimes(2);
  });

  it("fails with failover when the binding keeps throwing", async () => {
    const { ai } = fakeAI(
      new Error("3040: Capacity temporarily exceeded"),
      new Error("3040: Capacity temporarily exceeded"),
    );

    const error = await failureOf(createWorkersAIChatModel({ ai }).complete(request));

    expect(error.failover).toBe(true);
    expect(error.message).toContain("Capacity temporarily exceeded");
    expect(ai.run).toHaveBeenCalledTimes(2);
  });

  it("stops waiting for the binding when the caller aborts", async () => {
    const ai = { run: () => new Promise<unknown>(() => undefined) };
    const controller = new AbortController();
    const pending = createWorkersAIChatModel({ ai }).complete({
      ...request,
      signal: controller.signal,
    });
    controller.abort(new Error("turn cancelled"));
    await expect(pending).rejects.toThrow("turn cancelled");
  });

  it("fails with failover on output it cannot read", async () => {
    const { ai } = fakeAI({ result: 1 }, { tool_calls: [{ arguments: {} }] });
    const error = await failureOf(createWorkersAIChatModel({ ai }).complete(request));
    expect(error.failover).toBe(true);
    expect(error.message).toContain("malformed output");
  });
});
