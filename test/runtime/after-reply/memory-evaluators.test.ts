// The memory evaluators on their own, with in-memory fakes: when the reflection and the summary
// call the small model, and that a summary due on a reflection's turn shares its one call.
import { describe, expect, it } from "vitest";
import {
  type EvaluatorContext,
  runEvaluators,
} from "../../../src/runtime/after-reply/evaluators.ts";
import {
  reflectionEvaluator,
  summaryEvaluator,
} from "../../../src/runtime/after-reply/memory-evaluators.ts";
import type { ChatRequest } from "../../../src/runtime/ports/model.ts";
import type { MemoryRetriever } from "../../../src/runtime/ports/retrieval.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

const START = Date.UTC(2026, 10, 1, 9, 0, 0);

/** A room of `count` alternating messages, a minute apart, none summarized yet. */
function roomWith(count: number): FakeMemoryStore {
  const memory = new FakeMemoryStore();
  for (let i = 0; i < count; i++) {
    const fromAgent = i % 2 === 1;
    memory.memories.push({
      id: `m${i}`,
      type: "message",
      agentId: "nova",
      roomId: "room-1",
      userId: fromAgent ? null : "user-1",
      content: fromAgent
        ? { text: `answer ${i}`, role: "agent" }
        : { text: `message ${i}`, role: "user", userName: "Sam" },
      metadata: {},
      createdAt: START + i * 60_000,
    });
  }
  return memory;
}

function contextFor(
  memory: FakeMemoryStore,
  model: ReturnType<typeof scriptedModel>,
  interactions: number,
): EvaluatorContext {
  const retriever = {
    aboutUser: async () => [],
  } as unknown as MemoryRetriever;
  return {
    character: character({ settings: { memory: { factsEvery: 2, summarizeAfter: 20 } } }),
    input: turnInput({ turnId: `turn-${interactions}` }),
    outcome: {
      turnId: `turn-${interactions}`,
      status: "replied",
      reply: { text: "hi" },
      actions: ["REPLY"],
      toolCalls: [],
      usage: { promptTokens: 1, completionTokens: 1, modelCalls: 1, toolCalls: 0 },
      model: "big",
      stopReason: "final",
      memories: [],
    } as unknown as EvaluatorContext["outcome"],
    memory,
    clock: tickingClock(),
    model: { client: model, name: "small" },
    retriever,
    interactions,
  };
}

async function evaluate(context: EvaluatorContext): Promise<void> {
  const events = eventRecorder();
  await runEvaluators([reflectionEvaluator, summaryEvaluator], context, {
    timeoutMs: 5_000,
    events,
  });
  expect(events.events).toEqual([]);
}

const systemOf = (request: ChatRequest) => String(request.messages[0]?.content ?? "");

describe("memory evaluators", () => {
  it("asks one call for facts, profile and a due summary on a reflection's turn", async () => {
    const memory = roomWith(21);
    const model = scriptedModel([
      textReply(
        JSON.stringify({
          facts: [{ text: "Sam collects stamps" }],
          description: "Sam is a collector.",
          summary: "Sam and Nova talked about stamps.",
        }),
      ),
    ]);
    await evaluate(contextFor(memory, model, 2));
    expect(model.requests).toHaveLength(1);
    expect(systemOf(model.requests[0]!)).toContain('"summary":"..."');
    expect(String(model.requests[0]!.messages[1]?.content)).toContain(
      "Earlier part to summarize (oldest first):\n[2026-11-01T09:00] Sam: message 0",
    );
    const summary = memory.memories.find((m) => m.type === "summary");
    expect(summary?.content.text).toBe("Sam and Nova talked about stamps.");
    expect(summary?.metadata).toMatchObject({ fromMs: START, messages: 10 });
    expect(memory.memories.filter((m) => m.type === "fact").map((m) => m.content.text)).toEqual([
      "Sam collects stamps",
    ]);
    expect(memory.memories.find((m) => m.type === "description")?.content.text).toBe(
      "Sam is a collector.",
    );
  });

  it("asks for no summary when none is due, and re-asks when a due one is missing", async () => {
    const quiet = roomWith(6);
    const plain = scriptedModel([textReply(JSON.stringify({ facts: [], description: null }))]);
    await evaluate(contextFor(quiet, plain, 2));
    expect(plain.requests).toHaveLength(1);
    expect(systemOf(plain.requests[0]!)).not.toContain("summar");

    const due = roomWith(21);
    const forgetful = scriptedModel([
      textReply(JSON.stringify({ facts: [], description: null })),
      textReply(JSON.stringify({ facts: [], description: null, summary: "Small talk." })),
    ]);
    await evaluate(contextFor(due, forgetful, 4));
    // The second call is the reflection re-asked, not a summary of its own.
    expect(forgetful.requests).toHaveLength(2);
    expect(systemOf(forgetful.requests[1]!)).toBe(systemOf(forgetful.requests[0]!));
    expect(systemOf(forgetful.requests[1]!)).toContain("long-term memory about one person");
    expect(due.memories.find((m) => m.type === "summary")?.content.text).toBe("Small talk.");
  });

  it("lets a due summary wait for the next reflection, and runs it alone once overdue", async () => {
    // 21-25 unsummarized messages (summarizeAfter 20, a quarter more to wait): no call off a
    // reflection's turn.
    const waiting = roomWith(25);
    const idle = scriptedModel([]);
    await evaluate(contextFor(waiting, idle, 3));
    expect(idle.requests).toHaveLength(0);
    expect(waiting.memories.some((m) => m.type === "summary")).toBe(false);

    const overdue = roomWith(26);
    const model = scriptedModel([textReply(JSON.stringify({ summary: "Long small talk." }))]);
    await evaluate(contextFor(overdue, model, 3));
    expect(model.requests).toHaveLength(1);
    expect(systemOf(model.requests[0]!)).toMatch(/^Summarize this part of a conversation/);
    expect(overdue.memories.find((m) => m.type === "summary")?.metadata).toMatchObject({
      messages: 10,
    });
  });

  it("summarizes on its own when no reflection can run (no retriever)", async () => {
    const memory = roomWith(26);
    const model = scriptedModel([textReply(JSON.stringify({ summary: "Small talk." }))]);
    await evaluate({ ...contextFor(memory, model, 2), retriever: null });
    expect(model.requests).toHaveLength(1);
    expect(systemOf(model.requests[0]!)).toMatch(/^Summarize this part of a conversation/);
    expect(memory.memories.find((m) => m.type === "summary")?.content.text).toBe("Small talk.");
  });
});
