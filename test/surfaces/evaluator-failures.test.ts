// A reply can look fine while nothing is remembered: the after-reply evaluators (fact extraction,
// summaries) call SMALL_MODEL, and an endpoint that does not serve it refuses every call. Each
// failure is counted per agent and UTC day (src/db/stores/evaluator-failures.ts), and /health
// says how many failed today and which was last, never the failure's message.
import { describe, expect, it, vi } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

interface Health {
  status: string;
  evaluators: { failedToday: number; last: { evaluator: string; at: number } | null } | null;
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
      { timeout: 5_000, interval: 50 },
    );
    const { evaluators, status } = await health();
    expect(status).toBe("ok");
    expect(["reflection", "summary"]).toContain(evaluators!.last!.evaluator);
    // Names and times only: the model's error text stays in the log.
    expect(JSON.stringify(evaluators)).not.toContain("down");
    model.restoreModel("test-small");
  });
});
