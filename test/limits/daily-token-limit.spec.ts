// Runs in the `limits` project, where DAILY_TOKEN_LIMIT is 200,000 tokens per agent and UTC day.
// The daily ceiling (src/runtime/turn/spend.ts) refuses a turn once the day's spend has reached it,
// reaching included: spend equal to the ceiling is refused, one token under it is not. The ceiling
// is DAILY_TOKEN_LIMIT unless the character's settings.dailyTokens sets its own, lower or higher.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, json, useModelStandIn } from "../helpers/api.ts";

interface Problem {
  error: { code: string; message: string; details?: { retryAfterSeconds?: number } };
}

const model = useModelStandIn();
const LIMIT = Number(env.DAILY_TOKEN_LIMIT);
let token: string | undefined;
let turns = 0;

/** A token of its own, so this file's requests stay clear of the project's 30/min admin bucket. */
async function apiToken(): Promise<string> {
  if (token) return token;
  const minted = await api("POST", "/auth/tokens", {
    body: { name: "daily-limit", scopes: ["admin"], rateLimit: "1000/min" },
  });
  expect(minted.status).toBe(201);
  token = (await json<{ token: string }>(minted)).token;
  return token;
}

async function agent(settings: Record<string, unknown> = {}): Promise<string> {
  const id = `spender-${Date.now().toString(36)}-${++turns}`;
  const response = await api("POST", "/agents", {
    token: await apiToken(),
    body: {
      id,
      name: "Spender",
      bio: ["x"],
      settings: { memory: { factsEvery: 1000 }, ...settings },
    },
  });
  expect(response.status).toBe(201);
  return id;
}

/** A turn by a new user each time (the per-user limit is 3 a minute here). */
async function turn(agentId: string): Promise<Response> {
  const userId = `payer-${++turns}`;
  const response = await api("POST", `/agents/${agentId}/messages`, {
    token: await apiToken(),
    body: { userId, text: "Tell me something." },
  });
  // Reading the history waits for the room's after-reply work, where the spend is counted.
  if (response.status === 200)
    await api("GET", `/agents/${agentId}/rooms/user:${userId}/messages`, {
      token: await apiToken(),
    });
  return response;
}

/** One turn whose model call reports exactly `tokens` (prompt and completion together). */
async function spend(agentId: string, tokens: number): Promise<void> {
  model.script({ text: "ok", usage: { promptTokens: tokens - 1, completionTokens: 1 } });
  expect((await turn(agentId)).status).toBe(200);
}

async function spentToday(agentId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
    .bind(agentId)
    .first<{ tokens: number }>();
  return row?.tokens ?? 0;
}

async function expectRefusedAt(agentId: string, spent: number, ceiling: number): Promise<void> {
  const calls = model.calls.length;
  const refused = await turn(agentId);
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  const problem = await json<Problem>(refused);
  expect(problem.error.code).toBe("rate_limited");
  expect(problem.error.message).toContain(
    `has used its daily model budget (${spent} of ${ceiling} tokens today, UTC)`,
  );
  expect(model.calls.length, "the model was asked anyway").toBe(calls);
}

describe("the worker-wide daily token ceiling (DAILY_TOKEN_LIMIT)", () => {
  it("is set in this project", () => {
    expect(LIMIT).toBe(200_000);
  });

  it("lets a turn through one token under the ceiling and refuses the next at exactly the ceiling", async () => {
    const agentId = await agent();
    await spend(agentId, LIMIT - 1);
    expect(await spentToday(agentId)).toBe(LIMIT - 1);
    // One token under: still admitted. This turn spends the last token.
    await spend(agentId, 1);
    expect(await spentToday(agentId)).toBe(LIMIT);
    await expectRefusedAt(agentId, LIMIT, LIMIT);
  });

  it("is per agent: another agent of the same worker still answers", async () => {
    const spent = await agent();
    await spend(spent, LIMIT);
    await expectRefusedAt(spent, LIMIT, LIMIT);
    const fresh = await agent();
    model.script({ text: "still here" });
    expect((await turn(fresh)).status).toBe(200);
  });
});

describe("an agent's own ceiling (settings.dailyTokens)", () => {
  it("a lower one refuses at exactly its own ceiling, long before DAILY_TOKEN_LIMIT", async () => {
    const agentId = await agent({ dailyTokens: 500 });
    await spend(agentId, 499);
    await spend(agentId, 1);
    expect(await spentToday(agentId)).toBe(500);
    await expectRefusedAt(agentId, 500, 500);
  });

  it("a higher one lets the agent spend past DAILY_TOKEN_LIMIT, up to its own", async () => {
    const agentId = await agent({ dailyTokens: LIMIT + 1_000 });
    await spend(agentId, LIMIT);
    await spend(agentId, 999);
    await spend(agentId, 1);
    await expectRefusedAt(agentId, LIMIT + 1_000, LIMIT + 1_000);
  });
});
