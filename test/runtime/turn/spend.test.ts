// The daily ceiling's admission in the pure runtime: the caller's own checks before the model
// (beforeModel: its character is still current) speak before the budget, so a refusal at a stale
// character's ceiling never hides that the character changed (issue 38, hole 6; the end-to-end
// attack is test/security/spend-ceiling-update.test.ts). And the usage record a turn leaves.
import { describe, expect, it } from "vitest";
import { createBuiltinToolHost } from "../../../src/runtime/turn/builtin-tools.ts";
import { AppError, RateLimitedError } from "../../../src/runtime/util/errors.ts";
import { interactionEvaluator } from "../../../src/runtime/after-reply/evaluators.ts";
import { historyProvider } from "../../../src/runtime/context/history-provider.ts";
import type { SpendLedger, UsageRecord } from "../../../src/runtime/turn/spend.ts";
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
  spentToday: async () => ({ agent: 120, member: 0, server: 0, noticed: false }),
  add: async () => undefined,
  record: async () => undefined,
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

describe("the turn's usage record", () => {
  function recordingLedger(): SpendLedger & { records: UsageRecord[] } {
    const records: UsageRecord[] = [];
    return {
      records,
      spentOn: async () => 0,
      spentToday: async () => ({ agent: 0, member: 0, server: 0, noticed: false }),
      add: async () => {
        throw new Error("a turn's own spend goes through record");
      },
      record: async (usage) => void records.push(usage),
    };
  }

  it("a reply with a tool call: one record after the reply, with who, where, the model, the tokens split, each tool", async () => {
    const ledger = recordingLedger();
    const d = await runnerDeps();
    d.spend = ledger;
    d.model = scriptedModel([
      {
        model: "big-1",
        text: "",
        toolCalls: [{ id: "c1", name: "remember", arguments: '{"fact":"likes tea"}' }],
        usage: { promptTokens: 30, completionTokens: 5 },
        finishReason: "tool_calls",
      },
      textReply("noted", "big-1"),
    ]);
    const runner = createTurnRunner(d);
    const input = turnInput({
      source: "discord",
      mentioned: true,
      userId: "discord:42",
      principal: {
        kind: "member",
        platform: "discord",
        userId: "discord:42",
        manager: false,
        owner: false,
        guildId: "9001",
      },
    });
    const outcome = await runner.respond(character(), input);
    expect(ledger.records).toEqual([]);
    await runner.afterReply(character(), input, outcome);
    expect(ledger.records).toHaveLength(1);
    expect(ledger.records[0]).toMatchObject({
      id: "turn-1",
      agentId: "nova",
      kind: "turn",
      roomId: "room-1",
      userId: "discord:42",
      guildId: "9001",
      source: "discord",
      model: "big-1",
      inputTokens: 40,
      outputTokens: 7,
      modelCalls: 2,
      tools: [{ name: "remember", ok: true }],
      error: null,
    });
  });

  it("a failed turn is recorded with its error code; a REST turn has no server", async () => {
    const ledger = recordingLedger();
    const d = await runnerDeps();
    d.spend = ledger;
    d.model = scriptedModel([new Error("upstream down")]);
    const runner = createTurnRunner(d);
    const input = turnInput({ source: "rest" });
    await expect(runner.respond(character(), input)).rejects.toThrow();
    expect(ledger.records).toHaveLength(1);
    expect(ledger.records[0]).toMatchObject({
      kind: "turn",
      guildId: null,
      source: "rest",
      tools: [],
    });
    expect(ledger.records[0]!.error).toEqual(expect.any(String));
  });
});

