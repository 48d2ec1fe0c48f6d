// Agents spread over memory databases (src/db/shards.ts, docs/scaling.md): this project binds
// MEMORY_DB_1..3 beside the catalog DB. Each agent's memories, rooms and inspector records live in
// its own database, new agents go to the emptiest, deleting one leaves nothing of it anywhere, and
// a database that fails takes only its own agents down.
import { env } from "cloudflare:workers";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const MEMORY_DBS = ["MEMORY_DB_1", "MEMORY_DB_2", "MEMORY_DB_3"] as const;
/** What lives in an agent's memory database rather than the catalog. */
const AGENT_DATA_TABLES = [
  "memories",
  "memory_vectors",
  "rooms",
  "participants",
  "turn_inspections",
];
type MemoryDb = (typeof MEMORY_DBS)[number];

function database(name: "DB" | MemoryDb): D1Database {
  const binding = name === "DB" ? env.DB : env[name];
  if (!binding) throw new Error(`${name} is not bound: see vitest.config.ts`);
  return binding;
}

async function shardOf(agentId: string): Promise<string | null> {
  const row = await env.DB.prepare("SELECT shard FROM agents WHERE id = ?")
    .bind(agentId)
    .first<{ shard: string | null }>();
  return row?.shard ?? null;
}

/** Rows of every table with an agent_id column that belong to the agent, per database. */
async function rowsOf(agentId: string, name: "DB" | MemoryDb): Promise<Record<string, number>> {
  const db = database(name);
  // Not D1's own tables: reading their columns is refused (SQLITE_AUTH), and D1 adds
  // _cf_METADATA once a session (src/db/read-sessions.ts) has been used.
  const tables = await db
    .prepare(
      "SELECT m.name AS name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table' AND m.name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND c.name = 'agent_id'",
    )
    .all<{ name: string }>();
  const counts: Record<string, number> = {};
  for (const { name: table } of tables.results) {
    const row = await db
      .prepare(`SELECT count(*) AS n FROM "${table}" WHERE agent_id = ?`)
      .bind(agentId)
      .first<{ n: number }>();
    // An agent's FTS number is never reused, by design (migration 0009): it holds nothing of it.
    if (row && row.n > 0 && table !== "agent_numbers") counts[table] = row.n;
  }
  // The agent's own row: the catalog's, or the anchor in its memory database.
  const own = await db
    .prepare("SELECT count(*) AS n FROM agents WHERE id = ?")
    .bind(agentId)
    .first<{ n: number }>();
  if (own && own.n > 0) counts.agents = own.n;
  return counts;
}

async function say(agentId: string, text: string) {
  return api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "alice", userName: "Alice", text },
  });
}

