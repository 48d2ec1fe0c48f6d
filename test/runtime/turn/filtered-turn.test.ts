// A turn the place's filter declined (src/runtime/access/message-filter.ts), in plain Node: the
// rules say no before anything else of a chat message is read, and the runner stores it without
// a model call, even when it mentions the agent or the place says "always".
import { describe, expect, it } from "vitest";
import { createBuiltinToolHost } from "../../../src/runtime/turn/builtin-tools.ts";
import { interactionEvaluator } from "../../../src/runtime/after-reply/evaluators.ts";
import { historyProvider } from "../../../src/runtime/context/history-provider.ts";
import { decideByRules } from "../../../src/runtime/turn/respond-decision.ts";
import { createTurnRunner, type TurnRunnerDeps } from "../../../src/runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../../src/runtime/turn/turn-types.ts";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

describe("a message the place's filter declined", () => {
  const chatty = character({ settings: { respond: { mode: "always" } } });

  it("is declined with reason `filtered`, mentioned, direct or in an `always` place", () => {
    for (const input of [
      turnInput({ mentioned: true, place: { filtered: "word" } }),
      turnInput({ isDirect: true, place: { filtered: "links" } }),
      turnInput({ place: { respond: "always", filtered: "pattern" } }),
    ])
      expect(decideByRules(input, chatty)).toEqual({ respond: false, reason: "filtered" });
  });

  it("leaves REST calls and other agents' requests alone (they carry no place)", () => {
    expect(decideByRules(turnInput({ source: "rest" }), chatty)).toMatchObject({ respond: true });
  });

  it("is stored as ignored with no model call, and stays out of later prompts", async () => {
    const memory = new FakeMemoryStore();
    const clock = tickingClock();
    const model = scriptedModel([textReply("Hello.")]);
    const deps = {
      model,
      modelNotConfiguredMessage: "no model",
      models: { primary: "big", fallbacks: [], small: "small" },
      memory,
      tools: createBuiltinToolHost({ memory, clock, listAll: async () => [] }),
      providers: [historyProvider],
      evaluators: [interactionEvaluator],
      clock,
      events: eventRecorder(),
      tokens: await loadTokenCounter(),
      limits: DEFAULT_LIMITS,
    } as TurnRunnerDeps;
    const runner = createTurnRunner(deps);
    const spam = turnInput({ mentioned: true, text: "free nitro", place: { filtered: "word" } });
    await runner.receive(spam);
    const outcome = await runner.respond(chatty, spam);
    expect(outcome).toMatchObject({ status: "ignored", usage: { modelCalls: 0 } });
    expect(model.requests).toHaveLength(0);
    // Stored, marked with the rule that declined it.
    expect(memory.memories.map((m) => [m.content.text, m.metadata.filtered])).toEqual([
      ["free nitro", "word"],
    ]);
    // The next message is answered without the declined one in its prompt.
    const next = turnInput({ mentioned: true, text: "hello there" });
    await runner.receive(next);
    expect(await runner.respond(chatty, next)).toMatchObject({ status: "replied" });
    const prompt = JSON.stringify(model.requests[0]!.messages);
    expect(prompt).toContain("hello there");
    expect(prompt).not.toContain("free nitro");
  });
});
