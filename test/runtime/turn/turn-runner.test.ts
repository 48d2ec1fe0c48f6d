// The runtime core on its own, with in-memory fakes: no worker, no D1, no Durable Object.
import { describe, expect, it } from "vitest";
import { createBuiltinToolHost } from "../../../src/runtime/turn/builtin-tools.ts";
import {
  interactionEvaluator,
  type Evaluator,
} from "../../../src/runtime/after-reply/evaluators.ts";
import { transcriptForFallback, FAILOVER_NOTE } from "../../../src/runtime/turn/model-session.ts";
import {
  composeState,
  type Provider,
  type ProviderContext,
} from "../../../src/runtime/context/compose-state.ts";
import { historyProvider } from "../../../src/runtime/context/history-provider.ts";
import { decideByRules } from "../../../src/runtime/turn/respond-decision.ts";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import { createTurnRunner, type TurnRunnerDeps } from "../../../src/runtime/turn/turn-runner.ts";
import { createEventBus } from "../../../src/runtime/util/events.ts";
import { DEFAULT_LIMITS } from "../../../src/runtime/turn/turn-types.ts";
import { placeAllowsTool } from "../../../src/runtime/access/place-policy.ts";
import type { ChatMessage } from "../../../src/runtime/ports/model.ts";
import type { TurnInspection } from "../../../src/runtime/turn/turn-inspection.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

async function deps(
  overrides: Partial<TurnRunnerDeps> = {},
): Promise<TurnRunnerDeps & { memory: FakeMemoryStore }> {
  const memory = new FakeMemoryStore();
  const clock = tickingClock();
  const tools = createBuiltinToolHost({ memory, clock, listAll: async () => [] });
  return {
    model: scriptedModel([textReply("hi")]),
    modelNotConfiguredMessage: "no model",
    models: { primary: "big", fallbacks: [], small: "small" },
    memory,
    tools,
    providers: [historyProvider],
    evaluators: [interactionEvaluator],
    clock,
    events: eventRecorder(),
    tokens: await loadTokenCounter(),
    limits: DEFAULT_LIMITS,
    ...overrides,
  } as TurnRunnerDeps & { memory: FakeMemoryStore };
}

describe("deciding whether to respond", () => {
  const nova = character({
    username: "nova_bot",
    settings: { respond: { mode: "mentions", keywords: ["helper"] } },
  });

  it("always answers REST calls, direct messages and mentions", () => {
    expect(decideByRules(turnInput({ source: "rest" }), nova)).toMatchObject({
      respond: true,
      reason: "rest",
    });
    expect(decideByRules(turnInput({ isDirect: true }), nova)).toMatchObject({ respond: true });
    expect(decideByRules(turnInput({ mentioned: true }), nova)).toMatchObject({ respond: true });
  });

  it("counts the name, the username and keywords as mentions, as whole words only", () => {
    expect(decideByRules(turnInput({ text: "hey Nova, got a sec?" }), nova)).toMatchObject({
      respond: true,
      reason: "mentioned",
    });
    expect(decideByRules(turnInput({ text: "ask the HELPER" }), nova)).toMatchObject({
      respond: true,
    });
    expect(decideByRules(turnInput({ text: "supernova explosions" }), nova)).toMatchObject({
      respond: false,
      reason: "not_mentioned",
    });
  });

  it("ignores other bots unless told otherwise, and follows the mode", () => {
    expect(decideByRules(turnInput({ fromBot: true, isDirect: true }), nova)).toMatchObject({
      respond: false,
      reason: "from_bot",
    });
    expect(
      decideByRules(turnInput(), character({ settings: { respond: { mode: "always" } } })),
    ).toMatchObject({ respond: true });
    expect(
      decideByRules(
        turnInput({ text: "Nova?" }),
        character({ settings: { respond: { mode: "never" } } }),
      ),
    ).toMatchObject({ respond: true });
    expect(decideByRules(turnInput(), character({ settings: { respond: { mode: "llm" } } }))).toBe(
      "ask",
    );
  });

  it("asks SMALL_MODEL only in llm mode, and stays quiet unless it says RESPOND", async () => {
    const model = scriptedModel([textReply("IGNORE", "small")]);
    const d = await deps({ model });
    const runner = createTurnRunner(d);
    const input = turnInput();
    await runner.receive(input);
    const outcome = await runner.respond(
      character({ settings: { respond: { mode: "llm" } } }),
      input,
    );
    expect(outcome.status).toBe("ignored");
    expect(model.requests.map((r) => r.model)).toEqual(["small"]);
    expect(d.memory.memories.filter((m) => m.content.role === "agent")).toHaveLength(0);
  });

  it("does not call any model for a message it was not asked to answer", async () => {
    const model = scriptedModel([]);
    const d = await deps({ model });
    const outcome = await createTurnRunner(d).respond(
      character(),
      turnInput({ text: "just chatting" }),
    );
    expect(outcome).toMatchObject({
      status: "ignored",
      stopReason: "ignored",
      usage: { modelCalls: 0 },
    });
  });
});

