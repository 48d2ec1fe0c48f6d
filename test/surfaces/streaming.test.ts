// Streaming replies: `POST /agents/:agentId/messages` with `Accept: text/event-stream` streams the
// turn as server-sent events (turn, memories, delta, tool_call, tool_result, done | error), with
// the model API itself streamed. A client that leaves does not cancel or lose the turn.
import { describe, expect, it, vi } from "vitest";
import { wantsEventStream } from "../../src/http/routes/messages.ts";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";
import { parseEvents, readEventsUntil, type ServerEvent } from "../helpers/sse.ts";

const model = useModelStandIn();
const quiet = { settings: { memory: { factsEvery: 1000 } } };

interface DoneBody {
  turnId: string;
  roomId: string;
  reply: { text: string } | null;
  actions: string[];
  toolCalls: { id: string; name: string; ok: boolean; output: string }[];
  usage: { promptTokens: number; completionTokens: number; modelCalls: number };
  model: string | null;
  stopReason: string;
}

function streamed(
  agentId: string,
  text: string,
  extra: { headers?: Record<string, string>; body?: Record<string, unknown> } = {},
): Promise<Response> {
  return api("POST", `/agents/${agentId}/messages`, {
    headers: { accept: "text/event-stream", ...extra.headers },
    body: { userId: "alice", userName: "Alice", text, ...extra.body },
  });
}

function named(events: ServerEvent[], name: string): unknown[] {
  return events.filter((e) => e.event === name).map((e) => e.data);
}

async function history(
  agentId: string,
  roomId = "user:alice",
): Promise<{ role: string; text: string }[]> {
  const response = await api(
    "GET",
    `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages?limit=10`,
  );
  return (await json<{ messages: { role: string; text: string }[] }>(response)).messages;
}

