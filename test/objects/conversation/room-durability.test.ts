import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../../helpers/api.ts";
import { lastUserText } from "../../helpers/model-messages.ts";

const model = useModelStandIn();

function send(
  agentId: string,
  text: string,
  options: { key?: string; roomId?: string; userId?: string } = {},
) {
  return api("POST", `/agents/${agentId}/messages`, {
    body: {
      userId: options.userId ?? "carol",
      text,
      ...(options.roomId ? { roomId: options.roomId } : {}),
    },
    headers: options.key ? { "idempotency-key": options.key } : {},
  });
}

/** The room's messages in D1, once the room has stored its last reply (that happens after answering). */
async function replies(
  agentId: string,
  roomId: string,
): Promise<{ id: string; content: string }[]> {
  await vi.waitFor(async () => {
    const last = await env.DB.prepare(
      "SELECT content FROM memories WHERE agent_id = ? AND room_id = ? AND type = 'message' ORDER BY created_at DESC, rowid DESC LIMIT 1",
    )
      .bind(agentId, roomId)
      .first<{ content: string }>();
    expect(last && (JSON.parse(last.content) as { role: string }).role).toBe("agent");
  });
  return storedMessages(agentId, roomId);
}

async function storedMessages(
  agentId: string,
  roomId: string,
): Promise<{ id: string; content: string }[]> {
  const { results } = await env.DB.prepare(
    "SELECT id, content FROM memories WHERE agent_id = ? AND room_id = ? AND type = 'message' ORDER BY created_at, rowid",
  )
    .bind(agentId, roomId)
    .all<{ id: string; content: string }>();
  return results;
}

describe("idempotency", () => {
  it("returns the same turn for a repeated Idempotency-Key without a second model call", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "Only once." });
    const first = await send(agentId, "Hello", { key: "key-1" });
    const second = await send(agentId, "Hello", { key: "key-1" });
    const [a, b] = [await json(first), await json(second)];
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(b.turnId).toBe(a.turnId);
    expect(b.reply).toEqual({ text: "Only once." });
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(model.calls).toHaveLength(1);
    expect(await replies(agentId, "user:carol")).toHaveLength(2);
  });

  it("runs concurrent repeats of one key as a single turn", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "Together.", delayMs: 30 });
    const responses = await Promise.all(
      [1, 2, 3, 4].map(() => send(agentId, "Same request", { key: "key-race" })),
    );
    const bodies = await Promise.all(responses.map((r) => json(r)));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(bodies.map((b) => b.turnId)).size).toBe(1);
    expect(model.calls).toHaveLength(1);
    expect(await replies(agentId, "user:carol")).toHaveLength(2);
  });

  it("refuses a reused key with a different request", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "First." });
    await send(agentId, "First request", { key: "key-2" });
    const reused = await send(agentId, "Another request", { key: "key-2" });
    expect(reused.status).toBe(409);
    expect(await json(reused)).toMatchObject({ error: { code: "conflict" } });
    expect(model.calls).toHaveLength(1);
  });
});

