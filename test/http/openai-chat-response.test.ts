// The OpenAI-compatible surface's stream (src/http/routes/openai/chat-response.ts): the room's
// turn events re-said as `chat.completion.chunk` events. The room's stream may arrive cut
// anywhere (a multi-byte character included), so every cut is tried; a round that called tools,
// a reply that is not what was streamed, a failure and a stream cut short each end as a client
// of the SDKs expects.
import { describe, expect, it } from "vitest";
import { completionStream } from "../../src/http/routes/openai/chat-response.ts";
import type { TurnOutcome } from "../../src/runtime/turn/turn-types.ts";

const meta = { model: "ada", created: 1_800_000_000 };

function outcomeOf(text: string): TurnOutcome {
  return {
    turnId: "t-1",
    status: "replied",
    reply: { text },
    actions: ["REPLY"],
    toolCalls: [],
    usage: { promptTokens: 10, completionTokens: 3, modelCalls: 1 },
    model: "test-primary",
    stopReason: "completed",
    memories: [],
  } as unknown as TurnOutcome;
}

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const turn = event("turn", { turnId: "t-1", roomId: "r" });
const delta = (text: string) => event("delta", { text });

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

interface Chunk {
  id?: string;
  object?: string;
  choices?: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  error?: { message: string; type: string; code: string; param: string | null };
}

/** The data lines a client reads, `[DONE]` as a string, other lines (comments) left out. */
async function read(
  room: string | Uint8Array[],
  includeUsage = false,
): Promise<Array<Chunk | "[DONE]">> {
  const chunks = typeof room === "string" ? [new TextEncoder().encode(room)] : room;
  const text = await new Response(
    completionStream(streamOf(chunks), { ...meta, includeUsage }),
  ).text();
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => {
      const data = block.slice("data: ".length);
      return data === "[DONE]" ? "[DONE]" : (JSON.parse(data) as Chunk);
    });
}

const contentOf = (chunks: Array<Chunk | "[DONE]">) =>
  chunks
    .flatMap((chunk) => (chunk === "[DONE]" ? [] : (chunk.choices ?? [])))
    .map((choice) => choice.delta.content ?? "")
    .join("");

describe("the OpenAI chunk stream of a turn", () => {
  it("says the role first, the text as it came, the finish, the usage when asked, then [DONE]", async () => {
    const room = `${turn}: keep-alive\n\n${delta("Héllo, ")}${delta("Ada 🌿.")}${event("outcome", outcomeOf("Héllo, Ada 🌿."))}`;
    const expected = await read(room, true);
    expect(expected[0]).toMatchObject({
      id: "chatcmpl-t-1",
      object: "chat.completion.chunk",
      choices: [{ delta: { role: "assistant", content: "" }, finish_reason: null }],
    });
    expect(contentOf(expected)).toBe("Héllo, Ada 🌿.");
    expect(expected.at(-3)).toMatchObject({ choices: [{ delta: {}, finish_reason: "stop" }] });
    expect(expected.at(-2)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
    });
    expect(expected.at(-1)).toBe("[DONE]");

    const bytes = new TextEncoder().encode(room);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      const cutThere = await read([bytes.subarray(0, cut), bytes.subarray(cut)], true);
      expect(cutThere, `cut at ${cut}`).toEqual(expected);
    }
    expect(
      await read(
        [...bytes].map((byte) => Uint8Array.of(byte)),
        true,
      ),
    ).toEqual(expected);
  });

  it("leaves out the usage chunk unless asked, and the tools' events always", async () => {
    const room =
      turn +
      delta("Let me check.") +
      event("tool_call", { id: "c1", name: "current_time", arguments: {} }) +
      event("tool_result", { id: "c1", name: "current_time", ok: true, output: "noon" }) +
      delta("It is noon.") +
      event("outcome", outcomeOf("It is noon."));
    const chunks = await read(room);
    // What the model wrote before the tool stays; the answer after it is a new paragraph.
    expect(contentOf(chunks)).toBe("Let me check.\n\nIt is noon.");
    expect(chunks.some((chunk) => chunk !== "[DONE]" && chunk.usage)).toBe(false);
    expect(JSON.stringify(chunks)).not.toContain("current_time");
  });

  it("adds what the reply has beyond the streamed text, or the reply itself when it differs", async () => {
    const trimmed = await read(turn + delta("  Done  ") + event("outcome", outcomeOf("Done")));
    expect(contentOf(trimmed)).toBe("  Done  ");
    const canned = await read(
      turn + delta("Partial answ") + event("outcome", outcomeOf("I stopped after 6 steps.")),
    );
    expect(contentOf(canned)).toBe("Partial answ\n\nI stopped after 6 steps.");
    const unstreamed = await read(turn + event("outcome", outcomeOf("All at once.")));
    expect(contentOf(unstreamed)).toBe("All at once.");
  });

  it("ends a turn that failed, or a stream cut short, with an error chunk the SDKs raise", async () => {
    const failed = await read(
      turn +
        delta("Hal") +
        event("error", { error: { code: "model", message: "the model failed" } }),
    );
    expect(failed.at(-1)).toEqual({
      error: { message: "the model failed", type: "server_error", param: null, code: "model" },
    });
    expect(failed).not.toContain("[DONE]");
    const cut = await read(turn + delta("Hal"));
    expect(cut.at(-1)).toMatchObject({
      error: { code: "upstream", message: expect.stringContaining("send the same request again") },
    });
  });
});
