// The turn inspector (GET /agents/:agentId/turns/:turnId): a replied turn keeps its prompt's
// sections with token counts, the memories used and which search found them, its tool calls and
// each model request's timing. Who sees what: memories only with `memories:read`; the prompt's
// text and the tools' arguments and results only with `memories:read` and without a user prefix
// (the prompt holds the person's facts); a prefix token sees its own users' turns in outline and
// never another user's (404, as if it did not exist).
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runMemoryMaintenance } from "../../src/db/memory/maintenance.ts";
import { api, createTestAgent, json, mintToken, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const quiet = { settings: { memory: { factsEvery: 1000 } } };

interface Inspection {
  turnId: string;
  startedAt: number;
  userId: string;
  content: boolean;
  resumed: boolean;
  sections: { name: string; tokens: number; text?: string }[];
  memories?: {
    id: string;
    type: string;
    text: string;
    provider: string;
    matchedBy: string[] | null;
    score: number | null;
  }[];
  tools: {
    name: string;
    ok: boolean;
    startMs: number | null;
    durationMs: number;
    arguments?: unknown;
    output?: string;
  }[];
  modelCalls: {
    model: string;
    startMs: number;
    durationMs: number;
    inputTokens: number;
    outputTokens: number;
    finishReason: string | null;
  }[];
}

async function inspect(agentId: string, turnId: string, token?: string): Promise<Response> {
  return api("GET", `/agents/${agentId}/turns/${turnId}`, { token });
}

/** The record is written after the reply: wait for it. */
async function kept(agentId: string, turnId: string): Promise<Inspection> {
  let found: Inspection | undefined;
  await vi.waitFor(
    async () => {
      const response = await inspect(agentId, turnId);
      expect(response.status).toBe(200);
      found = await json<Inspection>(response);
    },
    { timeout: 15_000, interval: 50 },
  );
  return found!;
}

/** An agent with a document and a fact about alice, and a turn of alice's that used both and a tool. */
async function turnWithMemoriesAndTool(userId = "acme:alice") {
  const agentId = await createTestAgent(quiet);
  const doc = await api("POST", `/agents/${agentId}/knowledge`, {
    body: { title: "Garden", text: "Tomatoes need six hours of sun every day." },
  });
  expect(doc.status).toBe(201);
  const fact = await api("POST", "/memories", {
    body: { memories: [{ agentId, type: "fact", userId, text: "Alice grows tomatoes" }] },
  });
  expect(fact.status).toBe(201);
  model.script(
    {
      toolCalls: [{ name: "current_time", arguments: { timeZone: "Europe/Paris" } }],
      usage: { promptTokens: 120, completionTokens: 8 },
    },
    { text: "Six hours of sun.", usage: { promptTokens: 150, completionTokens: 6 } },
  );
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId, text: "How much sun do tomatoes need?" },
  });
  expect(response.status).toBe(200);
  const { turnId } = await json<{ turnId: string }>(response);
  return { agentId, turnId };
}

