// The daily ceiling's admission in the pure runtime: the caller's own checks before the model
// (beforeModel: its character is still current) speak before the budget, so a refusal at a stale
// character's ceiling never hides that the character changed (issue 38, hole 6; the end-to-end
// attack is test/security/spend-ceiling-update.test.ts).
import { describe, expect, it } from "vitest";
import { createBuiltinToolHost } from "../../../src/runtime/turn/builtin-tools.ts";
import { AppError, RateLimitedError } from "../../../src/runtime/util/errors.ts";
import { interactionEvaluator } from "../../../src/runtime/after-reply/evaluators.ts";
import { historyProvider } from "../../../src/runtime/context/history-provider.ts";
import type { SpendLedger } from "../../../src/runtime/turn/spend.ts";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import { createTurnRunner, type TurnRunnerDeps } from "../../../src/runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../../src/runtime/turn/turn-types.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

/** A day's spend of 120 tokens, against which a ceiling of 100 refuses. */
const spentLedger: SpendLedger = {
  spentOn: async () => 120,
  add: async () => undefined,
};

async function runnerDeps(): Promise<TurnRunnerDeps & { model: ReturnType<typeof scriptedModel> }> {
  const memory = new FakeMemoryStore();
  const clock = tickingClock();
  return {
    model: scriptedModel([textReply("hi")]),
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
    spend: spentLedger,
  } as TurnRunnerDeps & { model: ReturnType<typeof scriptedModel> };
}

class StaleCharacterError extends AppError {
  constructor() {
    super("conflict", 409, "the character changed");
  }
}

describe("admitting a turn against the daily ceiling", () => {
  it("reports the caller's stale character, not the stale ceiling, when both refuse", async () => {
    const deps = await runnerDeps();
    // The caller's version check answers after the budget's read has already refused.
    const beforeModel = new Promise((_, reject) =>
      setTimeout(() => reject(new StaleCharacterError()), 20),
    );
    const outcome = createTurnRunner(deps).respondOrPause(
      character({ settings: { dailyTokens: 100 } }),
      turnInput({ source: "rest" }),
      { beforeModel },
    );
    await expect(outcome).rejects.toBeInstanceOf(StaleCharacterError);
    expect(deps.model.requests).toHaveLength(0);
  });

  it("refuses at the ceiling once the caller's checks pass", async () => {
    const deps = await runnerDeps();
    const outcome = createTurnRunner(deps).respondOrPause(
      character({ settings: { dailyTokens: 100 } }),
      turnInput({ source: "rest" }),
      { beforeModel: Promise.resolve() },
    );
    await expect(outcome).rejects.toBeInstanceOf(RateLimitedError);
    expect(deps.model.requests).toHaveLength(0);
  });
});
