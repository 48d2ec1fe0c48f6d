// Faults injected where a turn writes or waits, each followed by a check of what was stored and
// what the user got. D1 failures are real: a trigger makes SQLite abort the write, as a failing D1
// would. Evictions use ctx.abort(), which drops everything in memory exactly as a crash does.
// (Model 429/500/timeouts/malformed output are in model-failures.test.ts, invalid tool calls in
// turn-loop.test.ts, a crash mid-model-call and racing Idempotency-Keys in room-durability.test.ts,
// Discord 429/502 and duplicate webhooks in discord.test.ts, an eviction with a queued turn in
// fault-injection-discord.test.ts.)
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();

afterEach(async () => {
  await env.DB.exec("DROP TRIGGER IF EXISTS inject_d1_failure");
});

/** From now on, D1 refuses to store any memory whose JSON content contains `marker`. */
async function failWritesContaining(marker: string): Promise<void> {
  await env.DB.exec(
    `CREATE TRIGGER inject_d1_failure BEFORE INSERT ON memories WHEN instr(NEW.content, '${marker}') > 0 BEGIN SELECT RAISE(ABORT, 'injected D1 failure'); END`,
  );
}

async function storedMessages(
  agentId: string,
  roomId: string,
): Promise<Array<{ role: string; text: string }>> {
  const { results } = await env.DB.prepare(
    "SELECT content FROM memories WHERE agent_id = ? AND room_id = ? AND type = 'message' ORDER BY created_at, rowid",
  )
    .bind(agentId, roomId)
    .all<{ content: string }>();
  return results
    .map((row) => JSON.parse(row.content) as { role: string; text: string })
    .map(({ role, text }) => ({ role, text }));
}

async function journal(agentId: string, roomId: string): Promise<Array<{ status: string }>> {
  return runInDurableObject(env.ROOMS.getByName(`${agentId}:${roomId}`), (_instance, state) =>
    state.storage.sql
      .exec<{ status: string }>("SELECT status FROM turn_journal ORDER BY seq")
      .toArray(),
  );
}

async function roomState(agentId: string, roomId: string): Promise<DurableObjectState> {
  let captured: DurableObjectState | undefined;
  await runInDurableObject(env.ROOMS.getByName(`${agentId}:${roomId}`), (_instance, state) => {
    captured = state;
  });
  return captured!;
}

function send(agentId: string, text: string, key?: string) {
  return api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "flo", text },
    headers: key ? { "idempotency-key": key } : {},
  });
}

describe("fault injection", () => {
  it("a D1 failure storing the inbound message: one clear error, no model call, nothing half-written, the retry answers the same", async () => {
    const agentId = await createTestAgent();
    await failWritesContaining("POISON-IN");
    const failed = await send(agentId, "POISON-IN hello", "k-in");
    expect(failed.status).toBe(500);
    const problem = await json<{ error: { code: string; message: string } }>(failed);
    expect(problem.error).toEqual({
      code: "internal",
      message: "the turn failed unexpectedly; see the worker logs",
    });
    expect(JSON.stringify(problem)).not.toContain("injected D1 failure");
    expect(model.calls).toHaveLength(0);
    expect(await storedMessages(agentId, "user:flo")).toEqual([]);

    // A retry of the same request gets the same answer; the room is not stuck.
    const retried = await send(agentId, "POISON-IN hello", "k-in");
    expect(retried.status).toBe(500);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    model.script({ text: "fine again" });
    expect(await json(await send(agentId, "a clean message"))).toMatchObject({
      reply: { text: "fine again" },
    });
    // The reply reaches D1 after the caller has it.
    await vi.waitFor(async () =>
      expect((await journal(agentId, "user:flo")).map((e) => e.status)).toEqual([
        "failed",
        "evaluated",
      ]),
    );
    expect(await storedMessages(agentId, "user:flo")).toEqual([
      { role: "user", text: "a clean message" },
      { role: "agent", text: "fine again" },
    ]);
  });

  it("a D1 failure storing the reply: the user still gets it once, and it is stored once when D1 recovers", async () => {
    const agentId = await createTestAgent();
    await failWritesContaining("POISON-OUT");
    model.script({ text: "POISON-OUT reply" });
    const response = await send(agentId, "hi", "k-out");
    expect(response.status).toBe(200);
    expect(await json(response)).toMatchObject({ reply: { text: "POISON-OUT reply" } });
    await vi.waitFor(async () =>
      expect((await journal(agentId, "user:flo")).map((e) => e.status)).toEqual(["replied"]),
    );
    expect(await storedMessages(agentId, "user:flo")).toEqual([{ role: "user", text: "hi" }]);

    await env.DB.exec("DROP TRIGGER inject_d1_failure");
    // The room's pending resume item retries the after-reply work.
    expect(await runDurableObjectAlarm(env.ROOMS.getByName(`${agentId}:user:flo`))).toBe(true);
    await vi.waitFor(async () =>
      expect((await journal(agentId, "user:flo")).map((e) => e.status)).toEqual(["evaluated"]),
    );
    expect(await storedMessages(agentId, "user:flo")).toEqual([
      { role: "user", text: "hi" },
      { role: "agent", text: "POISON-OUT reply" },
    ]);
    const replay = await send(agentId, "hi", "k-out");
    expect(await json(replay)).toMatchObject({ reply: { text: "POISON-OUT reply" } });
    expect(model.calls.filter((c) => c.model === "test-primary")).toHaveLength(1);
  });

  it("an eviction after the reply is journalled, during the evaluators: reply stored once, counted once", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1 } } });
    const state = await roomState(agentId, "user:flo");
    let evictedOnce = false;
    model.respondWith((call) => {
      if (call.model === "test-small" && !evictedOnce) {
        evictedOnce = true;
        state.abort("simulated eviction during the evaluators");
        return { hang: true };
      }
      if (call.model === "test-small") return { text: JSON.stringify({ facts: [] }) };
      return { text: "evaluated reply" };
    });
    const response = await send(agentId, "I live in Porto", "k-eval");
    // The answer normally leaves before the evaluators start; if the eviction lands while it is
    // still held by the output gate, the client gets 503 and its retry with the key gets the reply.
    if (response.status !== 200)
      expect(await json(response)).toMatchObject({ error: { code: "upstream" } });
    else expect(await json(response)).toMatchObject({ reply: { text: "evaluated reply" } });
    await vi.waitFor(() => expect(evictedOnce).toBe(true));

    expect(await runDurableObjectAlarm(env.ROOMS.getByName(`${agentId}:user:flo`))).toBe(true);
    await vi.waitFor(async () =>
      expect((await journal(agentId, "user:flo")).map((e) => e.status)).toEqual(["evaluated"]),
    );
    expect(await storedMessages(agentId, "user:flo")).toEqual([
      { role: "user", text: "I live in Porto" },
      { role: "agent", text: "evaluated reply" },
    ]);
    const relationship = await env.DB.prepare(
      "SELECT interaction_count FROM relationships WHERE agent_id = ?",
    )
      .bind(agentId)
      .first<{ interaction_count: number }>();
    expect(relationship?.interaction_count).toBe(1);
    expect(await json(await send(agentId, "I live in Porto", "k-eval"))).toMatchObject({
      reply: { text: "evaluated reply" },
    });
    expect(model.calls.filter((c) => c.model === "test-primary")).toHaveLength(1);
  });
});
