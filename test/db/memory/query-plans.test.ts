// The query plans of a turn's reads of long-term memory (src/db/memory/hybrid-search.ts and
// text-search.ts). Each is meant to cost what its few result rows cost, however much the room or
// the agent holds; a plan that walks an index over all of a room's or an agent's memories makes
// every turn slower as the agent remembers more. SQLite picks a plan from the statement alone here
// (no ANALYZE statistics), so these hold for any amount of data.
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, describe, expect, it } from "vitest";
import { createHybridSearch } from "../../../src/db/memory/hybrid-search.ts";
import { insertMemories } from "../../../src/db/memory/memory-repo.ts";
import { rankTextWithRows } from "../../../src/db/memory/text-search.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";

const agentId = "plans-agent";
const db = () => drizzle(env.DB);

/** EXPLAIN QUERY PLAN of a bound statement: its lines, in order. */
async function planOf(statement: D1PreparedStatement): Promise<string[]> {
  // A bound statement keeps its SQL and values; explain the same text with the same values.
  const { statement: text, params } = statement as unknown as {
    statement: string;
    params: unknown[];
  };
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${text}`)
    .bind(...params)
    .all<{ detail: string }>();
  return results.map((row) => row.detail);
}

/** A plan line that reads memories through an index by agent (and room or type) alone. */
const walksAll = (line: string) =>
  /memories USING (COVERING )?INDEX memories_(agent_id_unique|room_idx|type_idx) \(agent_id=\?( AND room_id=\?)?( AND type=\?)?\)$/.test(
    line,
  ) || /^SCAN memories\b/.test(line);

function memory(i: number, fields: Partial<Memory>): Memory {
  return {
    id: `pm-${i}`,
    type: "fact",
    agentId,
    roomId: null,
    userId: "ana",
    content: { text: `memory ${i}` },
    metadata: {},
    createdAt: 10_000 + i,
    ...fields,
  };
}

beforeAll(async () => {
  await env.DB.prepare(
    "INSERT OR IGNORE INTO agents (id, name, username, format, character, secrets, created_at, updated_at) VALUES (?, 'Plans', NULL, 'json', '{}', NULL, 0, 0)",
  )
    .bind(agentId)
    .run();
});

describe("a turn's reads of long-term memory", () => {
  it("the room's full-text recall joins its few ranked hits to their rows by key, not the room's rows to them", async () => {
    const statement = rankTextWithRows(
      db(),
      {
        agentId,
        text: "kayak trip",
        roomId: "room-1",
        types: ["message", "summary"],
        excludeIds: ["a", "b"],
        limit: 30,
      },
      13,
    );
    const plan = await planOf(statement!);
    // The hits: the ranking is the outer loop, each of its rows one primary-key look-up.
    const hits = plan.indexOf("SCAN ranked");
    expect(hits).toBeGreaterThan(-1);
    expect(plan[hits + 1]).toBe("SEARCH memories USING INTEGER PRIMARY KEY (rowid=?)");
    expect(plan.filter(walksAll)).toEqual([]);
  });

  it("what the agent knows about a person reads two indexes' newest rows, not all of the agent's memories", async () => {
    const reads: D1PreparedStatement[] = [];
    const recording = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "batch")
          return (statements: D1PreparedStatement[]) => {
            reads.push(...statements);
            return target.batch(statements);
          };
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await createHybridSearch({ db: drizzle(recording), index: null, embedder: null }).aboutUser({
      agentId,
      userId: "ana",
      limit: 60,
    });
    expect(reads).toHaveLength(1);
    const plan = await planOf(reads[0]!);
    expect(
      plan.some((line) =>
        line.includes("INDEX memories_user_idx (agent_id=? AND user_id=? AND type=?)"),
      ),
    ).toBe(true);
    expect(plan.some((line) => line.includes("INDEX memories_shared_facts_idx (agent_id=?)"))).toBe(
      true,
    );
    expect(plan.filter(walksAll)).toEqual([]);
  });

  it("what the agent knows about a person: their facts and profile and everyone's shared facts, newest first, each once", async () => {
    const userId = "plan-user";
    const items: Memory[] = [
      memory(1, { userId, type: "description", content: { text: "Plan user likes rowing" } }),
      memory(2, { userId, content: { text: "own private fact" } }),
      memory(3, { userId, content: { text: "own shared fact" }, metadata: { shared: true } }),
      memory(4, { userId: "someone-else", content: { text: "another's private fact" } }),
      memory(5, {
        userId: "someone-else",
        content: { text: "another's shared fact" },
        metadata: { shared: true },
      }),
      memory(6, { userId, type: "message", roomId: "r", content: { text: "a message" } }),
      memory(7, { userId, type: "lore", content: { text: "lore" }, metadata: { shared: true } }),
      memory(8, { userId, content: { text: "newest own fact" } }),
    ];
    await insertMemories(db(), items);
    const search = createHybridSearch({ db: db(), index: null, embedder: null });
    const texts = async (limit: number) =>
      (await search.aboutUser({ agentId, userId, limit })).map((m) => m.content.text);
    expect(await texts(60)).toEqual([
      "newest own fact",
      "another's shared fact",
      "own shared fact",
      "own private fact",
      "Plan user likes rowing",
    ]);
    expect(await texts(2)).toEqual(["newest own fact", "another's shared fact"]);
  });
});
