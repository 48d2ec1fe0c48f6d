// The edge's part of a streamed turn (src/http/turn-body.ts): the room's events pass through as
// they come, and its last event, the bare outcome, becomes the client's `done` with the same body
// the JSON answer has. The room's stream may arrive cut anywhere, so every cut is tried.
import { describe, expect, it } from "vitest";
import { clientTurnStream, turnBody } from "../../src/http/turn-body.ts";
import type { TurnOutcome } from "../../src/runtime/turn/turn-types.ts";

const outcome = {
  turnId: "t-1",
  status: "replied",
  reply: { text: "Hello, Ada. event: outcome\ndata: is only text here." },
  actions: [],
  toolCalls: [],
  usage: { promptTokens: 10, completionTokens: 3, modelCalls: 1 },
  model: "test-primary",
  stopReason: "completed",
  memories: [{ id: "m-1", type: "fact", text: "likes tea", score: 0.9 }],
} as unknown as TurnOutcome;

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const before =
  event("turn", { turnId: "t-1", roomId: "r" }) +
  ": keep-alive\n\n" +
  event("delta", { text: "Hello, " }) +
  event("delta", { text: "Ada. event: outcome" });
const roomBytes = new TextEncoder().encode(before + event("outcome", outcome));

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

async function read(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new TextDecoder().decode(await new Response(stream).arrayBuffer());
}

describe("a streamed turn at the edge", () => {
  it("passes the events through and ends with done, wherever the room's stream was cut", async () => {
    const expected = before + event("done", turnBody(outcome, "r", false));
    for (let cut = 1; cut < roomBytes.length; cut += 1) {
      const chunks = [roomBytes.subarray(0, cut), roomBytes.subarray(cut)];
      expect(await read(clientTurnStream(streamOf(chunks), "r", false))).toBe(expected);
    }
    const bytewise = [...roomBytes].map((byte) => Uint8Array.of(byte));
    expect(await read(clientTurnStream(streamOf(bytewise), "r", false))).toBe(expected);
  });

  it("gives the memories a turn used only to a caller who may read them", async () => {
    const hidden = await read(clientTurnStream(streamOf([roomBytes]), "r", false));
    expect(hidden).not.toContain("likes tea");
    const shown = await read(clientTurnStream(streamOf([roomBytes]), "r", true));
    const done = shown.split("event: done\ndata: ")[1]!;
    expect(JSON.parse(done).memories).toEqual(outcome.memories);
  });

  it("holds nothing back: each whole event is out before the next chunk comes", async () => {
    let push!: (chunk: Uint8Array) => void;
    const room = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (chunk) => controller.enqueue(chunk);
      },
    });
    const reader = clientTurnStream(room, "r", false).getReader();
    const delta = event("delta", { text: "first token" });
    push(new TextEncoder().encode(delta));
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe(delta);
  });

  it("passes a stream that ends without an outcome (an error event) through whole", async () => {
    const failed = before + event("error", { error: { code: "upstream", message: "model down" } });
    const bytes = new TextEncoder().encode(failed);
    expect(
      await read(clientTurnStream(streamOf([bytes.subarray(0, 7), bytes.subarray(7)]), "r", false)),
    ).toBe(failed);
  });
});