describe("a place's settings (a chat server's or channel's)", () => {
  it("respond: over the character's mode; never keeps the agent quiet even when mentioned", () => {
    const quiet = character({ settings: { respond: { mode: "mentions" } } });
    expect(decideByRules(turnInput({ place: { respond: "always" } }), quiet)).toMatchObject({
      respond: true,
      reason: "mode_always",
    });
    const chatty = character({ settings: { respond: { mode: "always" } } });
    expect(
      decideByRules(turnInput({ mentioned: true, place: { respond: "never" } }), chatty),
    ).toMatchObject({ respond: false, reason: "place_never" });
    expect(decideByRules(turnInput({ place: { respond: "mentions" } }), chatty)).toMatchObject({
      respond: false,
      reason: "not_mentioned",
    });
    // A DM has no place to be quiet in.
    expect(
      decideByRules(turnInput({ isDirect: true, place: { respond: "never" } }), chatty),
    ).toMatchObject({ respond: true });
  });

  it("tools: only those allowed there are offered, minus those the member's roles do not allow", async () => {
    const model = scriptedModel([textReply("ok"), textReply("ok"), textReply("ok")]);
    const d = await deps({ model });
    const runner = createTurnRunner(d);
    const offered = () =>
      (model.requests.at(-1)!.tools ?? [])
        .map((tool) => tool.name)
        .sort((a, b) => a.localeCompare(b));
    const all = (await d.tools.list()).map((tool) => tool.name);
    expect(all.length).toBeGreaterThan(2);
    await runner.respond(character(), turnInput({ mentioned: true }));
    expect(offered()).toEqual([...all].sort((a, b) => a.localeCompare(b)));
    const [first, second] = all as [string, string];
    await runner.respond(
      character(),
      turnInput({ mentioned: true, place: { tools: [first, second] } }),
    );
    expect(offered()).toEqual([first, second].sort((a, b) => a.localeCompare(b)));
    await runner.respond(
      character(),
      turnInput({ mentioned: true, place: { tools: [first, second], withheldTools: [second] } }),
    );
    expect(offered()).toEqual([first]);
  });

  it("a server's tools are named together with <server>__*", () => {
    const place = { tools: ["github__*", "remember"], withheldTools: ["github__delete_repo"] };
    expect(placeAllowsTool(place, "github__list_issues")).toBe(true);
    expect(placeAllowsTool(place, "github__delete_repo")).toBe(false);
    expect(placeAllowsTool(place, "githubx__list")).toBe(false);
    expect(placeAllowsTool(place, "remember")).toBe(true);
    expect(placeAllowsTool(place, "web_read")).toBe(false);
    expect(placeAllowsTool(undefined, "web_read")).toBe(true);
  });
});

describe("the one respond decision", () => {
  it("prepares a turn (tools, attachments) only when the rules let it go on, and once", async () => {
    const model = scriptedModel([textReply("IGNORE", "small"), textReply("Hello there.")]);
    const d = await deps({ model });
    const runner = createTurnRunner(d);
    const prepared: string[] = [];
    const prepare = (text: string) => async () => {
      prepared.push(text);
      return { text: `[file for ${text}]`, images: [] };
    };
    const declined = turnInput({ text: "just chatting" });
    const outcome = await runner.respondOrPause(character(), declined, {
      prepare: prepare("declined"),
    });
    expect(outcome).toMatchObject({ status: "ignored", usage: { modelCalls: 0 } });
    // In llm mode the rules ask the small model, which says no: prepared, then ignored.
    const asked = turnInput({ text: "anyone here?" });
    const llm = character({ settings: { respond: { mode: "llm" } } });
    expect(await runner.respondOrPause(llm, asked, { prepare: prepare("asked") })).toMatchObject({
      status: "ignored",
    });
    const mentioned = turnInput({ text: "hi", mentioned: true });
    await runner.respondOrPause(character(), mentioned, { prepare: prepare("mentioned") });
    expect(prepared).toEqual(["asked", "mentioned"]);
    // What prepare read joined the person's message.
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain("[file for mentioned]");
  });
});