describe("GET /agents/:agentId/turns/:turnId", () => {
  it("shows the admin the whole turn: sections with tokens, memories with their search, tools, model timing", async () => {
    const { agentId, turnId } = await turnWithMemoriesAndTool();
    const turn = await kept(agentId, turnId);
    expect(turn).toMatchObject({ turnId, userId: "acme:alice", content: true, resumed: false });

    const names = turn.sections.map((section) => section.name);
    expect(names).toEqual(expect.arrayContaining(["character", "knowledge", "user-facts"]));
    expect(names.at(-1)).toBe("message");
    for (const section of turn.sections) expect(section.tokens).toBeGreaterThan(0);
    const knowledge = turn.sections.find((section) => section.name === "knowledge")!;
    expect(knowledge.text).toContain("six hours of sun");
    expect(turn.sections.at(-1)!.text).toBe("How much sun do tomatoes need?");

    const fragment = turn.memories!.find((m) => m.type === "fragment")!;
    expect(fragment).toMatchObject({ provider: "knowledge", text: expect.stringContaining("sun") });
    expect(fragment.matchedBy).toContain("text");
    expect(fragment.score).toBeGreaterThan(0);
    expect(turn.memories!.find((m) => m.type === "fact")).toMatchObject({
      provider: "user-facts",
      matchedBy: null,
      score: null,
      text: "Alice grows tomatoes",
    });

    expect(turn.tools).toEqual([
      expect.objectContaining({
        name: "current_time",
        ok: true,
        arguments: { timeZone: "Europe/Paris" },
        output: expect.any(String),
      }),
    ]);
    expect(turn.modelCalls).toHaveLength(2);
    expect(turn.modelCalls[0]).toMatchObject({
      model: "test-primary",
      inputTokens: 120,
      outputTokens: 8,
      finishReason: "tool_calls",
    });
    expect(turn.modelCalls[1]).toMatchObject({ inputTokens: 150, finishReason: "stop" });
    // The tool ran between the two model calls.
    const tool = turn.tools[0]!;
    expect(tool.startMs).toBeGreaterThanOrEqual(turn.modelCalls[0]!.startMs);
    expect(tool.startMs! + tool.durationMs).toBeLessThanOrEqual(turn.modelCalls[1]!.startMs + 1);
  });

  it("leaves the memories out for a token without memories:read", async () => {
    const { agentId, turnId } = await turnWithMemoriesAndTool();
    await kept(agentId, turnId);
    const { token } = await mintToken({ name: "reader", scopes: ["agents:read"] });
    const response = await inspect(agentId, turnId, token);
    expect(response.status).toBe(200);
    const turn = await json<Inspection>(response);
    expect(turn.memories).toBeUndefined();
  });

  it("shows the prompt's text and the tools' arguments and results only with memories:read", async () => {
    const { agentId, turnId } = await turnWithMemoriesAndTool("alice");
    await kept(agentId, turnId);
    // Issue 53: this token gets 403 from GET /memories, so the person's facts in the prompt
    // (the user-facts, history and recall sections) are not its to read here either.
    const reader = await mintToken({ name: "reader", scopes: ["agents:read"] });
    const outline = await inspect(agentId, turnId, reader.token);
    const text = await outline.text();
    expect(outline.status, text).toBe(200);
    expect(text).not.toContain("Alice grows tomatoes");
    expect(text).not.toContain("How much sun do tomatoes need?");
    const turn = JSON.parse(text) as Inspection;
    expect(turn.content).toBe(false);
    expect(turn.sections.map((s) => s.name)).toEqual(
      expect.arrayContaining(["user-facts", "knowledge", "message"]),
    );
    for (const section of turn.sections) {
      expect(section).not.toHaveProperty("text");
      expect(section.tokens).toBeGreaterThan(0);
    }
    expect(turn.tools[0]).not.toHaveProperty("arguments");
    expect(turn.tools[0]).not.toHaveProperty("output");
    expect(turn.tools[0]).toMatchObject({ name: "current_time", ok: true });

    // No prefix and memories:read: the prompt's text and the tools' results are its to read.
    const operator = await mintToken({
      name: "operator",
      scopes: ["agents:read", "memories:read"],
    });
    const whole = await json<Inspection>(await inspect(agentId, turnId, operator.token));
    expect(whole.content).toBe(true);
    expect(whole.sections.find((s) => s.name === "user-facts")!.text).toContain(
      "Alice grows tomatoes",
    );
    expect(whole.sections.find((s) => s.name === "knowledge")!.text).toContain("sun");
    expect(whole.tools[0]!.arguments).toEqual({ timeZone: "Europe/Paris" });
    expect(whole.tools[0]!.output).toEqual(expect.any(String));
  });

  it("shows a prefix token its own user's turn in outline, and another user's not at all", async () => {
    const { agentId, turnId } = await turnWithMemoriesAndTool("acme:alice");
    await kept(agentId, turnId);
    const acme = await mintToken({
      name: "acme",
      scopes: ["agents:read", "memories:read"],
      userPrefix: "acme:",
    });
    const own = await inspect(agentId, turnId, acme.token);
    expect(own.status).toBe(200);
    const turn = await json<Inspection>(own);
    expect(turn.content).toBe(false);
    expect(turn.sections.length).toBeGreaterThan(0);
    for (const section of turn.sections) {
      expect(section.text).toBeUndefined();
      expect(section.tokens).toBeGreaterThan(0);
    }
    expect(turn.tools[0]).not.toHaveProperty("output");
    expect(turn.tools[0]).not.toHaveProperty("arguments");
    expect(turn.tools[0]).toMatchObject({ name: "current_time", ok: true });
    expect(turn.modelCalls).toHaveLength(2);
    // Its own user's fact, and knowledge every user of the agent reads.
    expect(turn.memories!.map((m) => m.type).sort()).toEqual(["fact", "fragment"]);

    const globex = await mintToken({
      name: "globex",
      scopes: ["agents:read", "memories:read"],
      userPrefix: "globex:",
    });
    const other = await inspect(agentId, turnId, globex.token);
    expect(other.status).toBe(404);
    const problem = await json<{ error: { code: string; message: string } }>(other);
    expect(problem.error.code).toBe("not_found");
    expect(problem.error.message).toBe(`no turn "${turnId}" of agent "${agentId}"`);
  });

  it("answers 404 for a turn it never ran", async () => {
    const agentId = await createTestAgent(quiet);
    const response = await inspect(agentId, crypto.randomUUID());
    expect(response.status).toBe(404);
    expect((await json<{ error: { code: string } }>(response)).error.code).toBe("not_found");
  });

  it("keeps a turn 7 days: the hourly upkeep deletes it after, and the route then says so", async () => {
    const { agentId, turnId } = await turnWithMemoriesAndTool("alice");
    const turn = await kept(agentId, turnId);
    const upkeep = (now: number) =>
      runMemoryMaintenance(env, now, { forgetRoomHistory: async () => undefined });
    const DAY_MS = 86_400_000;
    await upkeep(turn.startedAt + 7 * DAY_MS - 60_000);
    expect((await inspect(agentId, turnId)).status).toBe(200);
    const report = await upkeep(turn.startedAt + 7 * DAY_MS + 60_000);
    expect(report.inspectionsDeleted).toBeGreaterThanOrEqual(1);
    const gone = await inspect(agentId, turnId);
    expect(gone.status).toBe(404);
    expect((await json<{ error: { message: string } }>(gone)).error.message).toContain(
      "was not kept for inspection",
    );
  });

  it("says plainly that a turn from before the inspector was not kept", async () => {
    const { agentId, turnId } = await turnWithMemoriesAndTool("alice");
    await kept(agentId, turnId);
    // As a turn replied before turn_inspections existed: its reply is stored, its record is not.
    await env.DB.prepare("DELETE FROM turn_inspections WHERE agent_id = ? AND turn_id = ?")
      .bind(agentId, turnId)
      .run();
    const response = await inspect(agentId, turnId);
    expect(response.status).toBe(404);
    const problem = await json<{ error: { code: string; message: string } }>(response);
    expect(problem.error.message).toContain(`turn "${turnId}" was not kept for inspection`);
    expect(problem.error.message).toContain("7 days");
  });
});
