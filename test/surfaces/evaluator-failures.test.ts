// A reply can look fine while nothing is remembered: the after-reply evaluators (fact extraction,
// summaries) call SMALL_MODEL, and an endpoint that does not serve it refuses every call. Each
// failure is counted per agent and UTC day (src/db/stores/failure-counts.ts), and /health
// says how many failed today, which was last, its cause and what to check, never the failure's
// message. A turn whose model failed is counted the same way (same file): /health's model
// then says so, where it said nothing while every turn answered 502.
import { describe, expect, it, vi } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

interface Health {
  status: string;
  model: {
    failedToday: number | null;
    lastFailure: { model: string; cause: string; at: number; fix: string } | null;
  };
  evaluators: {
    failedToday: number;
    last: { evaluator: string; at: number; cause: string | null; fix: string } | null;
  } | null;
}

async function health(): Promise<Health> {
  const response = await api("GET", "/health");
  expect(response.status).toBe(200);
  return json<Health>(response);
}

describe("evaluators that fail", () => {
  const model = useModelStandIn();

  it("are counted on /health while the replies still go out", async () => {
    const before = (await health()).evaluators;
    expect(before).not.toBeNull();
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1 } } });
    model.failModel("test-small", 404);
    model.respondWith(() => ({ text: "Lovely!" }));
    const started = Date.now();
    const response = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", userName: "Alice", text: "I play the cello in an orchestra" },
    });
    expect(response.status).toBe(200);
    expect((await json<{ reply: { text: string } }>(response)).reply.text).toBe("Lovely!");
    await vi.waitFor(
      async () => {
        const now = (await health()).evaluators!;
        expect(now.failedToday).toBeGreaterThan(before!.failedToday);
        expect(now.last!.at).toBeGreaterThanOrEqual(started);
      },
      { timeout: 15_000, interval: 50 },
    );
    const { evaluators, status } = await health();
    expect(status).toBe("ok");
    expect(["reflection", "summary"]).toContain(evaluators!.last!.evaluator);
    // The cause and what to check: an endpoint's 404 is a model it does not serve.
    expect(evaluators!.last!.cause).toBe("unknown_model");
    expect(evaluators!.last!.fix).toContain("SMALL_MODEL");
    // Names and times only: the model's error text stays in the log.
    expect(JSON.stringify(evaluators)).not.toContain("down");
    model.restoreModel("test-small");
  });

  it("and a turn whose model failed shows on /health's model, with its cause", async () => {
    const agentId = await createTestAgent();
    const started = Date.now();
    model.respondWith(() => ({ status: 401, body: { error: { message: "bad key sk-live-123" } } }));
    const response = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "Hello?" },
    });
    expect(response.status).toBe(502);
    await vi.waitFor(
      async () => {
        const { model: now } = await health();
        expect(now.lastFailure?.at ?? 0).toBeGreaterThanOrEqual(started);
      },
      { timeout: 15_000, interval: 50 },
    );
    const { model: seen } = await health();
    expect(seen.failedToday).toBeGreaterThanOrEqual(1);
    expect(seen.lastFailure).toMatchObject({ model: "test-primary", cause: "credentials" });
    expect(seen.lastFailure!.fix).toContain("OPENAI_API_KEY");
    expect(JSON.stringify(seen)).not.toContain("sk-live");
  });
});
