// The worker entry of `npm run bench:floor`: the real worker (src/index.ts) and its Durable Object
// classes, with three routes of its own that do the least a turn's platform path can do, to show
// what local workerd costs before any of our code runs. Reached only in this bundle.
// - `GET /__floor/ping`: a request answered at once (the loopback HTTP round trip);
// - `POST /__floor/hop`: one call to a room object that returns at once (plus the object hop);
// - `POST /__floor/turn`: a turn reduced to its I/O. In the room object: the message journaled in
//   the object's SQLite, one D1 batch (the user, room and participant upserts and the message
//   insert our inbound write makes, the room's 30 newest messages and 30 full-text hits with their
//   rows), one model request on loopback with those messages, the reply journaled; after the
//   answer, one D1 batch with the reply, the day's tokens and the interaction count. No character,
//   providers, evaluators, embedding, rate limits or validation beyond the bearer token.
/// <reference path="../../src/wasm.d.ts" />
import worker, { AgentRoom as Room } from "../../src/index.ts";
import type { Env } from "../../src/env.ts";

export {
  AgentTasks,
  DiscordGateway,
  DiscordRestLimiter,
  PostPublisher,
  RateLimiter,
  SchemaGate,
} from "../../src/index.ts";

interface FloorInput {
  agentId: string;
  roomId: string;
  userId: string;
  text: string;
}

const SEQ_MASK = 2 ** 40 - 1;

