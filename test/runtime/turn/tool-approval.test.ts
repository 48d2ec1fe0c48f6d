// Tool approval in the runtime core: a call to a tool the character marks as needing approval
// pauses the turn with a plain-data checkpoint, and the turn resumes from it with the person's
// decision. No worker or Durable Object here; the Discord side is in discord-approval.test.ts.
import { describe, expect, it } from "vitest";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import { createTurnRunner, type TurnRunnerDeps } from "../../../src/runtime/turn/turn-runner.ts";
import {
  DEFAULT_LIMITS,
  type TurnOutcome,
  type TurnPause,
} from "../../../src/runtime/turn/turn-types.ts";
import type { ChatRequest, ChatResponse, ToolCall } from "../../../src/runtime/ports/model.ts";
import type { ToolDefinition, ToolHost } from "../../../src/runtime/ports/tools.ts";
import {
  character,
  eventRecorder,
  FakeMemoryStore,
  scriptedModel,
  textReply,
  tickingClock,
  turnInput,
} from "../../helpers/fakes.ts";

const SEND_EMAIL: ToolDefinition = {
  name: "send_email",
  description: "Sends an email.",
  source: "test",
  parameters: {
    type: "object",
    properties: { to: { type: "string" }, body: { type: "string" } },
    required: ["to", "body"],
    additionalProperties: false,
  },
};
const LOOKUP: ToolDefinition = {
  name: "lookup",
  description: "Looks a name up.",
  source: "test",
  parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
};

function recordingHost(): ToolHost & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    list: async () => [SEND_EMAIL, LOOKUP],
    call: async (name, args) => {
      calls.push(`${name} ${JSON.stringify(args)}`);
      return { ok: true, content: name === "lookup" ? "sam@example.com" : "sent" };
    },
  };
}

function callsReply(calls: Array<[name: string, args: unknown]>, model = "m"): ChatResponse {
  const toolCalls: ToolCall[] = calls.map(([name, args], i) => ({
    id: `call_${name}_${i}`,
    name,
    arguments: typeof args === "string" ? args : JSON.stringify(args),
  }));
  return {
    model,
    text: null,
    toolCalls,
    usage: { promptTokens: 20, completionTokens: 5 },
    finishReason: "tool_calls",
  };
}

/** The text of the last tool message the model saw in a request. */
function lastToolResult(request: ChatRequest): string {
  const tools = request.messages.filter((message) => message.role === "tool");
  return tools.at(-1)?.content ?? "";
}

/** A message addressed to the agent (Discord's /chat is always answered). */
const ask = (overrides: Parameters<typeof turnInput>[0] = {}) =>
  turnInput({ mentioned: true, ...overrides });

const guarded = character({ settings: { toolApproval: ["send_email"] } });

async function setup(replies: Parameters<typeof scriptedModel>[0]) {
  const host = recordingHost();
  const model = scriptedModel(replies);
  const events = eventRecorder();
  const deps: TurnRunnerDeps = {
    model,
    modelNotConfiguredMessage: "no model",
    models: { primary: "m", fallbacks: [], small: "s" },
    memory: new FakeMemoryStore(),
    tools: host,
    providers: [],
    evaluators: [],
    clock: tickingClock(),
    events,
    tokens: await loadTokenCounter(),
    limits: DEFAULT_LIMITS,
  };
  return { host, model, events, runner: createTurnRunner(deps) };
}

/** What the room does: the checkpoint goes through JSON (the journal) before the turn resumes. */
function journalled(pause: TurnOutcome | TurnPause): TurnPause {
  expect(pause.status).toBe("awaiting_approval");
  return JSON.parse(JSON.stringify(pause)) as TurnPause;
}

