// In-memory fakes of the runtime's interfaces, for testing the pure core without workerd
// bindings: a memory store, a fixed clock, an event recorder and a scripted chat model.
import type { Character } from "../../src/runtime/character.ts";
import { parseCharacter } from "../../src/characters/parse-character.ts";
import type { Clock, EventSink, RuntimeEvent } from "../../src/runtime/ports/events.ts";
import type { Memory, MemoryStore } from "../../src/runtime/ports/memory.ts";
import type { ChatModel, ChatRequest, ChatResponse } from "../../src/runtime/ports/model.ts";
import type { TurnInput } from "../../src/runtime/turn/turn-types.ts";

export class FakeMemoryStore implements MemoryStore {
  readonly memories: Memory[] = [];
  readonly interactions: { agentId: string; userId: string; turnId: string }[] = [];
  async saveInbound({ memory }: { memory: Memory }) {
    await this.saveMemory(memory);
  }
  async saveMemory(memory: Memory) {
    // Ids are unique per agent, as in D1 (migration 0013).
    if (!this.memories.some((m) => m.agentId === memory.agentId && m.id === memory.id))
      this.memories.push(memory);
  }
  async recentMessages(query: {
    agentId: string;
    roomId: string;
    limit: number;
    beforeMs?: number;
  }) {
    return (
      this.memories
        .filter(
          (m) => m.type === "message" && m.agentId === query.agentId && m.roomId === query.roomId,
        )
        .filter((m) => query.beforeMs === undefined || m.createdAt < query.beforeMs)
        // As D1 orders them: newest first, and the later written first within one millisecond.
        .reverse()
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, query.limit)
    );
  }
  async recordInteraction(input: { agentId: string; userId: string; turnId: string }) {
    if (!this.interactions.some((i) => i.turnId === input.turnId && i.userId === input.userId))
      this.interactions.push(input);
    return this.interactions.filter((i) => i.agentId === input.agentId && i.userId === input.userId)
      .length;
  }
  async upsertMemory(memory: Memory) {
    const index = this.memories.findIndex(
      (m) => m.agentId === memory.agentId && m.id === memory.id,
    );
    if (index >= 0) this.memories[index] = memory;
    else this.memories.push(memory);
  }
  async saveTogether({ add, replace }: { add: Memory[]; replace: Memory[] }) {
    for (const memory of add) await this.saveMemory(memory);
    for (const memory of replace) await this.upsertMemory(memory);
  }
  async roomMessagesAfter(query: {
    agentId: string;
    roomId: string;
    afterMs: number;
    limit: number;
  }) {
    return this.memories
      .filter(
        (m) =>
          m.type === "message" &&
          m.agentId === query.agentId &&
          m.roomId === query.roomId &&
          m.createdAt > query.afterMs,
      )
      .sort((a, b) => a.createdAt - b.createdAt)
      .slice(0, query.limit);
  }
  async latestSummary(query: { agentId: string; roomId: string }) {
    const summaries = this.memories.filter(
      (m) => m.type === "summary" && m.agentId === query.agentId && m.roomId === query.roomId,
    );
    return summaries.sort((a, b) => b.createdAt - a.createdAt)[0] ?? null;
  }
}

export function tickingClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): Clock {
  let now = start;
  return { now: () => now++ };
}

export function eventRecorder(): EventSink & { events: RuntimeEvent[] } {
  const events: RuntimeEvent[] = [];
  return { events, emit: (event) => events.push(event) };
}

export function scriptedModel(
  replies: (
    | ChatResponse
    | Error
    | ((request: ChatRequest) => ChatResponse | Promise<ChatResponse>)
  )[],
): ChatModel & { requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  return {
    backend: "openai",
    requests,
    async complete(request) {
      requests.push(request);
      const next = replies.shift();
      if (!next) throw new Error("scripted model ran out of replies");
      if (next instanceof Error) throw next;
      return typeof next === "function" ? next(request) : next;
    },
  };
}

export function textReply(text: string, model = "m"): ChatResponse {
  return {
    model,
    text,
    toolCalls: [],
    usage: { promptTokens: 10, completionTokens: 2 },
    finishReason: "stop",
  };
}

export function character(overrides: Record<string, unknown> = {}): Character {
  return parseCharacter({ name: "Nova", bio: ["A helpful agent."], ...overrides });
}

export function turnInput(overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    turnId: "turn-1",
    agentId: "nova",
    roomId: "room-1",
    userId: "user-1",
    userName: "Sam",
    text: "hello",
    attachments: [],
    source: "discord",
    isDirect: false,
    mentioned: false,
    fromBot: false,
    receivedAt: Date.UTC(2026, 10, 22, 12, 0, 0),
    ...overrides,
  };
}
