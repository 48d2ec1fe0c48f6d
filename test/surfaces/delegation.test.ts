// Agents asking agents (ask_agent) through the worker: one journalled turn in the other agent's
// room for the asking conversation (`agent:<caller>:<hash>`), answered once and kept in both
// histories; only the agents a character lists can be asked; cycles and chains deeper than 3 are
// refused with a clear tool error; the callee's tokens count against its own ceiling and the
// caller's, and show in the caller's usage; tool approval applies on the agent whose tool it is;
// an eviction of the callee's room mid-turn is resumed and answered once. The scripted model stand-in answers per agent (by the system prompt).
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { StandInCall, StandInStep } from "../stand-ins/openai-stand-in.ts";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";
import { delegatedRoomOf } from "../../src/runtime/turn/delegation.ts";

const model = useModelStandIn();

/** A fresh agent named `name` (its system prompt says so, which is how the stand-in tells them apart). */
function agent(name: string, settings: Record<string, unknown> = {}): Promise<string> {
  return createTestAgent({
    name,
    system: `You are ${name}.`,
    settings: { memory: { factsEvery: 1000 }, ...settings },
  });
}

function whoIsAsked(call: StandInCall): string {
  const system = call.messages[0];
  const text = typeof system?.content === "string" ? system.content : "";
  return /You are (\w+)\./.exec(text)?.[1] ?? "";
}

/** The tool results the model got in this call, in order. */
function toolResults(call: StandInCall): string[] {
  return call.messages
    .filter((message) => message.role === "tool")
    .map((message) => String(message.content));
}

type Script = Record<string, (call: StandInCall) => StandInStep>;

/** Answers each agent's calls with its own function; anything else gets "ok". */
function perAgent(script: Script): void {
  model.respondWith((call) => script[whoIsAsked(call)]?.(call) ?? { text: "ok" });
}

/** The callee's room for Sam's conversation with `caller` (say() talks as Sam in his room). */
const askingRoom = (caller: string) =>
  delegatedRoomOf(caller, { roomId: "user:sam", userId: "sam" });

const calls = (name: string) => model.calls.filter((call) => whoIsAsked(call) === name);

interface TurnBody {
  reply: { text: string };
  actions: string[];
  toolCalls: { name: string; ok: boolean; output: string; usage?: Record<string, number> }[];
  usage: {
    promptTokens: number;
    completionTokens: number;
    modelCalls: number;
    delegated?: Record<string, number>;
  };
}

async function say(agentId: string, text: string): Promise<TurnBody> {
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "sam", text },
  });
  expect(response.status).toBe(200);
  return json<TurnBody>(response);
}

/** A room's conversation, oldest first (the API pages it newest first). */
async function history(agentId: string, roomId: string) {
  const response = await api("GET", `/agents/${agentId}/rooms/${roomId}/messages`);
  expect(response.status).toBe(200);
  const page = await json<{
    messages: {
      role: string;
      userId: string | null;
      userName: string | null;
      text: string;
      actions?: string[];
    }[];
  }>(response);
  return page.messages.reverse();
}

/** The asker asks `callee` once, then answers with what the tool returned. */
function asks(callee: string, message: string, answer = (result: string) => `Got: ${result}`) {
  return (call: StandInCall): StandInStep => {
    const [result] = toolResults(call);
    if (result === undefined)
      return { toolCalls: [{ name: "ask_agent", arguments: { agentId: callee, message } }] };
    return { text: answer(result) };
  };
}