describe("tool approval in the turn loop", () => {
  it("pauses before the tool runs, and an approval runs it exactly once and finishes the turn", async () => {
    const { host, model, events, runner } = await setup([
      callsReply([["send_email", { to: "sam@example.com", body: "hi" }]]),
      textReply("Sent it."),
    ]);
    const input = ask({ text: "email Sam" });
    const pause = journalled(await runner.respondOrPause(guarded, input, { canAskApproval: true }));
    expect(pause).toMatchObject({
      tool: "send_email",
      arguments: { to: "sam@example.com", body: "hi" },
    });
    expect(pause.checkpoint).toMatchObject({
      step: 1,
      modelIndex: 0,
      usage: { modelCalls: 1, promptTokens: 20 },
    });
    expect(host.calls).toEqual([]);
    expect(events.events.map((event) => event.type)).toContain("tool_approval_requested");

    // What the prompt held from memory travels with the checkpoint, so the reply after the click still lists it.
    expect(pause.checkpoint.memories).toEqual([]);
    const remembered = [
      { id: "fact-1", type: "fact" as const, text: "Sam prefers email", score: null },
    ];
    const checkpoint = { ...pause.checkpoint, memories: remembered };
    const outcome = (await runner.respondOrPause(guarded, input, {
      canAskApproval: true,
      resume: { checkpoint, decision: "approved" },
    })) as TurnOutcome;
    expect(outcome.status).toBe("replied");
    expect(outcome.memories).toEqual(remembered);
    expect(outcome.reply?.text).toBe("Sent it.");
    expect(host.calls).toEqual(['send_email {"to":"sam@example.com","body":"hi"}']);
    expect(outcome.toolCalls).toEqual([
      expect.objectContaining({ name: "send_email", ok: true, approval: "approved" }),
    ]);
    // Usage spans both halves of the turn.
    expect(outcome.usage).toMatchObject({ modelCalls: 2, promptTokens: 30 });
    expect(outcome.actions).toEqual(["REPLY", "send_email"]);
    // The resumed model call carries the whole transcript: the call and its result.
    expect(lastToolResult(model.requests[1]!)).toBe("sent");
  });

  it("tells the model a denial, and the tool never runs", async () => {
    const { host, model, runner } = await setup([
      callsReply([["send_email", { to: "a@b.c", body: "x" }]]),
      textReply("Okay, I won't send it."),
    ]);
    const input = ask();
    const pause = journalled(await runner.respondOrPause(guarded, input, { canAskApproval: true }));
    const outcome = (await runner.respondOrPause(guarded, input, {
      canAskApproval: true,
      resume: { checkpoint: pause.checkpoint, decision: "denied" },
    })) as TurnOutcome;
    expect(host.calls).toEqual([]);
    expect(lastToolResult(model.requests[1]!)).toMatch(
      /^Error: the user denied permission to run send_email/,
    );
    expect(outcome.toolCalls[0]).toMatchObject({ ok: false, approval: "denied" });
    expect(outcome.reply?.text).toBe("Okay, I won't send it.");
  });

  it("tells the model when nobody answered in time", async () => {
    const { host, model, runner } = await setup([
      callsReply([["send_email", { to: "a@b.c", body: "x" }]]),
      textReply("It needs your approval."),
    ]);
    const input = ask();
    const pause = journalled(await runner.respondOrPause(guarded, input, { canAskApproval: true }));
    await runner.respondOrPause(guarded, input, {
      canAskApproval: true,
      resume: { checkpoint: pause.checkpoint, decision: "expired" },
    });
    expect(host.calls).toEqual([]);
    expect(lastToolResult(model.requests[1]!)).toMatch(
      /nobody approved send_email within the time allowed/,
    );
  });

  it("runs the calls before the guarded one once, and pauses again for a second guarded call", async () => {
    const { host, runner } = await setup([
      callsReply([
        ["lookup", { name: "Sam" }],
        ["send_email", { to: "sam@example.com", body: "one" }],
        ["send_email", { to: "sam@example.com", body: "two" }],
      ]),
      textReply("Both sent."),
    ]);
    const input = ask();
    const first = journalled(await runner.respondOrPause(guarded, input, { canAskApproval: true }));
    expect(first.arguments).toEqual({ to: "sam@example.com", body: "one" });
    expect(host.calls).toEqual(['lookup {"name":"Sam"}']);

    const second = journalled(
      await runner.respondOrPause(guarded, input, {
        canAskApproval: true,
        resume: { checkpoint: first.checkpoint, decision: "approved" },
      }),
    );
    expect(second.arguments).toEqual({ to: "sam@example.com", body: "two" });
    expect(second.checkpoint.records.map((record) => record.name)).toEqual([
      "lookup",
      "send_email",
    ]);

    const outcome = (await runner.respondOrPause(guarded, input, {
      canAskApproval: true,
      resume: { checkpoint: second.checkpoint, decision: "denied" },
    })) as TurnOutcome;
    expect(host.calls).toEqual([
      'lookup {"name":"Sam"}',
      'send_email {"to":"sam@example.com","body":"one"}',
    ]);
    expect(
      outcome.toolCalls.map((record) => [record.name, record.ok, record.approval ?? null]),
    ).toEqual([
      ["lookup", true, null],
      ["send_email", true, "approved"],
      ["send_email", false, "denied"],
    ]);
  });

  it("does not ask anyone about a call with invalid arguments: the model gets the error", async () => {
    const { host, model, runner } = await setup([
      callsReply([["send_email", { to: 42 }]]),
      textReply("Let me fix that."),
    ]);
    const outcome = await runner.respondOrPause(guarded, ask(), { canAskApproval: true });
    expect(outcome.status).toBe("replied");
    expect(host.calls).toEqual([]);
    expect(lastToolResult(model.requests[1]!)).toMatch(/^Error: invalid arguments for send_email/);
  });

  it("refuses the tool where nobody can be asked (REST), without pausing", async () => {
    const { host, model, runner } = await setup([
      callsReply([["send_email", { to: "a@b.c", body: "x" }]]),
      textReply("I can't send email here."),
    ]);
    const outcome = await runner.respond(guarded, ask({ source: "rest" }));
    expect(outcome.reply?.text).toBe("I can't send email here.");
    expect(host.calls).toEqual([]);
    expect(lastToolResult(model.requests[1]!)).toMatch(
      /needs a person's approval before it runs, and this conversation cannot ask for it/,
    );
  });

  it("leaves tools that need no approval alone", async () => {
    const { host, runner } = await setup([
      callsReply([["lookup", { name: "Sam" }]]),
      textReply("Found."),
    ]);
    const outcome = await runner.respondOrPause(guarded, ask(), { canAskApproval: true });
    expect(outcome.status).toBe("replied");
    expect(host.calls).toEqual(['lookup {"name":"Sam"}']);
  });
});
