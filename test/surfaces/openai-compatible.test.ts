// The OpenAI-compatible surface (/v1/models, /v1/chat/completions), driven by the real `openai`
// package pointed at the worker (its `fetch` option calls the worker's fetch handler), as the SDKs
// and the tools built on them (Open WebUI, LibreChat) would: models listed per token, turns plain
// and streamed, conversations kept by the agent, refusals raised as the SDK's typed errors, and
// the SDK's own retries answered by the turn they repeat. End to end; docs/clients.md.
import { exports } from "cloudflare:workers";
import OpenAI, {
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
} from "openai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { REPLAY_WINDOW_MS } from "../../src/http/routes/openai/chat-keys.ts";
import {
  ADMIN_TOKEN,
  api,
  createTestAgent,
  json,
  mintToken,
  useModelStandIn,
} from "../helpers/api.ts";
import { lastUserText } from "../helpers/model-messages.ts";

const model = useModelStandIn();
const quiet = { settings: { memory: { factsEvery: 1000 } } };

/** Worker requests an abandoned attempt (an SDK timeout) left running, awaited after each test. */
const running: Promise<unknown>[] = [];
afterEach(async () => {
  await Promise.allSettled(running.splice(0));
});

interface WorkerClient {
  sdk: OpenAI;
  /** Every HTTP attempt the SDK made (its retries included). */
  attempts: string[];
}

/** The `openai` client against this worker: its fetch goes to the worker's fetch handler. */
function openai(token: string, options: { timeout?: number; maxRetries?: number } = {}) {
  const attempts: string[] = [];
  const workerFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const { signal, ...rest } = init ?? {};
    const request = new Request(input, rest);
    attempts.push(`${request.method} ${new URL(request.url).pathname}`);
    const answered = exports.default.fetch(request);
    running.push(answered.catch(() => undefined));
    if (!signal) return answered;
    // The SDK times an attempt out by aborting it; the worker's request runs on regardless.
    return new Promise((resolve, reject) => {
      const abort = () => {
        reject(signal.reason ?? new DOMException("aborted", "AbortError"));
        void answered.then((response) => response.body?.cancel()).catch(() => undefined);
      };
      if (signal.aborted) return abort();
      signal.addEventListener("abort", abort, { once: true });
      answered.then(resolve, reject);
    });
  };
  const sdk = new OpenAI({
    apiKey: token,
    baseURL: "https://agents.test/v1",
    fetch: workerFetch,
    maxRetries: options.maxRetries ?? 0,
    ...(options.timeout ? { timeout: options.timeout } : {}),
  });
  return { sdk, attempts } satisfies WorkerClient;
}

const admin = () => openai(ADMIN_TOKEN).sdk;

async function history(agentId: string, roomId: string) {
  const response = await api(
    "GET",
    `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages?limit=50`,
  );
  expect(response.status).toBe(200);
  const { messages } = await json<{
    messages: { role: string; userId: string | null; text: string }[];
  }>(response);
  return messages.reverse();
}

function primaryCalls(): number {
  return model.callsFor("test-primary").length;
}

/** The SDK's error, for assertions on its class, status, message and OpenAI fields. */
async function refusal(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error("expected the request to be refused");
}

describe("OpenAI-compatible endpoint: GET /v1/models", () => {
  it("lists the agents a token may use, in OpenAI's list shape, and only those", async () => {
    const mine = await createTestAgent({ name: "Mine" });
    const other = await createTestAgent();
    const everything = await admin().models.list();
    const ids = everything.data.map((entry) => entry.id);
    expect(ids).toEqual(expect.arrayContaining([mine, other]));
    const listed = everything.data.find((entry) => entry.id === mine);
    expect(listed).toMatchObject({ id: mine, object: "model", owned_by: "edge-agents" });
    expect(Math.abs(listed!.created - Date.now() / 1000)).toBeLessThan(600);

    const limited = await mintToken({
      name: "one agent",
      scopes: ["messages:write"],
      agents: [mine],
    });
    const seen = await openai(limited.token).sdk.models.list();
    expect(seen.data.map((entry) => entry.id)).toEqual([mine]);
    const reader = await mintToken({ name: "reader", scopes: ["agents:read"], agents: [mine] });
    expect((await openai(reader.token).sdk.models.list()).data.map((e) => e.id)).toEqual([mine]);
  });

  it("refuses a token with neither agents:read nor messages:write, in OpenAI's error shape", async () => {
    const writer = await mintToken({ name: "memories only", scopes: ["memories:write"] });
    const error = await refusal(openai(writer.token).sdk.models.list());
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.message).toContain("agents:read");
    expect(error).toMatchObject({ status: 403, code: "forbidden", type: "permission_error" });
    const anonymous = await refusal(openai("ea_not-a-real-token").sdk.models.list());
    expect(anonymous).toBeInstanceOf(AuthenticationError);
  });
});

