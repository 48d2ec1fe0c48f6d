// The runtime core alone (src/runtime, the code every turn runs), in Node with in-memory stores
// and a model that answers instantly: what a turn costs us, with no storage or network hop. The
// worker table in run.ts adds the platform around it (D1, the room object, HTTP).
import { parseCharacter } from "../src/characters/parse-character.ts";
import { combineToolHosts, createBuiltinToolHost } from "../src/runtime/turn/builtin-tools.ts";
import { interactionEvaluator } from "../src/runtime/after-reply/evaluators.ts";
import { characterProvider } from "../src/runtime/context/character-provider.ts";
import { historyProvider } from "../src/runtime/context/history-provider.ts";
import { timeProvider } from "../src/runtime/context/time-provider.ts";
import { toolsProvider } from "../src/runtime/context/tools-provider.ts";
import { loadTokenCounter } from "../src/runtime/util/tokens.ts";
import { createTurnRunner } from "../src/runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS, type TurnInput } from "../src/runtime/turn/turn-types.ts";
import type { Memory, MemoryStore } from "../src/runtime/ports/memory.ts";
import type { ChatModel, ChatResponse, ToolCall } from "../src/runtime/ports/model.ts";
import { summarize, type Summary } from "./stats.ts";

export interface CoreRow {
  scenario: string;
  turns: number;
  latency: Summary;
  modelCallsPerTurn: number;
}

/** Append-only store: a room's newest messages are the array's tail, as an index scan would give them. */
function memoryStore(): MemoryStore {
  const messages: Memory[] = [];
  const ids = new Set<string>();
  const save = async (memory: Memory) => {
    if (ids.has(memory.id)) return;
    ids.add(memory.id);
    if (memory.type === "message") messages.push(memory);
  };
  return {
    saveInbound: async ({ memory }) => save(memory),
    saveMemory: save,
    recentMessages: async ({ limit }) => messages.slice(-limit).reverse(),
    recordInteraction: async () => 1,
    upsertMemory: save,
    saveTogether: async ({ add, replace }) => {
      for (const memory of [...add, ...replace]) await save(memory);
    },
    roomMessagesAfter: async () => [],
    latestSummary: async () => null,
  };
}

function instantModel(script: () => ChatResponse): ChatModel & { calls: number } {
  const model = {
    backend: "openai" as const,
    calls: 0,
    async complete() {
      model.calls += 1;
      return script();
    },
  };
  return model;
}

const reply = (text: string, toolCalls: ToolCall[] = []): ChatResponse => ({
  model: "bench",
  text,
  toolCalls,
  usage: { promptTokens: 900, completionTokens: 10 },
  finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
});

export async function runCoreBench(): Promise<CoreRow[]> {
  const character = parseCharacter({
    name: "Bench",
    system: "You are Bench, a benchmark agent.",
    bio: ["Answers quickly.", "Knows a little about everything."],
    lore: ["Was written in one afternoon.", "Has never met a model it did not like."],
    style: { all: ["Be brief."], chat: ["Be friendly."] },
    messageExamples: [
      [
        { name: "{{user1}}", content: { text: "Hi" } },
        { name: "Bench", content: { text: "Hello!" } },
      ],
    ],
  });
  const tokens = await loadTokenCounter();
  const rows: CoreRow[] = [];

  const scenario = async (
    name: string,
    turns: number,
    prefill: number,
    script: () => ChatResponse,
  ) => {
    const memory = memoryStore();
    const clock = {
      now: (() => {
        let t = Date.now();
        return () => ++t;
      })(),
    };
    let tools = combineToolHosts([]);
    tools = combineToolHosts([
      createBuiltinToolHost({ memory, clock, listAll: () => tools.list() }),
    ]);
    const model = instantModel(script);
    const runner = createTurnRunner({
      model,
      modelNotConfiguredMessage: "",
      models: { primary: "bench", fallbacks: [], small: "bench-small" },
      memory,
      tools,
      providers: [characterProvider, timeProvider, toolsProvider, historyProvider],
      evaluators: [interactionEvaluator],
      clock,
      events: { emit: () => {} },
      tokens,
      limits: DEFAULT_LIMITS,
    });
    const input = (i: number): TurnInput => ({
      turnId: `${name}-${i}`,
      agentId: "bench",
      roomId: "room",
      userId: "user",
      userName: "User",
      text: `message number ${i}: how are things going today?`,
      attachments: [],
      source: "rest",
      isDirect: true,
      mentioned: false,
      fromBot: false,
      receivedAt: clock.now(),
    });
    const turn = async (i: number) => {
      const started = performance.now();
      await runner.receive(input(i));
      const outcome = await runner.respond(character, input(i));
      const ms = performance.now() - started;
      await runner.afterReply(character, input(i), outcome);
      return ms;
    };
    for (let i = 0; i < prefill; i++) await turn(-1 - i);
    for (let i = 0; i < 50; i++) await turn(100_000 + i);
    model.calls = 0;
    const samples: number[] = [];
    for (let i = 0; i < turns; i++) samples.push(await turn(i));
    rows.push({
      scenario: name,
      turns,
      latency: summarize(samples),
      modelCallsPerTurn: model.calls / turns,
    });
  };

  await scenario("plain turn", 2000, 0, () => reply("Hello!"));
  let round = 0;
  await scenario("two-tool turn (3 model calls)", 1000, 0, () => {
    round = (round + 1) % 3;
    if (round === 1)
      return reply("", [{ id: "c1", name: "current_time", arguments: '{"timeZone":"UTC"}' }]);
    if (round === 2)
      return reply("", [{ id: "c2", name: "list_available_tools", arguments: "{}" }]);
    return reply("It is now, and these are my tools.");
  });
  await scenario("room with 1,000 prior messages", 2000, 500, () => reply("Hello!"));
  return rows;
}