describe("a chat place's budgets (PlacePolicy.budgets)", () => {
  const member = {
    kind: "member" as const,
    platform: "discord" as const,
    userId: "discord:42",
    manager: false,
    owner: false,
    guildId: "9001",
  };
  function placeLedger(spent: {
    agent?: number;
    member?: number;
    server?: number;
    noticed?: boolean;
  }): SpendLedger & { records: UsageRecord[]; queries: unknown[] } {
    const records: UsageRecord[] = [];
    const queries: unknown[] = [];
    return {
      records,
      queries,
      spentOn: async () => {
        throw new Error("a turn with place budgets reads them with the agent's day, in one read");
      },
      spentToday: async (query) => {
        queries.push(query);
        return { agent: 0, member: 0, server: 0, noticed: false, ...spent };
      },
      add: async () => undefined,
      record: async (usage) => void records.push(usage),
    };
  }
  const placeInput = (budgets: { member?: number; server?: number }) =>
    turnInput({
      source: "discord",
      mentioned: true,
      userId: "discord:42",
      principal: member,
      place: { budgets },
    });

  it("a member at their budget: no model call, the notice once, recorded with the budget's name", async () => {
    const deps = await runnerDeps();
    const ledger = placeLedger({ member: 500 });
    deps.spend = ledger;
    const outcome = await createTurnRunner(deps).respond(character(), placeInput({ member: 500 }));
    expect(deps.model.requests).toHaveLength(0);
    expect(outcome).toMatchObject({
      status: "ignored",
      reply: null,
      notice: "Your budget for today is used; it resets at 00:00 UTC.",
    });
    expect(ledger.queries).toEqual([
      expect.objectContaining({ agentId: "nova", userId: "discord:42", guildId: "9001" }),
    ]);
    expect(ledger.records).toEqual([
      expect.objectContaining({ error: "member_budget", inputTokens: 0, modelCalls: 0 }),
    ]);
  });

  it("already told today: ignored with no notice; under both budgets: answered", async () => {
    const told = await runnerDeps();
    told.spend = placeLedger({ server: 900, noticed: true });
    const quiet = await createTurnRunner(told).respond(character(), placeInput({ server: 800 }));
    expect(quiet.status).toBe("ignored");
    expect(quiet.notice).toBeUndefined();
    expect(told.model.requests).toHaveLength(0);

    const under = await runnerDeps();
    under.spend = placeLedger({ member: 499, server: 799 });
    const answered = await createTurnRunner(under).respond(
      character(),
      placeInput({ member: 500, server: 800 }),
    );
    expect(answered.status).toBe("replied");
    expect(under.model.requests).toHaveLength(1);
  });

  it("a server at exactly its budget: no model call, the server's notice; one token under: answered", async () => {
    const at = await runnerDeps();
    at.spend = placeLedger({ server: 800 });
    const refused = await createTurnRunner(at).respond(character(), placeInput({ server: 800 }));
    expect(refused).toMatchObject({
      status: "ignored",
      reply: null,
      notice: "This server's budget for today is used; it resets at 00:00 UTC.",
    });
    expect(at.model.requests).toHaveLength(0);

    const under = await runnerDeps();
    under.spend = placeLedger({ server: 799 });
    const answered = await createTurnRunner(under).respond(
      character(),
      placeInput({ server: 800 }),
    );
    expect(answered.status).toBe("replied");
    expect(under.model.requests).toHaveLength(1);
  });

  it("the agent's ceiling refuses at exactly its value with 429 when the turn carries place budgets; one token under: answered", async () => {
    const budgets = { member: 500, server: 800 };
    const at = await runnerDeps();
    at.spend = placeLedger({ agent: 100 });
    const refused = createTurnRunner(at).respond(
      character({ settings: { dailyTokens: 100 } }),
      placeInput(budgets),
    );
    await expect(refused).rejects.toMatchObject({ status: 429, code: "rate_limited" });
    expect(at.model.requests).toHaveLength(0);

    const under = await runnerDeps();
    under.spend = placeLedger({ agent: 99 });
    const answered = await createTurnRunner(under).respond(
      character({ settings: { dailyTokens: 100 } }),
      placeInput(budgets),
    );
    expect(answered.status).toBe("replied");
    expect(under.model.requests).toHaveLength(1);
  });

  it("the agent's own ceiling still refuses with 429 from the same read", async () => {
    const deps = await runnerDeps();
    deps.spend = placeLedger({ agent: 120 });
    const outcome = createTurnRunner(deps).respond(
      character({ settings: { dailyTokens: 100 } }),
      placeInput({ member: 500 }),
    );
    await expect(outcome).rejects.toBeInstanceOf(RateLimitedError);
    expect(deps.model.requests).toHaveLength(0);
  });
});
