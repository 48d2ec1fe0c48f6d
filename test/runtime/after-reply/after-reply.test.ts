// What a turn does after its reply (turn-runner.ts, afterReply): the reply's write, its spend and
// the interaction count start together, so a store that sends calls started together as one
// round trip (a room's D1, src/db/shared-trips.ts) makes one of them; the evaluators that may
// read the conversation run only once the reply is stored, and not at all if it could not be.
import { describe, expect, it } from "vitest";
import {
  interactionEvaluator,
  type Evaluator,
} from "../../../src/runtime/after-reply/evaluators.ts";
import { historyProvider } from "../../../src/runtime/context/history-provider.ts";
import type { SpendLedger } from "../../../src/runtime/turn/spend.ts";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import { createTurnRunner } from "../../../src/runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../../src/runtime/turn/turn-types.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

/** A call that waits until `pass` is called (or fails with `fail`). */
function gate() {
  let pass!: () => void;
  let fail!: (error: Error) => void;
  const passed = new Promise<void>((resolve, reject) => {
    pass = resolve;
    fail = reject;
  });
  return { passed, pass, fail };
}

async function setup() {
  const log: string[] = [];
  const gates = { reply: gate(), spend: gate(), interaction: gate() };
  class GatedStore extends FakeMemoryStore {
    override async saveMemory(memory: Memory) {
      if (memory.content.role !== "agent") return super.saveMemory(memory);
      log.push("reply");
      await gates.reply.passed;
      return super.saveMemory(memory);
    }
    override async recordInteraction(input: { agentId: string; userId: string; turnId: string }) {
      log.push("interaction");
      await gates.interaction.passed;
      return super.recordInteraction(input);
    }
  }
  const spend: SpendLedger = {
    spentOn: async () => 0,
    spentToday: async () => ({ agent: 0, member: 0, server: 0, noticed: false }),
    async add() {
      throw new Error("a turn records its usage; add is for a caller charged for another agent");
    },
    async record() {
      log.push("spend");
      await gates.spend.passed;
    },
  };
  const reader: Evaluator = {
    name: "reader",
    shouldRun: () => true,
    async run(context) {
      log.push(`reader saw ${context.interactions} interaction(s)`);
    },
  };
  const memory = new GatedStore();
  const clock = tickingClock();
  const runner = createTurnRunner({
    model: scriptedModel([textReply("hi")]),
    modelNotConfiguredMessage: "no model",
    models: { primary: "big", fallbacks: [], small: "small" },
    memory,
    tools: { list: async () => [], call: async () => ({ ok: true, content: "" }) },
    providers: [historyProvider],
    evaluators: [interactionEvaluator, reader],
    clock,
    events: eventRecorder(),
    tokens: await loadTokenCounter(),
    limits: DEFAULT_LIMITS,
    spend,
  } as unknown as Parameters<typeof createTurnRunner>[0]);
  const input = turnInput({ source: "rest" });
  await runner.receive(input);
  const outcome = await runner.respond(character(), input);
  return { log, gates, memory, afterReply: () => runner.afterReply(character(), input, outcome) };
}

/** Lets every pending continuation run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("after the reply", () => {
  it("starts the reply's write, its spend and the interaction count together; readers wait", async () => {
    const { log, gates, memory, afterReply } = await setup();
    const done = afterReply();
    await settle();
    expect(log.sort()).toEqual(["interaction", "reply", "spend"]);
    gates.interaction.pass();
    gates.spend.pass();
    await settle();
    // The reply is not stored yet: nothing that may read the conversation has run.
    expect(log).toHaveLength(3);
    gates.reply.pass();
    await done;
    expect(log.at(-1)).toBe("reader saw 1 interaction(s)");
    expect(memory.memories.map((m) => m.content.role)).toEqual(["user", "agent"]);
  });

  it("fails, with no reader run, when the reply could not be stored (the room retries it)", async () => {
    const { log, gates, afterReply } = await setup();
    const done = afterReply();
    gates.interaction.pass();
    gates.spend.pass();
    gates.reply.fail(new Error("D1 is down"));
    await expect(done).rejects.toThrow("D1 is down");
    expect(log.some((entry) => entry.startsWith("reader"))).toBe(false);
  });
});
