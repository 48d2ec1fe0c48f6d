// The turn's wait for its query's embedding: started before the turn's preparation, bounded by
// settings.memory.embeddingBudgetMs, and a late one leaves the turn to full-text search and says
// so in the context event and the usage record. Runtime core only, with in-memory fakes.
import { describe, expect, it } from "vitest";
import { createBuiltinToolHost } from "../../../src/runtime/turn/builtin-tools.ts";
import { historyProvider } from "../../../src/runtime/context/history-provider.ts";
import { knowledgeProvider } from "../../../src/runtime/context/memory-providers.ts";
import { boundedEmbedding } from "../../../src/runtime/retrieval/query-embedding.ts";
import { createTurnRunner, type TurnRunnerDeps } from "../../../src/runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../../src/runtime/turn/turn-types.ts";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import type { MemoryRetriever } from "../../../src/runtime/ports/retrieval.ts";
import type { SpendLedger, UsageRecord } from "../../../src/runtime/turn/spend.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

const VECTOR = new Float32Array([0.6, 0.8]);

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("a bounded embedding", () => {
  it("gives the vector that comes within the budget, once however often it is asked", async () => {
    let calls = 0;
    const bounded = boundedEmbedding(async () => {
      calls += 1;
      return VECTOR;
    }, 1_000);
    expect(bounded.outcome()).toBe("none");
    expect(await bounded.vector()).toBe(VECTOR);
    expect(await bounded.vector()).toBe(VECTOR);
    expect(calls).toBe(1);
    expect(bounded.outcome()).toBe("embedded");
  });

  it("gives null at the budget and stays late when the vector comes after", async () => {
    const embedding = deferred<Float32Array | null>();
    const bounded = boundedEmbedding(() => embedding.promise, 20);
    const started = performance.now();
    expect(await bounded.vector()).toBeNull();
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    expect(bounded.outcome()).toBe("late");
    embedding.resolve(VECTOR);
    await embedding.promise;
    expect(bounded.outcome()).toBe("late");
    expect(await bounded.vector()).toBeNull();
  });

  it("is none when no vector is possible or the embedder throws, without waiting out the budget", async () => {
    const none = boundedEmbedding(async () => null, 60_000);
    expect(await none.vector()).toBeNull();
    expect(none.outcome()).toBe("none");
    const failing = boundedEmbedding(() => Promise.reject(new Error("down")), 60_000);
    expect(await failing.vector()).toBeNull();
    expect(failing.outcome()).toBe("none");
  });
});

describe("a turn's query embedding", () => {
  function recordingLedger(): SpendLedger & { records: UsageRecord[] } {
    const records: UsageRecord[] = [];
    return {
      records,
      spentOn: async () => 0,
      spentToday: async () => ({ agent: 0, member: 0, server: 0, noticed: false }),
      add: async () => undefined,
      record: async (usage) => void records.push(usage),
    };
  }

  /** A retriever whose embedding answers when the test says; it records what searches got. */
  function slowRetriever() {
    const embedding = deferred<Float32Array | null>();
    const log: string[] = [];
    const searched: Array<Float32Array | null | undefined> = [];
    const retriever: MemoryRetriever = {
      embedQuery: async () => {
        log.push("embed");
        return embedding.promise;
      },
      search: async (_query, vector) => {
        searched.push(await vector);
        return [];
      },
      aboutUser: async () => [],
      fragments: async () => [],
    };
    return { retriever, embedding, log, searched };
  }

  async function runnerDeps(retriever: MemoryRetriever): Promise<TurnRunnerDeps> {
    const memory = new FakeMemoryStore();
    const clock = tickingClock();
    return {
      model: scriptedModel([textReply("hi")]),
      modelNotConfiguredMessage: "no model",
      models: { primary: "big", fallbacks: [], small: "small" },
      memory,
      tools: createBuiltinToolHost({ memory, clock, listAll: async () => [] }),
      providers: [historyProvider, knowledgeProvider],
      evaluators: [],
      clock,
      events: eventRecorder(),
      tokens: await loadTokenCounter(),
      limits: DEFAULT_LIMITS,
      retriever,
      spend: recordingLedger(),
    };
  }

  it("starts before the turn's preparation, and a late one leaves the turn to text search, counted in usage", async () => {
    const slow = slowRetriever();
    const d = await runnerDeps(slow.retriever);
    const runner = createTurnRunner(d);
    const nova = character({ settings: { memory: { embeddingBudgetMs: 30 } } });
    const input = turnInput({ source: "rest", text: "what did we say about the garden plans?" });
    const outcome = await runner.respondOrPause(nova, input, {
      prepare: async () => {
        slow.log.push("prepare");
        return undefined;
      },
    });
    expect(slow.log).toEqual(["embed", "prepare"]);
    expect(outcome.status).toBe("replied");
    // The model answered while the embedding was still out; the search ran without a vector.
    expect(slow.searched).toEqual([null]);
    const composed = (d.events as ReturnType<typeof eventRecorder>).events.find(
      (e) => e.type === "context_composed",
    );
    expect(composed).toMatchObject({ queryEmbedding: "late" });
    if (outcome.status === "awaiting_approval") throw new Error("unexpected pause");
    expect(outcome.queryEmbedding).toBe("late");
    await runner.afterReply(nova, input, outcome);
    expect((d.spend as ReturnType<typeof recordingLedger>).records).toEqual([
      expect.objectContaining({ lateEmbeddings: 1, kind: "turn" }),
    ]);
    slow.embedding.resolve(VECTOR);
  });

  it("waits for an embedding that comes within the budget and searches with it", async () => {
    const slow = slowRetriever();
    const d = await runnerDeps(slow.retriever);
    const runner = createTurnRunner(d);
    const input = turnInput({ source: "rest", text: "what did we say about the garden plans?" });
    setTimeout(() => slow.embedding.resolve(VECTOR), 10);
    const outcome = await runner.respond(character(), input);
    expect(slow.searched).toEqual([VECTOR]);
    expect(outcome.queryEmbedding).toBe("embedded");
    await runner.afterReply(character(), input, outcome);
    expect((d.spend as ReturnType<typeof recordingLedger>).records).toEqual([
      expect.objectContaining({ lateEmbeddings: 0 }),
    ]);
  });

  it("makes no embedding call for a greeting", async () => {
    const slow = slowRetriever();
    const d = await runnerDeps(slow.retriever);
    const outcome = await createTurnRunner(d).respond(
      character(),
      turnInput({ source: "rest", text: "hi!" }),
    );
    expect(slow.log).toEqual([]);
    expect(outcome.queryEmbedding).toBe("none");
  });
});
