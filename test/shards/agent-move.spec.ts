// Moving an agent to another memory database while it answers (src/db/moves/, docs/scaling.md):
// the copy, the fence, the verification by counts and hash chains, the switch, the clean-up; a
// roll-back; and a move resumed after an interruption. Turns run against the agent throughout.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { MoveProgress } from "../../src/db/moves/agent-move.ts";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

useModelStandIn();

type Progress = MoveProgress;

function binding(name: string): D1Database {
  const db = name === "DB" ? env.DB : env[name as `MEMORY_DB_${number}`];
  if (!db) throw new Error(`${name} is not bound`);
  return db;
}

async function homeOf(agentId: string): Promise<string> {
  const row = await env.DB.prepare("SELECT shard FROM agents WHERE id = ?")
    .bind(agentId)
    .first<{ shard: string | null }>();
  return row?.shard ?? "DB";
}

async function memoryIds(name: string, agentId: string): Promise<string[]> {
  const { results } = await binding(name)
    .prepare("SELECT id FROM memories WHERE agent_id = ? ORDER BY id")
    .bind(agentId)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

async function seed(agentId: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 500) {
    const memories = Array.from({ length: Math.min(500, count - start) }, (_, i) => ({
      agentId,
      type: "fact",
      userId: `member-${(start + i) % 40}`,
      text: `Seeded fact number ${start + i} about kayaks and lakes`,
    }));
    const response = await api("POST", "/memories", { body: { memories } });
    if (response.status !== 201) throw new Error(`seeding: ${await response.text()}`);
  }
}

async function step(agentId: string, to?: string, pages?: number): Promise<Progress> {
  const body = { ...(to ? { to } : {}), ...(pages ? { pages } : {}) };
  const response = await api("POST", `/agents/${agentId}/move`, { body });
  if (response.status !== 200)
    throw new Error(`move step: ${response.status} ${await response.text()}`);
  return json<Progress>(response);
}

/** Steps until done; returns every answer. */
async function moveAll(agentId: string, to: string): Promise<Progress[]> {
  const seen = [await step(agentId, to)];
  while (seen.at(-1)!.phase !== "done") seen.push(await step(agentId));
  return seen;
}

function otherThan(home: string): string {
  return ["MEMORY_DB_1", "MEMORY_DB_2", "MEMORY_DB_3"].find((name) => name !== home)!;
}

