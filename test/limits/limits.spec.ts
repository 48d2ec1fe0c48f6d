// Runs in the `limits` project: RATE_LIMIT_PER_TOKEN=30/min, RATE_LIMIT_PER_USER=3/min. Rate limits
// per API token and per end user answer 429 with Retry-After and store nothing; requests are
// admitted from the isolate's copy of a bucket and charged to the exact one after. The per-agent
// daily model budget refuses turns once spent, with Retry-After pointing at the next UTC midnight.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { chat, command, post, useAgentIn, useDiscordStandIns } from "../helpers/discord.ts";
import type { Env } from "../../src/env.ts";
import { enforceRate, resetRateCopies } from "../../src/rate-limits/admission.ts";
import type { BucketState, RateRule } from "../../src/rate-limits/token-bucket.ts";

interface Problem {
  error: { code: string; message: string; details?: { retryAfterSeconds?: number } };
}

const { model, discord } = useDiscordStandIns();

async function storedUserMessages(agentId: string): Promise<string[]> {
  const rows = await env.DB.prepare(
    "SELECT content FROM memories WHERE agent_id = ? AND type = 'message' ORDER BY created_at",
  )
    .bind(agentId)
    .all<{ content: string }>();
  return rows.results
    .map((row) => JSON.parse(row.content) as { text: string; role: string })
    .filter((c) => c.role === "user")
    .map((c) => c.text);
}