describe("state composition", () => {
  const base = async (): Promise<ProviderContext> => ({
    character: character(),
    input: turnInput({ turnId: "now" }),
    memory: new FakeMemoryStore(),
    clock: tickingClock(),
    toolSources: [],
    tokens: await loadTokenCounter(),
    tools: [],
    retrieval: null,
    historyTokens: 50,
    historyFetchLimit: 60,
    signal: new AbortController().signal,
  });

  it("orders sections by position, whatever order providers finish in, and skips a slow one", async () => {
    const slow: Provider = {
      name: "slow",
      position: 0,
      slot: "system",
      get: () => new Promise((resolve) => setTimeout(() => resolve({ text: "late" }), 200)),
    };
    const later: Provider = {
      name: "b",
      position: 20,
      slot: "system",
      get: async () => ({ text: "second" }),
    };
    const first: Provider = {
      name: "a",
      position: 10,
      slot: "system",
      get: () => new Promise((resolve) => setTimeout(() => resolve({ text: "first" }), 5)),
    };
    const events = eventRecorder();
    const state = await composeState([later, slow, first], await base(), {
      timeoutMs: 50,
      events,
      turnId: "t",
    });
    expect(state.sections).toEqual(["first", "second"]);
    expect(events.events).toEqual([
      expect.objectContaining({
        type: "provider_skipped",
        provider: "slow",
        reason: "timed out after 50 ms",
      }),
    ]);
  });

  it("keeps the newest history that fits the token budget, oldest first", async () => {
    const context = await base();
    const store = context.memory as FakeMemoryStore;
    const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");
    for (let i = 0; i < 5; i++) {
      await store.saveMemory({
        id: `m${i}`,
        type: "message",
        agentId: "nova",
        roomId: "room-1",
        userId: "user-1",
        content: { text: `${i}: ${words(8)}`, role: i % 2 ? "agent" : "user" },
        metadata: {},
        createdAt: 1000 + i,
      });
    }
    const result = await historyProvider.get(context);
    const texts = (result?.messages ?? []).map((m) =>
      ("content" in m ? String(m.content) : "").slice(0, 1),
    );
    const perMessage = context.tokens.count(`4: ${words(8)}`);
    expect(texts).toEqual(
      ["4", "3", "2", "1", "0"].slice(0, Math.floor(50 / perMessage)).reverse(),
    );
    expect(texts.length).toBeLessThan(5);
  });
});

describe("failover transcript", () => {
  it("keeps the conversation before the turn and the people's messages, drops the tool chain, adds the note", () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "earlier" },
      { role: "assistant", content: "earlier reply" },
      { role: "user", content: "now" },
      {
        role: "assistant",
        content: null,
        toolCalls: [{ id: "c1", name: "remember", arguments: "{}" }],
      },
      { role: "tool", toolCallId: "c1", content: "ok" },
    ];
    expect(transcriptForFallback(messages, 3)).toEqual([
      ...messages.slice(0, 4),
      { role: "system", content: FAILOVER_NOTE },
    ]);
    expect(transcriptForFallback(messages.slice(0, 4), 3)).toEqual(messages.slice(0, 4));
  });
});

describe("evaluators", () => {
  it("run after the reply, and one failing does not stop the others or fail the turn", async () => {
    const ran: string[] = [];
    const broken: Evaluator = {
      name: "broken",
      shouldRun: () => true,
      run: async () => Promise.reject(new Error("boom")),
    };
    const fine: Evaluator = {
      name: "fine",
      shouldRun: () => true,
      run: async () => void ran.push("fine"),
    };
    const events = eventRecorder();
    const d = await deps({ evaluators: [broken, fine, interactionEvaluator], events });
    const runner = createTurnRunner(d);
    const input = turnInput({ source: "rest" });
    await runner.receive(input);
    const outcome = await runner.respond(character(), input);
    await runner.afterReply(character(), input, outcome);
    expect(ran).toEqual(["fine"]);
    expect(d.memory.memories.map((m) => m.content.role)).toEqual(["user", "agent"]);
    expect(d.memory.interactions).toEqual([
      { agentId: "nova", userId: "user-1", turnId: "turn-1", at: expect.any(Number) },
    ]);
    expect(events.events).toContainEqual(
      expect.objectContaining({ type: "evaluator_failed", evaluator: "broken", reason: "boom" }),
    );
  });

  it("log a failed evaluator as a warning: the reply looked fine, but nothing was remembered", () => {
    const lines: string[] = [];
    const bus = createEventBus({ log: (line) => lines.push(line) });
    const ids = { turnId: "t", agentId: "a", roomId: "r", at: 1 };
    bus.emit({
      type: "evaluator_failed",
      ...ids,
      evaluator: "reflection",
      reason: "404",
      cause: "unknown_model",
    });
    bus.emit({ type: "run_started", ...ids, userId: "u", source: "rest" });
    expect(lines.map((line) => JSON.parse(line).level)).toEqual(["warn", "info"]);
  });
});