describe("moving an agent to another memory database", () => {
  it("moves 10,000 memories under a stream of turns: nothing lost, nothing doubled, counts and chains equal", async () => {
    const agentId = await createTestAgent();
    await seed(agentId, 10_000);
    const source = await homeOf(agentId);
    const target = otherThan(source);
    const before = await memoryIds(source, agentId);

    // The agent's first turn loads its 10,000 vectors into the room's cache: done before the move.
    for (const roomId of ["lobby", "garden", "kitchen"]) {
      const warm = await api("POST", `/agents/${agentId}/messages`, {
        body: { userId: `member-${roomId}`, roomId, text: "hello" },
      });
      expect(warm.status).toBe(200);
    }
    let moving = true;
    const answered: string[] = [];
    const refused: number[] = [];
    // Three members talking in three rooms for as long as the move lasts.
    const streams = ["lobby", "garden", "kitchen"].map(async (roomId) => {
      for (let i = 0; moving; i++) {
        const marker = `${roomId}${i}x`;
        const response = await api("POST", `/agents/${agentId}/messages`, {
          body: { userId: `member-${roomId}`, roomId, text: `stream message ${marker}` },
        });
        if (response.status === 200) answered.push(marker);
        else refused.push(response.status);
      }
    });
    // Small steps (4 pages of 200 rows), so turns land between them in every phase.
    const steps = [await step(agentId, target, 4)];
    while (steps.at(-1)!.phase !== "done") {
      // A caller's round trip between steps, as `npm run memory -- move` has over the network.
      await new Promise((resolve) => setTimeout(resolve, 20));
      steps.push(await step(agentId, undefined, 4));
    }
    moving = false;
    await Promise.all(streams);

    const last = steps.at(-1)!;
    expect(last.pass).toMatchObject({ changed: 0 });
    expect(last.pass.sourceRows).toBe(last.pass.targetRows);
    expect(last.pass.sourceChain).toBe(last.pass.targetChain);
    expect(await homeOf(agentId)).toBe(target);
    // The old home keeps nothing of the agent's data; the new one has every seeded memory once.
    expect(await memoryIds(source, agentId)).toEqual([]);
    const after = await memoryIds(target, agentId);
    expect(new Set(after).size).toBe(after.length);
    expect(after).toEqual(expect.arrayContaining(before));
    // Every answered turn's message is in the new home exactly once.
    const { results } = await binding(target)
      .prepare(
        "SELECT json_extract(content, '$.text') AS text FROM memories WHERE agent_id = ? AND type = 'message'",
      )
      .bind(agentId)
      .all<{ text: string }>();
    const stored = new Map<string, number>();
    for (const { text } of results) stored.set(text, (stored.get(text) ?? 0) + 1);
    for (const marker of answered) expect(stored.get(`stream message ${marker}`)).toBe(1);
    // And the API reads them there: the newest of a room's history is its last answered turn.
    const lastLobby = answered.filter((m) => m.startsWith("lobby")).at(-1)!;
    const history = await json<{ messages: { text: string }[] }>(
      await api("GET", `/agents/${agentId}/rooms/lobby/messages?limit=4`),
    );
    expect(history.messages.map((m) => m.text)).toContain(`stream message ${lastLobby}`);
    expect(answered.length).toBeGreaterThan(10);
    // Turns wait for the fence to lift; only one already past that check when the fence went up
    // (one per room at most) can be refused, and then whole (503), never half-stored.
    expect(refused.length).toBeLessThanOrEqual(3);
    for (const status of refused) expect(status).toBe(503);
    console.log(
      `move: ${steps.length} steps, ${answered.length} turns answered, ${refused.length} refused, fence held ${last.switchedAt! - last.fencedAt!} ms`,
    );
  }, 120_000);

  it("verifies by equal counts and hash chains, and the agent answers from its new home", async () => {
    const agentId = await createTestAgent();
    await seed(agentId, 300);
    const source = await homeOf(agentId);
    const target = otherThan(source);
    const steps = await moveAll(agentId, target);
    // The verification pass's figures: every row of both homes, equal, and nothing to change.
    const verified = steps.at(-1)!;
    expect(verified.switchedAt).not.toBeNull();
    expect(verified.pass.changed).toBe(0);
    expect(verified.pass.sourceRows).toBeGreaterThanOrEqual(300);
    expect(verified.pass.sourceRows).toBe(verified.pass.targetRows);
    expect(verified.pass.sourceChain).toBe(verified.pass.targetChain);
    // The fence in the old home refuses a stale writer's insert there.
    await expect(
      binding(source)
        .prepare(
          "INSERT INTO rooms (agent_id, id, source, created_at, updated_at) VALUES (?, 'late', 'api', 1, 1)",
        )
        .bind(agentId)
        .run(),
    ).rejects.toThrow(/agent_fenced/);
    const found = await json<{ memories: { text: string }[] }>(
      await api("POST", "/memories/similar", { body: { agentId, query: "Seeded fact number 7" } }),
    );
    expect(found.memories.length).toBeGreaterThan(0);
  });

  it("resumes an interrupted move from where it stopped, and rolls one back", async () => {
    const agentId = await createTestAgent();
    await seed(agentId, 600);
    const source = await homeOf(agentId);
    const target = otherThan(source);
    // One step, then the caller goes away: the state is in the catalog.
    const first = await step(agentId, target, 1);
    expect(first.phase).toBe("copy");
    const state = await json<Progress>(await api("GET", `/agents/${agentId}/move`));
    expect(state.target).toBe(target);
    // Another target while one move is under way is refused.
    expect((await api("POST", `/agents/${agentId}/move`, { body: { to: source } })).status).toBe(
      409,
    );
    // Resumed by the next call: five more pages, into the memories, then rolled back.
    const resumed = await step(agentId, undefined, 5);
    expect(resumed.table).toBe("memories");
    expect((await memoryIds(target, agentId)).length).toBeGreaterThan(0);
    let back = await json<Progress>(await api("DELETE", `/agents/${agentId}/move`));
    while (back.phase !== "done")
      back = await json<Progress>(await api("DELETE", `/agents/${agentId}/move`));
    // The new home forgets the agent, the old one keeps everything and takes writes again.
    expect(await memoryIds(target, agentId)).toEqual([]);
    expect(await homeOf(agentId)).toBe(source);
    expect((await memoryIds(source, agentId)).length).toBe(600);
    expect((await api("GET", `/agents/${agentId}/move`)).status).toBe(404);
    // And moved for good by the same command as a fresh move.
    const steps = await moveAll(agentId, target);
    expect(steps.at(-1)!.phase).toBe("done");
    expect((await memoryIds(target, agentId)).length).toBe(600);
    expect(await memoryIds(source, agentId)).toEqual([]);
  });
});