describe("OpenAI-compatible endpoint: POST /v1/chat/completions", () => {
  it("answers a turn as a chat.completion with usage, in a room of its own", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({ text: "Hello Ada!", usage: { promptTokens: 40, completionTokens: 3 } });
    const { data, response } = await admin()
      .chat.completions.create({
        model: agentId,
        user: "ada",
        messages: [
          { role: "system", content: "You are a pirate." },
          { role: "user", content: "Hi, I am Ada." },
        ],
      })
      .withResponse();
    expect(data).toMatchObject({
      object: "chat.completion",
      model: agentId,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "Hello Ada!" },
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 3, total_tokens: 43 },
    });
    expect(data.id).toMatch(/^chatcmpl-/);
    const roomId = response.headers.get("x-room-id")!;
    expect(roomId).toMatch(/^chat-[0-9a-f]{32}$/);
    expect(lastUserText(model.calls[0]!)).toContain("Hi, I am Ada.");
    // The client's system message is the client's: the character speaks, not a pirate.
    expect(JSON.stringify(model.calls[0]!.messages)).not.toContain("You are a pirate.");
    const said = await history(agentId, roomId);
    expect(said.map((m) => [m.role, m.text])).toEqual([
      ["user", "Hi, I am Ada."],
      ["agent", "Hello Ada!"],
    ]);
    expect(said[0]!.userId).toBe("ada");
  });

  it("streams OpenAI chunks: the role first, the text in pieces, the finish, the usage, then [DONE]", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({
      text: "Hello Ada, nice to meet you!",
      usage: { promptTokens: 50, completionTokens: 7 },
    });
    const stream = await admin().chat.completions.create({
      model: agentId,
      messages: [{ role: "user", content: "Hi there" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const pieces = chunks.flatMap((chunk) => chunk.choices.map((c) => c.delta.content ?? ""));
    expect(pieces.filter(Boolean).length).toBeGreaterThan(3);
    expect(pieces.join("")).toBe("Hello Ada, nice to meet you!");
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
    });
    expect(model.calls[0]!.body.stream).toBe(true);
  });

  it("streams only the reply of a turn whose tools ran on the server, and no usage unless asked", async () => {
    const agentId = await createTestAgent(quiet);
    model.script(
      { toolCalls: [{ name: "current_time", arguments: {} }] },
      { text: "It is time for tea." },
    );
    const stream = await admin().chat.completions.create({
      model: agentId,
      messages: [{ role: "user", content: "What time is it?" }],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks
      .flatMap((chunk) => chunk.choices.map((c) => c.delta.content ?? ""))
      .join("");
    expect(text).toBe("It is time for tea.");
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.some((chunk) => chunk.usage)).toBe(false);
    expect(primaryCalls()).toBe(2);
  });

  it("raises a turn that fails mid-stream as the SDK's APIError, and runs the same request again", async () => {
    const agentId = await createTestAgent(quiet);
    model.failModel("test-primary", 400);
    model.failModel("test-fallback", 400);
    const params = {
      model: agentId,
      messages: [{ role: "user" as const, content: "Are you there?" }],
    };
    const stream = await admin().chat.completions.create({ ...params, stream: true });
    const failed = await refusal(
      (async () => {
        for await (const _chunk of stream);
      })(),
    );
    expect(failed.code).toBe("model");
    expect(failed.type).toBe("server_error");
    model.restoreModel("test-primary");
    model.restoreModel("test-fallback");
    model.script({ text: "Here now." });
    const again = await admin().chat.completions.create(params);
    expect(again.choices[0]!.message.content).toBe("Here now.");
  });

  it("holds a conversation over two turns in one room; earlier messages are not said again", async () => {
    const agentId = await createTestAgent(quiet);
    const sdk = admin();
    model.script({ text: "Nice to meet you, Ada." }, { text: "You are Ada." });
    const opening = { role: "user" as const, content: "My name is Ada." };
    const first = await sdk.chat.completions
      .create({ model: agentId, user: "ada", messages: [opening] })
      .withResponse();
    const second = await sdk.chat.completions
      .create({
        model: agentId,
        user: "ada",
        messages: [
          opening,
          { role: "assistant", content: "Nice to meet you, Ada. I owe you a pony." },
          { role: "user", content: "What is my name?" },
        ],
      })
      .withResponse();
    const roomId = first.response.headers.get("x-room-id")!;
    expect(second.response.headers.get("x-room-id")).toBe(roomId);
    expect(second.data.choices[0]!.message.content).toBe("You are Ada.");
    // The second model call remembers the first turn from the room, not from the request.
    const seen = JSON.stringify(model.calls[1]!.messages);
    expect(seen).toContain("My name is Ada.");
    expect(seen).not.toContain("I owe you a pony");
    expect((await history(agentId, roomId)).map((m) => m.text)).toEqual([
      "My name is Ada.",
      "Nice to meet you, Ada.",
      "What is my name?",
      "You are Ada.",
    ]);
    // Another chat of the same person starts another room; another person's, too.
    model.script({ text: "Hi." }, { text: "Hi." });
    const other = await sdk.chat.completions
      .create({ model: agentId, user: "ada", messages: [{ role: "user", content: "New chat" }] })
      .withResponse();
    const stranger = await sdk.chat.completions
      .create({ model: agentId, user: "bob", messages: [opening] })
      .withResponse();
    const rooms = [other, stranger].map((answer) => answer.response.headers.get("x-room-id"));
    expect(new Set([roomId, ...rooms]).size).toBe(3);
  });

  it("uses the room named by metadata.room_id or X-Room-Id", async () => {
    const agentId = await createTestAgent(quiet);
    const sdk = admin();
    const byMetadata = await sdk.chat.completions
      .create({
        model: agentId,
        metadata: { room_id: "team-room" },
        messages: [{ role: "user", content: "One" }],
      })
      .withResponse();
    expect(byMetadata.response.headers.get("x-room-id")).toBe("team-room");
    const byHeader = await sdk.chat.completions
      .create(
        { model: agentId, messages: [{ role: "user", content: "Two" }] },
        { headers: { "X-Room-Id": "team-room" } },
      )
      .withResponse();
    expect(byHeader.response.headers.get("x-room-id")).toBe("team-room");
    expect((await history(agentId, "team-room")).map((m) => m.text)).toEqual([
      "One",
      "ok",
      "Two",
      "ok",
    ]);
  });

  it("applies a token's user prefix to `user` and the room, and speaks as the token's user by default", async () => {
    const agentId = await createTestAgent(quiet);
    const tenant = await mintToken({
      name: "acme",
      scopes: ["messages:write"],
      agents: [agentId],
      userPrefix: "acme:",
    });
    const { sdk } = openai(tenant.token);
    const messages = [{ role: "user" as const, content: "Hello" }];
    const stranger = await refusal(
      sdk.chat.completions.create({ model: agentId, user: "globex:bob", messages }),
    );
    expect(stranger).toBeInstanceOf(PermissionDeniedError);
    expect(stranger.message).toContain('"acme:"');
    expect(stranger.param).toBe("user");
    const otherRoom = await refusal(
      sdk.chat.completions.create({
        model: agentId,
        metadata: { room_id: "user:globex:bob" },
        messages,
      }),
    );
    expect(otherRoom).toBeInstanceOf(PermissionDeniedError);
    expect(otherRoom.param).toBe("metadata.room_id");

    const { response } = await sdk.chat.completions
      .create({ model: agentId, messages })
      .withResponse();
    const roomId = response.headers.get("x-room-id")!;
    expect(roomId).toMatch(/^acme:chat-/);
    const [said] = await history(agentId, roomId);
    expect(said).toMatchObject({ role: "user", userId: `acme:openai-${tenant.id}` });
    expect(primaryCalls()).toBe(1);
  });

  it("refuses a token without messages:write with the SDK's PermissionDeniedError and our message", async () => {
    const agentId = await createTestAgent(quiet);
    const reader = await mintToken({ name: "reader", scopes: ["agents:read"] });
    const error = await refusal(
      openai(reader.token).sdk.chat.completions.create({
        model: agentId,
        messages: [{ role: "user", content: "Hello" }],
      }),
    );
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.status).toBe(403);
    expect(error.message).toContain("this token lacks the `messages:write` scope");
    expect(error.error).toEqual({
      message: expect.stringContaining("messages:write"),
      type: "permission_error",
      param: null,
      code: "forbidden",
    });
    expect(model.calls).toHaveLength(0);
  });

  it("refuses an agent outside the token's agents, and an agent that does not exist", async () => {
    const mine = await createTestAgent(quiet);
    const theirs = await createTestAgent(quiet);
    const limited = await mintToken({ name: "mine", scopes: ["messages:write"], agents: [mine] });
    const messages = [{ role: "user" as const, content: "Hello" }];
    const outside = await refusal(
      openai(limited.token).sdk.chat.completions.create({ model: theirs, messages }),
    );
    expect(outside).toBeInstanceOf(PermissionDeniedError);
    expect(outside.message).toContain(`may not act for agent "${theirs}"`);
    expect(outside.param).toBe("model");
    const missing = await refusal(
      admin().chat.completions.create({ model: "no-such-agent", messages }),
    );
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.param).toBe("model");
    expect(model.calls).toHaveLength(0);
  });

  it("refuses bad bodies with a clear 400 naming the field", async () => {
    const agentId = await createTestAgent(quiet);
    const sdk = admin();
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ messages: [] }, "messages", "at least one message"],
      [
        {
          messages: [
            { role: "user", content: "Hi" },
            { role: "assistant", content: "Hello" },
          ],
        },
        "messages",
        "the last message must be the user's",
      ],
      [
        {
          messages: [{ role: "user", content: "Weather?" }],
          tools: [{ type: "function", function: { name: "get_weather", parameters: {} } }],
        },
        "tools",
        "the agent's tools run on the server",
      ],
      [
        {
          messages: [
            { role: "user", content: "Weather?" },
            {
              role: "assistant",
              content: null,
              tool_calls: [
                { id: "c1", type: "function", function: { name: "w", arguments: "{}" } },
              ],
            },
            { role: "tool", tool_call_id: "c1", content: "Sunny" },
            { role: "user", content: "Thanks" },
          ],
        },
        "messages.1.tool_calls",
        "client-side tools are not supported",
      ],
      [{ messages: [{ role: "user", content: "   " }] }, "messages.0.content", "has no text"],
      [
        { messages: [{ role: "user", content: "Hi" }], n: 2 },
        "n",
        "an agent gives one reply per turn",
      ],
    ];
    for (const [body, param, message] of cases) {
      const error = await refusal(
        sdk.chat.completions.create({ model: agentId, ...body } as never),
      );
      expect(error, param).toBeInstanceOf(BadRequestError);
      expect(error.message, param).toContain(message);
      expect(error.param, param).toBe(param);
      expect(error.type, param).toBe("invalid_request_error");
      expect(error.code, param).toBe("validation");
    }
    expect(model.calls).toHaveLength(0);
  });

  it("answers the same request sent twice quickly with one turn; the same messages later are a new turn", async () => {
    const agentId = await createTestAgent(quiet);
    const sdk = admin();
    model.script({ text: "Only once." }, { text: "A second thought." });
    const params = {
      model: agentId,
      messages: [{ role: "user" as const, content: "Say it once" }],
    };
    const first = await sdk.chat.completions.create(params);
    const again = await sdk.chat.completions.create(params).withResponse();
    expect(again.data.id).toBe(first.id);
    expect(again.data.choices[0]!.message.content).toBe("Only once.");
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    const streamed = await sdk.chat.completions.create({ ...params, stream: true });
    const chunks = [];
    for await (const chunk of streamed) chunks.push(chunk);
    expect(chunks[0]!.id).toBe(first.id);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).toBe(
      "Only once.",
    );
    expect(primaryCalls()).toBe(1);

    // A "regenerate" after the replay window is a new turn.
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + REPLAY_WINDOW_MS + 1_000;
      const later = await sdk.chat.completions.create(params);
      expect(later.id).not.toBe(first.id);
      expect(later.choices[0]!.message.content).toBe("A second thought.");
    } finally {
      Date.now = realNow;
    }
    expect(primaryCalls()).toBe(2);
  });

  it("answers an SDK retry of a request still running with that turn's reply", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({ hang: true });
    // The first attempt times out while the model hangs; the SDK retries the same request.
    const client = openai(ADMIN_TOKEN, { timeout: 3_000, maxRetries: 2 });
    const answer = client.sdk.chat.completions
      .create({ model: agentId, messages: [{ role: "user", content: "Take your time" }] })
      .withResponse();
    await model.waitForHang();
    await vi.waitFor(() => expect(client.attempts).toHaveLength(2), {
      timeout: 20_000,
      interval: 50,
    });
    expect(model.releaseHung({ text: "Done thinking." })).toBe(1);
    const { data, response } = await answer;
    expect(data.choices[0]!.message.content).toBe("Done thinking.");
    expect(client.attempts).toHaveLength(2);
    expect(primaryCalls()).toBe(1);
    const said = await history(agentId, response.headers.get("x-room-id")!);
    expect(said.map((m) => m.text)).toEqual(["Take your time", "Done thinking."]);
  });

  it("honours an Idempotency-Key: the same request replays, another one is a conflict the SDK does not retry", async () => {
    const agentId = await createTestAgent(quiet);
    const client = openai(ADMIN_TOKEN, { maxRetries: 2 });
    model.script({ text: "Keyed." });
    const headers = { "Idempotency-Key": "openai-key-1" };
    const params = { model: agentId, messages: [{ role: "user" as const, content: "Once" }] };
    const first = await client.sdk.chat.completions.create(params, { headers });
    const again = await client.sdk.chat.completions.create(params, { headers });
    expect(again.id).toBe(first.id);
    const conflict = await refusal(
      client.sdk.chat.completions.create(
        {
          ...params,
          messages: [
            ...params.messages,
            { role: "assistant", content: "Keyed." },
            { role: "user", content: "Twice" },
          ],
        },
        { headers },
      ),
    );
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(client.attempts).toHaveLength(3);
    expect(primaryCalls()).toBe(1);
  });
});