describe("the turn inspector's record", () => {
  it("keeps a replied turn's sections with tokens, its model calls and tools, after the reply and not before", async () => {
    const kept: TurnInspection[] = [];
    const system: Provider = {
      name: "character",
      position: 0,
      slot: "system",
      get: async () => ({ text: "You are Nova." }),
    };
    const d = await deps({
      providers: [system, historyProvider],
      inspections: { record: async (inspection) => void kept.push(inspection) },
    });
    const runner = createTurnRunner(d);
    const input = turnInput({ source: "rest", text: "Hello there" });
    await runner.receive(input);
    const outcome = await runner.respond(character(), input);
    expect(kept).toEqual([]);
    await runner.afterReply(character(), input, outcome);
    expect(kept).toHaveLength(1);
    const [record] = kept;
    expect(record).toMatchObject({ turnId: "turn-1", userId: "user-1", resumed: false, tools: [] });
    expect(record!.sections.map(({ name, text }) => [name, text])).toEqual([
      ["character", "You are Nova."],
      ["message", "Hello there"],
    ]);
    for (const section of record!.sections) expect(section.tokens).toBeGreaterThan(0);
    expect(record!.modelCalls).toEqual([
      expect.objectContaining({ model: "big", startMs: expect.any(Number), error: null }),
    ]);
    // Kept once: afterReply again (a replay) records nothing more.
    await runner.afterReply(character(), input, outcome);
    expect(kept).toHaveLength(1);
  });
});

describe("turn deadline", () => {
  it("ends a turn that runs past its time limit with a clear message and a run_timed_out event", async () => {
    const model = scriptedModel([
      (request) =>
        new Promise((_, reject) =>
          request.signal?.addEventListener("abort", () => reject(request.signal?.reason), {
            once: true,
          }),
        ),
    ]);
    const events = eventRecorder();
    const d = await deps({ model, events, limits: { ...DEFAULT_LIMITS, turnTimeoutMs: 30 } });
    const input = turnInput({ source: "rest" });
    const outcome = await createTurnRunner(d).respond(character(), input);
    expect(outcome).toMatchObject({ status: "replied", stopReason: "timeout" });
    expect(outcome.reply?.text).toContain("ran out of time");
    expect(events.events.map((e) => e.type)).toContain("run_timed_out");
  });

  it("answers the same way when the time runs out while the small model decides whether to answer", async () => {
    const model = scriptedModel([
      (request) =>
        new Promise((_, reject) =>
          request.signal?.addEventListener("abort", () => reject(request.signal?.reason), {
            once: true,
          }),
        ),
    ]);
    const events = eventRecorder();
    const d = await deps({ model, events, limits: { ...DEFAULT_LIMITS, turnTimeoutMs: 30 } });
    const llm = character({ settings: { respond: { mode: "llm" } } });
    const outcome = await createTurnRunner(d).respond(llm, turnInput());
    expect(outcome).toMatchObject({ status: "replied", stopReason: "timeout", toolCalls: [] });
    expect(model.requests.map((r) => r.model)).toEqual(["small"]);
    const types = events.events.map((e) => e.type);
    expect(types).toContain("run_timed_out");
    expect(types).not.toContain("run_failed");
  });
});

describe("token counting", () => {
  it("counts a 100,000-character word in pieces (the whole word at once is quadratic), close to the exact count", async () => {
    const { loadTokenCounter, countInPieces, MAX_RUN_CHARS } = await import(
      "../../../src/runtime/util/tokens.ts"
    );
    const counter = await loadTokenCounter();
    const pieces = counter.count("a".repeat(100_000));
    // Compared with the exact count of a shorter run, scaled: "a" x 256 is a fixed number of tokens.
    const perPiece = counter.count("a".repeat(MAX_RUN_CHARS));
    expect(pieces).toBeGreaterThanOrEqual(Math.floor(100_000 / MAX_RUN_CHARS) * perPiece);
    // Ordinary text is counted in one piece, exactly as before.
    const calls: string[] = [];
    countInPieces("Hello there, how are you?", (text) => {
      calls.push(text);
      return 1;
    });
    expect(calls).toEqual(["Hello there, how are you?"]);
    countInPieces(`start ${"b".repeat(600)} end`, (text) => {
      calls.push(text);
      return 1;
    });
    expect(calls.slice(1).join("")).toBe(`start ${"b".repeat(600)} end`);
  });
});