describe("streaming replies over server-sent events", () => {
  it("streams the reply as the model writes it, then the same outcome the JSON answer has", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({
      text: "Hello Alice, nice to meet you!",
      usage: { promptTokens: 50, completionTokens: 7 },
    });
    const response = await streamed(agentId, "Hi there");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = parseEvents(await response.text());

    expect(events[0]).toMatchObject({ event: "turn", data: { roomId: "user:alice" } });
    expect(events[1]).toMatchObject({ event: "memories", data: { memories: [] } });
    expect(events.at(-1)!.event).toBe("done");
    const deltas = named(events, "delta").map((d) => (d as { text: string }).text);
    // The stand-in streams a word at a time: the reply arrives in pieces, in order.
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join("")).toBe("Hello Alice, nice to meet you!");

    const done = events.at(-1)!.data as DoneBody;
    expect(done).toMatchObject({
      turnId: (events[0]!.data as { turnId: string }).turnId,
      roomId: "user:alice",
      reply: { text: "Hello Alice, nice to meet you!" },
      actions: ["REPLY"],
      toolCalls: [],
      usage: { promptTokens: 50, completionTokens: 7, modelCalls: 1 },
      model: "test-primary",
      stopReason: "completed",
    });
    // The model API was asked to stream, with usage in its last chunk.
    expect(model.calls[0]!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    await vi.waitFor(async () =>
      expect((await history(agentId))[0]).toMatchObject({
        role: "agent",
        text: "Hello Alice, nice to meet you!",
      }),
    );
  });

  it("shows each tool call with its arguments, then its result, before the answer", async () => {
    const agentId = await createTestAgent(quiet);
    model.script(
      { toolCalls: [{ name: "current_time", arguments: { timeZone: "Europe/Paris" } }] },
      { text: "It is evening in Paris." },
    );
    const events = parseEvents(await (await streamed(agentId, "What time is it in Paris?")).text());
    const order = events.map((e) => e.event).filter((name) => name !== "delta");
    expect(order).toEqual(["turn", "memories", "tool_call", "tool_result", "done"]);
    const [call] = named(events, "tool_call") as { id: string; name: string; arguments: unknown }[];
    expect(call).toMatchObject({ name: "current_time", arguments: { timeZone: "Europe/Paris" } });
    const [result] = named(events, "tool_result") as {
      id: string;
      ok: boolean;
      output: string;
      cached: boolean;
    }[];
    expect(result).toMatchObject({ id: call!.id, name: "current_time", ok: true, cached: false });
    const done = events.at(-1)!.data as DoneBody;
    // Paris is at GMT+1 or GMT+2 depending on the season.
    expect(result!.output).toMatch(/GMT\+[12]/);
    expect(result!.output).toBe(done.toolCalls[0]!.output);
    expect(done.reply?.text).toBe("It is evening in Paris.");
    expect(done.toolCalls.map((c) => c.name)).toEqual(["current_time"]);
    // Both model rounds were streamed; the tool call's arguments were reassembled from pieces.
    expect(model.calls.map((c) => c.body.stream)).toEqual([true, true]);
  });

  it("lists the memories the turn put into the prompt", async () => {
    const agentId = await createTestAgent(quiet);
    await api("POST", `/agents/${agentId}/knowledge`, {
      body: { title: "Boat guide", text: "The rowing boat is kept in the north shed." },
    });
    await api("POST", "/memories", {
      body: {
        memories: [
          { agentId, type: "fact", userId: "alice", text: "Alice is allergic to peanuts" },
        ],
      },
    });
    model.script({ text: "In the north shed." });
    const events = parseEvents(
      await (await streamed(agentId, "Where is the rowing boat kept?")).text(),
    );
    const { memories } = named(events, "memories")[0] as {
      memories: { id: string; type: string; text: string; score: number | null }[];
    };
    expect(memories.map((m) => [m.type, m.text])).toEqual([
      ["fact", "Alice is allergic to peanuts"],
      ["fragment", "The rowing boat is kept in the north shed."],
    ]);
    expect(memories[0]!.score).toBeNull();
    expect(memories[1]!.score).toBeGreaterThan(0);
    // The done event, and so the JSON answer, carries the same list.
    expect((events.at(-1)!.data as { memories: unknown }).memories).toEqual(memories);

    // Without streaming: the JSON answer lists them too, and the stored reply keeps their ids.
    model.script({ text: "Still in the north shed." });
    const answer = await json<{ memories: typeof memories; turnId: string }>(
      await api("POST", `/agents/${agentId}/messages`, {
        body: { userId: "alice", userName: "Alice", text: "And the rowing boat now?" },
      }),
    );
    expect(answer.memories.map((m) => m.text)).toEqual(memories.map((m) => m.text));
    await vi.waitFor(async () => {
      const stored = await json<{
        memories: { metadata: { turnId?: string; memories?: unknown } }[];
      }>(await api("GET", `/memories?agentId=${agentId}&type=message&limit=10`));
      const reply = stored.memories.find(
        (m) => m.metadata.turnId === answer.turnId && m.metadata.memories !== undefined,
      );
      expect(reply?.metadata.memories).toEqual(
        answer.memories.map(({ id, type, score }) => ({ id, type, score })),
      );
    });
  });

  it("finishes and stores the turn when the client goes away mid-reply", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({ text: "one two three four five six seven eight nine ten", chunkDelayMs: 20 });
    const response = await streamed(agentId, "Count to ten");
    const { events, reader } = await readEventsUntil(response.body!, (seen) =>
      seen.some((e) => e.event === "delta"),
    );
    expect(events.some((e) => e.event === "done")).toBe(false);
    await reader.cancel("the user closed the tab");
    await vi.waitFor(
      async () =>
        expect((await history(agentId))[0]).toMatchObject({
          role: "agent",
          text: "one two three four five six seven eight nine ten",
        }),
      {
        timeout: 5_000,
      },
    );
    expect(model.calls).toHaveLength(1);
  });

  it("ends with an error event when the model fails after the stream began", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({
      status: 400,
      body: { error: { message: "context too long", type: "invalid_request_error" } },
    });
    const response = await streamed(agentId, "Hello?");
    expect(response.status).toBe(200);
    const events = parseEvents(await response.text());
    expect(events.map((e) => e.event)).toEqual(["turn", "memories", "error"]);
    const { error } = events.at(-1)!.data as { error: { code: string; message: string } };
    expect(error.code).toBe("model");
    expect(error.message).toContain("context too long");
    expect(JSON.stringify(events)).not.toContain("sk-test-not-a-real-key");
  });

  it("retries a malformed streamed answer before anything was shown", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({ malformed: true }, { text: "Second time lucky." });
    const events = parseEvents(await (await streamed(agentId, "Hello?")).text());
    expect(
      named(events, "delta")
        .map((d) => (d as { text: string }).text)
        .join(""),
    ).toBe("Second time lucky.");
    expect((events.at(-1)!.data as DoneBody).reply?.text).toBe("Second time lucky.");
    expect(model.calls).toHaveLength(2);
  });

  it("refuses a bad request with a JSON error, not a stream", async () => {
    const agentId = await createTestAgent(quiet);
    const response = await api("POST", `/agents/${agentId}/messages`, {
      headers: { accept: "text/event-stream" },
      body: { userId: "alice", text: "" },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await json(response)).toMatchObject({ error: { code: "validation" } });
    const missing = await streamed("no-such-agent", "Hello?");
    expect(missing.status).toBe(404);
    expect(model.calls).toHaveLength(0);
  });

  it("answers a repeated Idempotency-Key with the first turn's outcome and no second model call", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({ text: "Only once." });
    const headers = { "idempotency-key": "stream-key-1" };
    const first = parseEvents(await (await streamed(agentId, "Say it once", { headers })).text());
    const again = await streamed(agentId, "Say it once", { headers });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const replay = parseEvents(await again.text());
    expect(replay.map((e) => e.event)).toEqual(["turn", "done"]);
    expect(replay.at(-1)!.data).toEqual(first.at(-1)!.data);
    expect(model.calls).toHaveLength(1);
    const conflict = await streamed(agentId, "Something else", { headers });
    expect(conflict.status).toBe(409);
  });

  it("keeps the JSON answer for clients that do not ask for a stream", async () => {
    const agentId = await createTestAgent(quiet);
    model.script({ text: "Plain." });
    const response = await api("POST", `/agents/${agentId}/messages`, {
      headers: { accept: "application/json" },
      body: { userId: "alice", text: "Hi" },
    });
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await json(response)).toMatchObject({ reply: { text: "Plain." } });
    expect(model.calls[0]!.body.stream).toBeUndefined();
  });

  it("reads Accept as a list of media ranges with q values", () => {
    expect(wantsEventStream("text/event-stream")).toBe(true);
    expect(wantsEventStream("application/json, text/event-stream;q=0.5")).toBe(true);
    expect(wantsEventStream("Text/Event-Stream")).toBe(true);
    expect(wantsEventStream("text/event-stream;q=0")).toBe(false);
    expect(wantsEventStream("*/*")).toBe(false);
    expect(wantsEventStream(undefined)).toBe(false);
  });
});