export class AgentRoom extends Room {
  private floorReady = false;
  /** D1 as the platform gives it: the product's rooms collect their calls into shared batches. */
  private readonly floorDb: D1Database;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx as ConstructorParameters<typeof Room>[0], env);
    this.floorDb = env.DB;
  }

  floorHop(): number {
    return 1;
  }

  async floorTurn(input: FloorInput): Promise<{ text: string }> {
    const sql = this.ctx.storage.sql;
    if (!this.floorReady) {
      sql.exec(
        "CREATE TABLE IF NOT EXISTS floor_journal (id TEXT PRIMARY KEY, status TEXT NOT NULL, input TEXT NOT NULL, reply TEXT)",
      );
      this.floorReady = true;
    }
    const turnId = crypto.randomUUID();
    sql.exec(
      "INSERT INTO floor_journal (id, status, input) VALUES (?, 'received', ?)",
      turnId,
      JSON.stringify(input),
    );
    const db = this.floorDb;
    const at = Date.now();
    const { agentId, roomId, userId, text } = input;
    const words = text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((word) => word.length > 2)
      .map((word) => `"${word}"`)
      .join(" OR ");
    const results = await db.batch<Record<string, unknown>>([
      db
        .prepare(
          "INSERT INTO users (id, name, source, created_at, updated_at) VALUES (?, NULL, 'rest', ?, ?) ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at",
        )
        .bind(userId, at, at),
      db
        .prepare(
          "INSERT INTO rooms (agent_id, id, source, created_at, updated_at) VALUES (?, ?, 'rest', ?, ?) ON CONFLICT (agent_id, id) DO UPDATE SET updated_at = excluded.updated_at",
        )
        .bind(agentId, roomId, at, at),
      db
        .prepare(
          "INSERT INTO participants (agent_id, room_id, user_id, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, room_id, user_id) DO UPDATE SET last_seen_at = excluded.last_seen_at",
        )
        .bind(agentId, roomId, userId, at, at),
      db
        .prepare(
          "INSERT INTO memories (id, type, agent_id, room_id, user_id, content, metadata, created_at) VALUES (?, 'message', ?, ?, ?, ?, '{}', ?) ON CONFLICT DO NOTHING",
        )
        .bind(
          `floor-in-${turnId}`,
          agentId,
          roomId,
          userId,
          JSON.stringify({ text, role: "user" }),
          at,
        ),
      db
        .prepare(
          "SELECT id, content, created_at FROM memories WHERE agent_id = ? AND room_id = ? AND type = 'message' ORDER BY created_at DESC LIMIT 30",
        )
        .bind(agentId, roomId),
      db
        .prepare(
          `SELECT m.id, m.content, bm25(memories_fts) AS score FROM memories_fts JOIN memories AS m ON m.seq = (memories_fts.rowid & ${SEQ_MASK}) WHERE memories_fts MATCH ? AND m.agent_id = ? ORDER BY score LIMIT 30`,
        )
        .bind(words ? `text : (${words})` : `text : ("none")`, agentId),
    ]);
    const history = (results[4]?.results ?? [])
      .reverse()
      .map((row) => JSON.parse(String(row.content)) as { text: string; role: string });
    const recalled = (results[5]?.results ?? []).map(
      (row) => (JSON.parse(String(row.content)) as { text: string }).text,
    );
    const response = await fetch(`${this.env.OPENAI_BASE_URL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${this.env.OPENAI_API_KEY}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: this.env.MODEL,
        messages: [
          { role: "system", content: `You are Bench.\nEarlier: ${recalled.join("\n")}` },
          ...history.map((m) => ({
            role: m.role === "user" ? "user" : "assistant",
            content: m.text,
          })),
        ],
      }),
    });
    const completion = (await response.json()) as {
      choices: Array<{ message: { content: string | null } }>;
      usage?: { total_tokens?: number };
    };
    const reply = completion.choices[0]?.message.content ?? "";
    sql.exec("UPDATE floor_journal SET status = 'replied', reply = ? WHERE id = ?", reply, turnId);
    const day = new Date(at).toISOString().slice(0, 10);
    // After the answer, as the room's after-reply work is: not awaited by the caller.
    void db
      .batch([
        db
          .prepare(
            "INSERT INTO memories (id, type, agent_id, room_id, user_id, content, metadata, created_at) VALUES (?, 'message', ?, ?, NULL, ?, '{}', ?) ON CONFLICT DO NOTHING",
          )
          .bind(
            `floor-out-${turnId}`,
            agentId,
            roomId,
            JSON.stringify({ text: reply, role: "agent" }),
            at + 1,
          ),
        db
          .prepare(
            "INSERT INTO model_usage_daily (agent_id, day, tokens) VALUES (?, ?, ?) ON CONFLICT (agent_id, day) DO UPDATE SET tokens = tokens + excluded.tokens",
          )
          .bind(agentId, day, completion.usage?.total_tokens ?? 0),
        db
          .prepare(
            "INSERT INTO relationships (agent_id, user_id, interaction_count, last_interaction, sentiment, last_turn_id) VALUES (?, ?, 1, ?, NULL, ?) ON CONFLICT (agent_id, user_id) DO UPDATE SET interaction_count = interaction_count + 1, last_interaction = excluded.last_interaction, last_turn_id = excluded.last_turn_id",
          )
          .bind(agentId, userId, at, turnId),
      ])
      .catch((error: unknown) => console.error("floor after-reply batch failed", error));
    return { text: reply };
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (!url.pathname.startsWith("/__floor/")) return worker.fetch(request, env, ctx);
    if (url.pathname === "/__floor/ping") return Response.json({ ok: true });
    if (request.headers.get("authorization") !== `Bearer ${env.ADMIN_TOKEN}`)
      return Response.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 });
    const input = (await request.json()) as FloorInput;
    const room = (env.ROOMS as unknown as DurableObjectNamespace<AgentRoom>).getByName(
      `floor:${input.agentId}:${input.roomId}`,
    );
    if (url.pathname === "/__floor/hop") return Response.json({ hop: await room.floorHop() });
    if (url.pathname === "/__floor/turn") return Response.json(await room.floorTurn(input));
    return Response.json({ error: { code: "not_found", message: "no" } }, { status: 404 });
  },
  scheduled(controller, env, ctx) {
    return worker.scheduled(controller, env, ctx);
  },
} satisfies ExportedHandler<Env>;