describe("agents over several memory databases", () => {
  it("places new agents on the emptiest memory database, one each while they are equal", async () => {
    const agents = [await createTestAgent(), await createTestAgent(), await createTestAgent()];
    const shards = await Promise.all(agents.map(shardOf));
    expect(new Set(shards)).toEqual(new Set(MEMORY_DBS));
  });

  it("keeps each agent's memories in its own database, and answers and remembers there", async () => {
    const agents = [await createTestAgent(), await createTestAgent()];
    for (const [i, agentId] of agents.entries()) {
      model.script({ text: `Hello from ${i}` });
      const response = await say(agentId, `I keep a kayak called Wave${i}`);
      expect(response.status).toBe(200);
      expect(await json(response)).toMatchObject({ reply: { text: `Hello from ${i}` } });
    }
    for (const agentId of agents) {
      // Read back through the API (the history waits for the reply's write): the history and the
      // search find them in the agent's home.
      const history = await json<{ messages: { text: string }[] }>(
        await api("GET", `/agents/${agentId}/rooms/${encodeURIComponent("user:alice")}/messages`),
      );
      expect(history.messages.map((m) => m.text).join(" ")).toContain("kayak");
      const home = (await shardOf(agentId)) as MemoryDb;
      expect(MEMORY_DBS).toContain(home);
      // The catalog holds the agent and its usage, its home holds its messages and rooms; no other
      // database has any of them.
      for (const table of AGENT_DATA_TABLES) {
        expect(await rowsOf(agentId, "DB")).not.toHaveProperty(table);
      }
      expect((await rowsOf(agentId, home)).memories).toBeGreaterThanOrEqual(2);
      for (const other of MEMORY_DBS.filter((name) => name !== home)) {
        expect(await rowsOf(agentId, other)).toEqual({});
      }
      const found = await json<{ memories: { text: string }[] }>(
        await api("POST", "/memories/similar", { body: { agentId, query: "kayak" } }),
      );
      expect(found.memories.length).toBeGreaterThan(0);
      expect(found.memories[0]!.text).toContain("kayak");
    }
  });

  it("deletes an agent with everything it kept, in its memory database and the catalog", async () => {
    const agentId = await createTestAgent({ lore: ["Grew up by a lake."] });
    model.script({ text: "Noted." });
    expect((await say(agentId, "My boat is red")).status).toBe(200);
    await api("POST", "/memories", {
      body: { memories: [{ agentId, type: "fact", userId: "alice", text: "Alice rows." }] },
    });
    const home = (await shardOf(agentId)) as MemoryDb;
    expect(Object.keys(await rowsOf(agentId, home))).toEqual(
      expect.arrayContaining(["memories", "rooms", "agents"]),
    );
    expect((await api("DELETE", `/agents/${agentId}`)).status).toBe(204);
    for (const name of ["DB", ...MEMORY_DBS] as const) {
      expect(await rowsOf(agentId, name)).toEqual({});
    }
    expect((await api("GET", `/agents/${agentId}`)).status).toBe(404);
  });

  it("reads an agent's memories over a session of its own database, and keeps each database's bookmark", async () => {
    const agentId = await createTestAgent();
    const home = (await shardOf(agentId)) as MemoryDb;
    const opened = vi.spyOn(database(home), "withSession");
    onTestFinished(() => opened.mockRestore());
    const stored = await api("POST", "/memories", {
      body: { memories: [{ agentId, type: "lore", text: "The ferry leaves at nine" }] },
    });
    expect(stored.status).toBe(201);
    const written = stored.headers.get("D1-Bookmark") ?? "";
    expect(written).toMatch(new RegExp(`^${home}:[^,]+$`));

    // The storage route reads the catalog too: one bookmark per database, the carried one used.
    const read = await api("GET", `/agents/${agentId}/storage`, {
      headers: { "D1-Bookmark": written },
    });
    expect(read.status).toBe(200);
    expect(opened.mock.calls.map(([start]) => start)).toEqual([
      "first-primary",
      written.slice(`${home}:`.length),
    ]);
    const answered = (read.headers.get("D1-Bookmark") ?? "")
      .split(", ")
      .map((pair) => pair.split(":")[0]);
    expect(answered.sort()).toEqual(["DB", home].sort());
  });

  it("answers 503 database_unavailable for the agents of a failing database, and serves the others", async () => {
    const broken = await createTestAgent();
    const failing = (await shardOf(broken)) as MemoryDb;
    const binding = database(failing);
    const down = () => {
      throw new Error("D1_ERROR: the database is unreachable");
    };
    const spies = [
      vi.spyOn(binding, "prepare").mockImplementation(down),
      vi.spyOn(binding, "batch").mockImplementation(down),
      // The read-only routes read over a D1 session (src/db/read-sessions.ts): it fails too.
      vi
        .spyOn(binding, "withSession")
        .mockImplementation(
          () => ({ prepare: down, batch: down, getBookmark: () => null }) as D1DatabaseSession,
        ),
    ];
    onTestFinished(() => {
      for (const spy of spies) spy.mockRestore();
    });
    // Agents created while it fails go elsewhere: it does not answer the size probe.
    const healthy = [await createTestAgent(), await createTestAgent()];
    for (const agentId of healthy) expect(await shardOf(agentId)).not.toBe(failing);

    const refused = await api("GET", `/memories?agentId=${broken}`);
    expect(refused.status).toBe(503);
    const problem = await json<{ error: { code: string; message: string } }>(refused);
    expect(problem.error.code).toBe("database_unavailable");
    expect(problem.error.message).toContain(failing);
    expect(problem.error.message).not.toContain("unreachable");
    // A turn of that agent too: its room cannot read the memories a reply is built from.
    model.script({ text: "Unreachable reply." });
    const turn = await say(broken, "Hello?");
    expect(turn.status).toBe(503);
    expect((await json<{ error: { code: string } }>(turn)).error.code).toBe("database_unavailable");

    for (const agentId of healthy) {
      model.script({ text: "Still here." });
      const response = await say(agentId, "Are you there?");
      expect(response.status).toBe(200);
      expect((await api("GET", `/memories?agentId=${agentId}`)).status).toBe(200);
    }
  });
});