describe("rate limits", () => {
  it("limits each API token to its own bucket, with 429 and Retry-After", async () => {
    const mint = async (rateLimit?: string) =>
      json<{ token: string }>(
        await api("POST", "/auth/tokens", {
          body: { name: "limited", scopes: ["agents:read"], ...(rateLimit ? { rateLimit } : {}) },
        }),
      );
    const tight = await mint("3/min");
    const other = await mint("3/min");
    for (let i = 0; i < 3; i += 1)
      expect((await api("GET", "/agents", { token: tight.token })).status).toBe(200);
    const refused = await api("GET", "/agents", { token: tight.token });
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get("retry-after"));
    // 3 a minute: one request comes back every 20 s.
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    const problem = await json<Problem>(refused);
    expect(problem.error.code).toBe("rate_limited");
    expect(problem.error.details?.retryAfterSeconds).toBe(retryAfter);
    expect((await api("GET", "/agents", { token: other.token })).status).toBe(200);
    expect(
      (
        await api("POST", "/auth/tokens", {
          body: { name: "x", scopes: ["agents:read"], rateLimit: "lots" },
        })
      ).status,
    ).toBe(400);
  });

  it("limits each REST end user to RATE_LIMIT_PER_USER turns, and stores nothing for a refused one", async () => {
    const agentId = await createTestAgent();
    for (let i = 1; i <= 3; i += 1) {
      expect(
        (
          await api("POST", `/agents/${agentId}/messages`, {
            body: { userId: "ann", text: `message ${i}` },
          })
        ).status,
      ).toBe(200);
    }
    const refused = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "ann", text: "message 4" },
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await json<Problem>(refused)).error.message).toContain('user "ann"');
    expect(
      (await api("POST", `/agents/${agentId}/messages`, { body: { userId: "bob", text: "hello" } }))
        .status,
    ).toBe(200);
    expect(await storedUserMessages(agentId)).toEqual([
      "message 1",
      "message 2",
      "message 3",
      "hello",
    ]);
  });

  it("admits from the isolate's copy of a bucket, charges the exact bucket after, and refuses once another isolate's spending shows", async () => {
    const agentId = await createTestAgent();
    const key = `user:rest:${agentId}:gus`;
    const rule = { capacity: 3, refillPerSecond: 3 / 60 };
    const bucket = () =>
      runInDurableObject(env.LIMITS.getByName(key), (_instance, state) =>
        state.storage.kv.get<{ tokens: number }>("bucket"),
      );
    const say = (text: string) =>
      api("POST", `/agents/${agentId}/messages`, { body: { userId: "gus", text } });
    // Other isolates already spent the whole bucket and one more; this isolate has not heard yet.
    await env.LIMITS.getByName(key).charge(rule, 4);
    expect((await say("admitted on this isolate's copy")).status).toBe(200);
    // Its charge came back with the bucket in debt: the copy now knows, so the next one waits.
    await vi.waitFor(async () => expect((await bucket())?.tokens).toBeLessThanOrEqual(-1.9));
    const refused = await say("refused");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(40);
    expect(await storedUserMessages(agentId)).toEqual(["admitted on this isolate's copy"]);
  });

  it("keeps one charge per key in flight, charging what was admitted meanwhile with the next one", async () => {
    resetRateCopies();
    // A limiter that answers when told to, so the test sees what is in flight.
    const sent: number[] = [];
    const answer: Array<() => void> = [];
    let tokens = 10;
    let down = false;
    const limiter = {
      charge: (_rule: RateRule, cost: number) => {
        if (down) return Promise.reject(new Error("limiter unreachable"));
        sent.push(cost);
        return new Promise<BucketState>((resolve) =>
          answer.push(() => {
            tokens -= cost;
            resolve({ tokens, updatedAt: Date.now() });
          }),
        );
      },
    };
    const fakeEnv = { LIMITS: { getByName: () => limiter } } as unknown as Env;
    const rule = { capacity: 10, refillPerSecond: 0.0001 };
    const kept: Array<Promise<unknown>> = [];
    const admit = () => enforceRate(fakeEnv, "token:t", rule, "token", (work) => kept.push(work));
    // Three in one tick: one charge of 3.
    await Promise.all([admit(), admit(), admit()]);
    await vi.waitFor(() => expect(sent).toEqual([3]));
    // Two more while it travels: not sent until it is answered, then together.
    await admit();
    await admit();
    expect(sent).toEqual([3]);
    answer.shift()!();
    await vi.waitFor(() => expect(sent).toEqual([3, 2]));
    answer.shift()!();
    await Promise.all(kept);
    expect(tokens).toBe(5);
    // Nothing is left in flight: the next request starts a charge of its own, and an unreachable
    // limiter lets requests through without losing track of the next charge.
    down = true;
    await admit();
    await Promise.all(kept);
    down = false;
    await Promise.all([admit(), admit(), admit()]);
    await vi.waitFor(() => expect(sent).toEqual([3, 2, 3]));
    answer.shift()!();
    await Promise.all(kept);
    // The limiter's answer replaces the copy: 10 - 5 - 3 = 2 left (the lost charge let one through
    // uncounted), so two more, then 429.
    await Promise.all([admit(), admit()]);
    await expect(admit()).rejects.toMatchObject({ status: 429 });
    await vi.waitFor(() => expect(sent).toEqual([3, 2, 3, 2]));
    answer.shift()!();
    await Promise.all(kept);
    expect(tokens).toBe(0);
  });

  it("tells a Discord user who chats too fast, privately, without starting a turn", async () => {
    const channel = "810000000000000001";
    await useAgentIn(channel);
    const user = "710000000000000001";
    for (let i = 1; i <= 3; i += 1) {
      const response = await post(chat(channel, `hi ${i}`, { user }));
      expect((await json<{ type: number }>(response)).type).toBe(5);
    }
    const refused = await json<{ type: number; data: { content: string; flags: number } }>(
      await post(chat(channel, "hi 4", { user })),
    );
    expect(refused.type).toBe(4);
    expect(refused.data.flags & 64).toBe(64);
    expect(refused.data.content).toMatch(/faster than I can answer; try again in \d+ s/);
    // The three admitted turns answer in the background: waited for here, so none of them takes
    // a later test's scripted model answer.
    await discord.waitForCalls(3);
  });

  it("draws /remember, /recall and /tools from the same per-user bucket, and stores nothing for a refused /remember", async () => {
    const channel = "810000000000000002";
    const agentId = await useAgentIn(channel);
    const user = "710000000000000002";
    const fact = (text: string) => [{ name: "fact", type: 3, value: text }];
    const answers: Array<{ type: number; data: { content: string; flags: number } }> = [];
    for (const body of [
      command("remember", { channel, user, options: fact("I like tea") }),
      command("recall", { channel, user }),
      command("tools", { channel, user }),
    ]) {
      answers.push(await json(await post(body)));
    }
    expect(answers.map((answer) => answer.data.content)).toEqual([
      expect.stringContaining("I'll remember"),
      expect.stringContaining("I like tea"),
      expect.stringContaining("Built-in tools"),
    ]);
    for (const body of [
      command("remember", { channel, user, options: fact("I like coffee") }),
      command("recall", { channel, user }),
      command("tools", { channel, user }),
    ]) {
      const refused = await json<{ type: number; data: { content: string; flags: number } }>(
        await post(body),
      );
      expect(refused.type).toBe(4);
      expect(refused.data.flags & 64).toBe(64);
      expect(refused.data.content).toMatch(/faster than I can take them; try again in \d+ s/);
    }
    const stored = await json<{ memories: Array<{ text: string }> }>(
      await api("GET", `/memories?agentId=${agentId}&userId=discord:${user}`),
    );
    expect(stored.memories.map((memory) => memory.text)).toEqual(["I like tea"]);
    // Another person's bucket is untouched.
    expect(
      (
        await json<{ data: { content: string } }>(
          await post(command("recall", { channel, user: "710000000000000003" })),
        )
      ).data.content,
    ).toContain("don't remember anything");
  });
});