describe("ask_agent", () => {
  it("answers a delegation once and shows it in both agents' histories", async () => {
    const bob = await agent("Bob");
    const ada = await agent("Ada", { delegates: [bob] });
    perAgent({
      Ada: asks(bob, "What is 6 x 7?", () => "Bob says 42."),
      Bob: () => ({ text: "42." }),
    });
    const turn = await say(ada, "Ask Bob what 6 x 7 is");
    expect(turn.reply.text).toBe("Bob says 42.");
    expect(turn.actions).toEqual(["REPLY", "ask_agent"]);
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({
        name: "ask_agent",
        ok: true,
        output: expect.stringContaining("42."),
      }),
    ]);
    expect(calls("Bob")).toHaveLength(1);

    // The callee's room for this conversation of the caller, also its user.
    const room = await askingRoom(ada);
    expect(await history(bob, room)).toEqual([
      expect.objectContaining({
        role: "user",
        userId: room,
        userName: "Ada",
        text: "What is 6 x 7?",
      }),
      expect.objectContaining({ role: "agent", text: "42." }),
    ]);
    expect(await history(ada, "user:sam")).toEqual([
      expect.objectContaining({ role: "user", text: "Ask Bob what 6 x 7 is" }),
      expect.objectContaining({
        role: "agent",
        text: "Bob says 42.",
        actions: ["REPLY", "ask_agent"],
      }),
    ]);
  });

  it("offers ask_agent only to an agent with delegates, and only for the agents it lists", async () => {
    const bob = await agent("Bob");
    const eve = await agent("Eve");
    const loner = await agent("Lone");
    perAgent({ Lone: () => ({ text: "Alone." }) });
    await say(loner, "Anyone to ask?");
    const offered = (call: StandInCall) => (call.tools ?? []).map((tool) => JSON.stringify(tool));
    expect(offered(calls("Lone")[0]!).some((tool) => tool.includes("ask_agent"))).toBe(false);

    const ada = await agent("Ada", { delegates: [bob] });
    perAgent({ Ada: asks(eve, "Hello Eve?"), Eve: () => ({ text: "I should not be reached." }) });
    const turn = await say(ada, "Ask Eve");
    const tool = offered(calls("Ada")[0]!).find((entry) => entry.includes("ask_agent"))!;
    expect(JSON.parse(tool)).toMatchObject({
      function: { parameters: { properties: { agentId: { enum: [bob] } } } },
    });
    expect(turn.toolCalls[0]).toMatchObject({ name: "ask_agent", ok: false });
    expect(turn.toolCalls[0]!.output).toContain("invalid arguments for ask_agent");
    expect(calls("Eve")).toHaveLength(0);
  });

  it("refuses a cycle A -> B -> A with a clear tool error", async () => {
    const bobId = `agent-bob-${crypto.randomUUID().slice(0, 8)}`;
    const ada = await agent("Ada", { delegates: [bobId] });
    const bob = bobId;
    await createTestAgent({
      id: bobId,
      name: "Bob",
      system: "You are Bob.",
      settings: { memory: { factsEvery: 1000 }, delegates: [ada] },
    });
    perAgent({
      Ada: asks(bob, "Can you help?", (result) => `Bob said: ${result}`),
      Bob: asks(ada, "Can you help me help you?", () => "I cannot ask Ada back."),
    });
    const turn = await say(ada, "Get help from Bob");
    expect(turn.toolCalls[0]).toMatchObject({ ok: true });
    expect(calls("Ada")).toHaveLength(2);
    const bobSecond = calls("Bob")[1]!;
    expect(toolResults(bobSecond)[0]).toContain(
      `asking agent "${ada}" would loop back (${ada} -> ${bob} -> ${ada})`,
    );
  });

  it("stops a chain deeper than three agents with a clear message", async () => {
    const names = ["Ann", "Ben", "Cal", "Dee", "Eli"];
    const ids = names.map(
      (name) => `agent-${name.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}`,
    );
    for (const [i, name] of names.entries()) {
      await createTestAgent({
        id: ids[i],
        name,
        system: `You are ${name}.`,
        settings: {
          memory: { factsEvery: 1000 },
          ...(ids[i + 1] ? { delegates: [ids[i + 1]] } : {}),
        },
      });
    }
    perAgent(
      Object.fromEntries(
        names.map((name, i) => [
          name,
          asks(ids[i + 1] ?? "", `${name} asks`, (r) => `${name}: ${r.slice(-160)}`),
        ]),
      ),
    );
    const turn = await say(ids[0]!, "Pass it down the line");
    expect(turn.toolCalls[0]).toMatchObject({ name: "ask_agent", ok: true });
    expect(calls("Eli")).toHaveLength(0);
    expect(toolResults(calls("Dee")[1]!)[0]).toContain(
      `the delegation depth limit of 3 is reached (${ids.slice(0, 4).join(" -> ")})`,
    );
  });

  it("counts the callee's tokens against its own ceiling and the caller's, and reports them in the caller's usage", async () => {
    const bob = await agent("Bob", { dailyTokens: 300 });
    const ada = await agent("Ada", { delegates: [bob] });
    const usage = { promptTokens: 100, completionTokens: 10 };
    perAgent({
      Ada: (call) => ({ ...asks(bob, "Count to three")(call), usage }),
      Bob: () => ({ text: "One, two, three.", usage: { promptTokens: 300, completionTokens: 30 } }),
    });
    const turn = await say(ada, "Have Bob count");
    expect(turn.usage).toEqual({
      promptTokens: 200,
      completionTokens: 20,
      modelCalls: 2,
      delegated: { promptTokens: 300, completionTokens: 30, modelCalls: 1 },
    });
    expect(turn.toolCalls[0]!.usage).toEqual({
      promptTokens: 300,
      completionTokens: 30,
      modelCalls: 1,
    });
    const spent = (agentId: string) =>
      env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
        .bind(agentId)
        .first<{ tokens: number }>();
    await vi.waitFor(async () => {
      expect((await spent(bob))?.tokens).toBe(330);
      // Ada's own 220 and what Bob spent for her, 330: asking never spends past her own ceiling.
      expect((await spent(ada))?.tokens).toBe(550);
    });

    // Bob's ceiling is spent: the next ask fails on Bob's side, and Ada is told so.
    const again = await say(ada, "Have Bob count again");
    expect(again.toolCalls[0]).toMatchObject({ name: "ask_agent", ok: false });
    expect(again.toolCalls[0]!.output).toContain(`agent "${bob}" could not answer (rate_limited)`);
    expect(calls("Bob")).toHaveLength(1);
  });

  it("applies tool approval on the agent whose tool it is: refused where nobody can be asked", async () => {
    const bob = await agent("Bob", { toolApproval: ["current_time"] });
    const ada = await agent("Ada", { delegates: [bob] });
    perAgent({
      Ada: asks(bob, "What time is it?"),
      Bob: (call) =>
        toolResults(call).length === 0
          ? { toolCalls: [{ name: "current_time", arguments: {} }] }
          : { text: "I may not look at the clock." },
    });
    const turn = await say(ada, "Ask Bob the time");
    expect(turn.reply.text).toContain("I may not look at the clock.");
    expect(toolResults(calls("Bob")[1]!)[0]).toContain("current_time needs a person's approval");

    // The caller's own gate: ask_agent itself gated on Ada, over REST where nobody can be asked.
    const gated = await agent("Gia", { delegates: [bob], toolApproval: ["ask_agent"] });
    perAgent({ Gia: asks(bob, "Hello?"), Bob: () => ({ text: "unreached" }) });
    const refused = await say(gated, "Ask Bob");
    expect(refused.toolCalls[0]).toMatchObject({ name: "ask_agent", ok: false });
    expect(calls("Bob")).toHaveLength(2);
  });

  it("resumes the callee's turn after its room is evicted mid-delegation, and answers once", async () => {
    const bob = await agent("Bob");
    const ada = await agent("Ada", { delegates: [bob] });
    let state: DurableObjectState | undefined;
    await runInDurableObject(
      env.ROOMS.getByName(`${bob}:${await askingRoom(ada)}`),
      (_instance, captured) => {
        state = captured;
      },
    );
    let evicted = false;
    perAgent({
      Ada: asks(bob, "What is 6 x 7?", (result) => `Bob: ${result.includes("42") ? "42" : "?"}`),
      Bob: () => {
        if (!evicted) {
          evicted = true;
          state!.abort("simulated eviction mid-delegation");
          return { hang: true };
        }
        return { text: "42." };
      },
    });
    const turn = await say(ada, "Ask Bob");
    expect(evicted).toBe(true);
    expect(turn.reply.text).toBe("Bob: 42");
    expect(turn.toolCalls).toEqual([expect.objectContaining({ name: "ask_agent", ok: true })]);
    // The interrupted turn was resumed from the journal: one question, one answer.
    expect(await history(bob, await askingRoom(ada))).toEqual([
      expect.objectContaining({ role: "user", text: "What is 6 x 7?" }),
      expect.objectContaining({ role: "agent", text: "42." }),
    ]);
    expect(calls("Bob")).toHaveLength(2);
  });
});