describe("ordering in a room", () => {
  it("answers ten concurrent turns one at a time, in arrival order", async () => {
    const agentId = await createTestAgent();
    let inFlight = 0;
    let maxInFlight = 0;
    model.respondWith(async (call) => {
      // Side tasks on the small model (fact extraction after a reply) may overlap the next turn;
      // the turns themselves, on the primary model, must not.
      if (call.model !== "test-primary") return { text: '{"facts":[]}' };
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight -= 1;
      return { text: `echo: ${lastUserText(call)}` };
    });
    const texts = Array.from({ length: 10 }, (_, i) => `message ${i}`);
    const responses = await Promise.all(
      texts.map((text) => send(agentId, text, { roomId: "busy-room" })),
    );
    const bodies = await Promise.all(responses.map((r) => json<{ reply: { text: string } }>(r)));
    for (const [i, body] of bodies.entries()) expect(body.reply.text).toBe(`echo: message ${i}`);
    expect(maxInFlight).toBe(1);

    // The stored conversation alternates person/agent, each reply right after its message,
    // and the model saw every earlier exchange of the room when answering the next one.
    const stored = (await replies(agentId, "busy-room")).map(
      (row) => JSON.parse(row.content) as { text: string; role: string },
    );
    expect(stored).toHaveLength(20);
    const order: string[] = [];
    for (let i = 0; i < 20; i += 2) {
      expect(stored[i]!.role).toBe("user");
      expect(stored[i + 1]).toMatchObject({ role: "agent", text: `echo: ${stored[i]!.text}` });
      order.push(stored[i]!.text);
    }
    const turns = model.callsFor("test-primary");
    expect(turns.map(lastUserText)).toEqual(order);
    for (const [k, call] of turns.entries())
      expect(call.messages.filter((m) => m.role === "assistant")).toHaveLength(k);
  });

  it("keeps rooms independent: a slow room does not hold up another", async () => {
    const agentId = await createTestAgent();
    // The slow room's model call waits until the fast room has answered: no timing involved.
    let releaseSlow = () => {};
    const slowGate = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    model.respondWith(async (call) => {
      if (lastUserText(call) !== "slow") return { text: "fast answer" };
      await slowGate;
      return { text: "finally" };
    });
    let slowDone = false;
    const slow = send(agentId, "slow", { roomId: "room-slow" }).then((response) => {
      slowDone = true;
      return response;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const fast = await send(agentId, "quick", { roomId: "room-fast" });
    expect(await json(fast)).toMatchObject({ reply: { text: "fast answer" } });
    expect(slowDone).toBe(false);
    releaseSlow();
    expect(await json(await slow)).toMatchObject({ reply: { text: "finally" } });
  });
});

/** Captures a room's DurableObjectState so a stand-in can reset the object from inside its own turn. */
async function roomState(agentId: string, roomId: string): Promise<DurableObjectState> {
  let captured: DurableObjectState | undefined;
  await runInDurableObject(env.ROOMS.getByName(`${agentId}:${roomId}`), (_instance, state) => {
    captured = state;
  });
  return captured!;
}

describe("durable wake-up", () => {
  /** The room's stored SDK jobs: its schedules and queue items. */
  async function jobs(agentId: string, roomId: string) {
    let rows: { fn: string; payload: string | null }[] = [];
    await runInDurableObject(env.ROOMS.getByName(`${agentId}:${roomId}`), (_instance, state) => {
      rows = state.storage.sql
        .exec<{ fn: string; payload: string | null }>("SELECT fn, payload FROM cf_agents_jobs")
        .toArray();
    });
    return rows;
  }
  const mentions = (name: string) => (job: { fn: string; payload: string | null }) =>
    job.fn === name || (job.payload ?? "").includes(name);

  it("arms one wake-up for turns in a row, not one per turn, and embeds their memories without a queue item", async () => {
    const agentId = await createTestAgent();
    model.respondWith((call) => ({ text: `re: ${lastUserText(call)}` }));
    for (let i = 0; i < 5; i++) {
      const response = await send(agentId, `message ${i}`, { roomId: "wake" });
      expect(response.status).toBe(200);
    }
    await replies(agentId, "wake");
    // Every message and reply gets its vector with no alarm run (the room embeds after each turn).
    await vi.waitFor(async () => {
      const row = await env.DB.prepare(
        "SELECT count(*) AS n FROM memories WHERE agent_id = ? AND room_id = 'wake' AND embedded_at IS NULL",
      )
        .bind(agentId)
        .first<{ n: number }>();
      expect(row?.n).toBe(0);
    });
    const stored = await jobs(agentId, "wake");
    expect(stored.filter(mentions("resumeTurns")), JSON.stringify(stored)).toHaveLength(1);
    expect(stored.filter(mentions("embedPending"))).toEqual([]);

    // Once it has fired, the next turn arms the next one.
    const room = env.ROOMS.getByName(`${agentId}:wake`);
    await runInDurableObject(room, (instance) =>
      (instance as unknown as { resumeTurns(): Promise<void> }).resumeTurns(),
    );
    expect((await send(agentId, "one more", { roomId: "wake" })).status).toBe(200);
    expect((await jobs(agentId, "wake")).filter(mentions("resumeTurns"))).toHaveLength(2);
  });
});

describe("eviction and crashes", () => {
  // ctx.abort() resets the object exactly as a deploy, a crash or a limit would: in-memory state
  // (the running turn, its waiters) is gone and only storage survives. (evictDurableObject waits
  // for in-flight work, which a turn hung on the model never finishes.)
  it("resumes a turn cut off in the middle of its model call and answers it exactly once", async () => {
    const agentId = await createTestAgent();
    const state = await roomState(agentId, "user:carol");
    let calls = 0;
    model.respondWith(() => {
      calls += 1;
      if (calls === 1) {
        state.abort("simulated eviction mid-turn");
        return { hang: true };
      }
      return { text: "I made it." };
    });
    const cut = await send(agentId, "Please survive a restart", { key: "evict-1" });
    expect(cut.status).toBe(503);
    expect(await json(cut)).toMatchObject({
      error: { code: "upstream", message: expect.stringContaining("Idempotency-Key") },
    });

    // The pending queue item's alarm wakes the room; the journal says the turn is unfinished.
    expect(await runDurableObjectAlarm(env.ROOMS.getByName(`${agentId}:user:carol`))).toBe(true);
    expect(model.calls).toHaveLength(2);
    const stored = await replies(agentId, "user:carol");
    expect(stored.map((row) => (JSON.parse(row.content) as { text: string }).text)).toEqual([
      "Please survive a restart",
      "I made it.",
    ]);

    // The client's retry gets the resumed answer, with no third model call.
    const retried = await send(agentId, "Please survive a restart", { key: "evict-1" });
    expect(retried.status).toBe(200);
    expect(await json(retried)).toMatchObject({ reply: { text: "I made it." } });
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect(model.calls).toHaveLength(2);
    expect(await replies(agentId, "user:carol")).toHaveLength(2);
  });

  it("finishes an interrupted turn before the next one when a new request wakes the room", async () => {
    const agentId = await createTestAgent();
    const state = await roomState(agentId, "resume-room");
    let crashed = false;
    model.respondWith((call) => {
      if (!crashed) {
        crashed = true;
        state.abort("simulated crash");
        return { hang: true };
      }
      return { text: `re: ${lastUserText(call)}` };
    });
    expect((await send(agentId, "first", { roomId: "resume-room" })).status).toBe(503);
    const second = await send(agentId, "second", { roomId: "resume-room" });
    expect(await json(second)).toMatchObject({ reply: { text: "re: second" } });
    const stored = (await replies(agentId, "resume-room")).map(
      (row) => (JSON.parse(row.content) as { text: string }).text,
    );
    expect(stored).toEqual(["first", "re: first", "second", "re: second"]);
  });

  it("keeps the journal across an eviction: a replayed key is still answered from it", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "Stored before eviction." });
    const first = await json(await send(agentId, "hello", { key: "evict-2" }));
    await evictDurableObject(env.ROOMS.getByName(`${agentId}:user:carol`));
    const again = await send(agentId, "hello", { key: "evict-2" });
    expect(await json(again)).toMatchObject({
      turnId: first.turnId,
      reply: { text: "Stored before eviction." },
    });
    expect(model.calls).toHaveLength(1);
  });
});
