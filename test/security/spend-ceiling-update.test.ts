// Attack (issue 38, hole 6): an agent's daily token ceiling (`settings.dailyTokens`) was raised
// with PUT /agents/:agentId, yet its room kept refusing turns with 429 at the old ceiling until a
// restart: the room's copy of the character answered the budget check before the version check
// could say the copy was stale. A PUT that changes the ceiling now applies to the next turn, both
// ways: raised, the next turn runs; lowered, the next turn is refused before the model is asked.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

interface Problem {
  error: { code: string; message: string };
}

const model = useModelStandIn();

const character = (dailyTokens: number) => ({
  name: "Testa",
  bio: ["A test agent."],
  system: "You are Testa, a test agent.",
  settings: { dailyTokens, memory: { factsEvery: 1000 } },
});

async function spentToday(agentId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
    .bind(agentId)
    .first<{ tokens: number }>();
  return row?.tokens ?? 0;
}

async function say(agentId: string, text: string): Promise<Response> {
  return api("POST", `/agents/${agentId}/messages`, { body: { userId: "cy", text } });
}

/** Reading the history waits for the room's after-reply work, where the spend is counted. */
async function settled(agentId: string): Promise<void> {
  await api("GET", `/agents/${agentId}/rooms/user:cy/messages`);
}

async function replaceCharacter(agentId: string, dailyTokens: number): Promise<void> {
  const response = await api("PUT", `/agents/${agentId}`, { body: character(dailyTokens) });
  expect(response.status).toBe(200);
}

describe("a changed daily token ceiling (settings.dailyTokens)", () => {
  it("applies a raised ceiling to the next turn of a room that hit the old one", async () => {
    const agentId = await createTestAgent({ settings: character(100).settings });
    model.script({ text: "first answer", usage: { promptTokens: 90, completionTokens: 30 } });
    expect((await say(agentId, "one")).status).toBe(200);
    await settled(agentId);
    expect(await spentToday(agentId)).toBe(120);

    // The room is warm and its copy of the character says 100: refused.
    const refused = await say(agentId, "two");
    expect(refused.status).toBe(429);
    expect((await json<Problem>(refused)).error.message).toContain("120 of 100 tokens");

    await replaceCharacter(agentId, 10_000);
    const calls = model.calls.length;
    model.script({ text: "second answer", usage: { promptTokens: 10, completionTokens: 5 } });
    const answered = await say(agentId, "three");
    expect(answered.status).toBe(200);
    expect(model.calls.length).toBe(calls + 1);
    await settled(agentId);
    expect(await spentToday(agentId)).toBe(135);
  });

  it("refuses the next turn once the ceiling is lowered below the day's spend", async () => {
    const agentId = await createTestAgent({ settings: character(10_000).settings });
    model.script({ text: "first answer", usage: { promptTokens: 90, completionTokens: 30 } });
    expect((await say(agentId, "one")).status).toBe(200);
    await settled(agentId);

    await replaceCharacter(agentId, 100);
    const calls = model.calls.length;
    const refused = await say(agentId, "two");
    expect(refused.status).toBe(429);
    expect((await json<Problem>(refused)).error.message).toContain("120 of 100 tokens");
    expect(model.calls.length).toBe(calls);
  });
});