describe("daily model budget", () => {
  it("refuses an agent's turns once its tokens for the day are spent, keeping the message", async () => {
    const agentId = await createTestAgent({
      settings: { dailyTokens: 100, memory: { factsEvery: 1000 } },
    });
    model.script({ text: "first answer", usage: { promptTokens: 90, completionTokens: 30 } });
    expect(
      (await api("POST", `/agents/${agentId}/messages`, { body: { userId: "cy", text: "one" } }))
        .status,
    ).toBe(200);
    // Reading the history waits for the room's after-reply work, where the spend is counted.
    await api("GET", `/agents/${agentId}/rooms/user:cy/messages`);
    const usage = await env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
      .bind(agentId)
      .first<{ tokens: number }>();
    expect(usage?.tokens).toBe(120);

    const calls = model.calls.length;
    const refused = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "dee", text: "two" },
    });
    expect(refused.status).toBe(429);
    const problem = await json<Problem>(refused);
    expect(problem.error.message).toContain("daily model budget (120 of 100 tokens");
    const retryAfter = Number(refused.headers.get("retry-after"));
    const secondsToMidnight = Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);
    expect(Math.abs(retryAfter - secondsToMidnight)).toBeLessThanOrEqual(5);
    expect(model.calls.length).toBe(calls);
    expect(await storedUserMessages(agentId)).toEqual(["one", "two"]);

    // Asking for a stream changes nothing: the refusal comes before the turn starts, as JSON.
    const streamed = await api("POST", `/agents/${agentId}/messages`, {
      headers: { accept: "text/event-stream" },
      body: { userId: "eve", text: "three" },
    });
    expect(streamed.status).toBe(429);
    expect(streamed.headers.get("content-type")).toMatch(/^application\/json/);
    expect(Number(streamed.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await json<Problem>(streamed)).error.message).toContain("daily model budget");
    expect(model.calls.length).toBe(calls);
  });

  it("rejects a daily budget that is not a positive whole number", async () => {
    const response = await api("POST", "/agents", {
      body: { name: "Spendy", bio: ["x"], settings: { dailyTokens: -5 } },
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain("dailyTokens");
  });
});
