// A Discord Gateway on loopback (Node, `ws`) that speaks the real protocol to the worker's
// DiscordGateway object: HELLO with a heartbeat interval, heartbeat ACKs, IDENTIFY -> READY (and
// GUILD_CREATE with the bot's managed role), DISPATCH with sequence numbers, RESUME -> the missed
// events replayed then RESUMED, INVALID_SESSION, op 7 RECONNECT and close codes. Sharded like
// Discord: IDENTIFY's `shard: [i, n]` makes a connection shard i, and a server's events go to shard
// (guild_id >> 22) % n (DMs to 0). Tests in workerd script it over a small HTTP control API:
// dispatch events (buffered while nobody is connected, as Discord buffers them for a RESUME), drop
// or close a shard's connection (`shard`, default 0), stop ACKing heartbeats.
// Started by vitest's global setup (test/setup/gateway-peer.ts) and by `npm run bench:discord`.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { WebSocket } from "ws";

// Loaded through require: vitest resolves a bare `ws` import with the browser condition (its stub).
const { WebSocketServer } = createRequire(import.meta.url)("ws") as typeof import("ws");

import { STAND_IN_BOT, STAND_IN_BOT_ROLE, STAND_IN_GUILD } from "./gateway-ids.ts";

interface Session {
  id: string;
  seq: number;
  /** Which shard identified it: its events go out on that shard's connection only. */
  shard: number;
  /** Every dispatch of the session, for RESUME replays. */
  events: Array<{ s: number; t: string; d: unknown }>;
}

/** One shard as Discord holds it: its newest connection and its session. */
interface Shard {
  socket: WebSocket | null;
  readySocket: WebSocket | null;
  session: Session | null;
  count: number;
}

export interface GatewayRecord {
  op: number;
  d: unknown;
  at: number;
}

export interface GatewayStandIn {
  /** ws:// URL for `GET /gateway/bot` to answer. */
  url: string;
  controlUrl: string;
  close(): Promise<void>;
}

export async function startGatewayStandIn(): Promise<GatewayStandIn> {
  let heartbeatMs = 1_000;
  let ackHeartbeats = true;
  let received: GatewayRecord[] = [];
  const sessions = new Map<string, Session>();
  const shards = new Map<number, Shard>();
  let connections = 0;
  let token = "test-bot-token-not-real";

  const shardAt = (index: number): Shard => {
    let shard = shards.get(index);
    if (!shard) {
      shard = { socket: null, readySocket: null, session: null, count: 1 };
      shards.set(index, shard);
    }
    return shard;
  };
  const send = (shard: Shard, payload: object) => shard.socket?.send(JSON.stringify(payload));
  const dispatchOn = (index: number, t: string, d: unknown) => {
    const shard = shardAt(index);
    const session = shard.session;
    if (!session) return null;
    session.seq += 1;
    const event = { s: session.seq, t, d };
    session.events.push(event);
    if (shard.socket && shard.readySocket === shard.socket) send(shard, { op: 0, ...event });
    return event.s;
  };
  /** Discord's routing: a server's events go to shard (guild_id >> 22) % count, DMs to shard 0. */
  const shardFor = (d: unknown): number => {
    const guild = (d as { guild_id?: unknown } | null)?.guild_id;
    const count = shards.get(0)?.count ?? 1;
    return typeof guild === "string" ? Number((BigInt(guild) >> 22n) % BigInt(count)) : 0;
  };

  const server = createServer((req, res) => void control(req, res));
  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws, req) => {
    connections += 1;
    const url = new URL(req.url ?? "/", "http://x");
    if (url.searchParams.get("v") !== "10" || url.searchParams.get("encoding") !== "json") {
      ws.close(4012, "Invalid API version");
      return;
    }
    // Which shard the connection is becomes known when it identifies or resumes.
    let index: number | null = null;
    const claim = (next: number) => {
      const shard = shardAt(next);
      // One connection at a time per shard.
      if (shard.socket !== ws) shard.socket?.terminate();
      shard.socket = ws;
      shard.readySocket = null;
      index = next;
      return shard;
    };
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: heartbeatMs } }));
    ws.on("message", (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number; d: unknown };
      received.push({ op: payload.op, d: payload.d, at: Date.now() });
      if (payload.op === 2) {
        const d = payload.d as { token: string; intents: number; shard?: [number, number] };
        const [i, count] = d.shard ?? [0, 1];
        if (!Number.isInteger(i) || !Number.isInteger(count) || i < 0 || i >= count)
          return ws.close(4010, "Invalid shard");
        identify(claim(i), ws, d, count);
        return;
      }
      if (payload.op === 6) {
        const d = payload.d as { token: string; session_id: string; seq: number };
        resume(claim(sessions.get(d.session_id)?.shard ?? index ?? 0), ws, d);
        return;
      }
      if (index !== null && shardAt(index).socket !== ws) return;
      if (payload.op === 1 && ackHeartbeats) ws.send(JSON.stringify({ op: 11 }));
    });
    ws.on("close", () => {
      const shard = index === null ? null : shardAt(index);
      if (shard && shard.socket === ws) {
        shard.socket = null;
        shard.readySocket = null;
      }
    });
  });

  function identify(shard: Shard, ws: WebSocket, d: { token: string }, count: number) {
    if (d.token !== token) return ws.close(4004, "Authentication failed");
    const index = [...shards].find(([, s]) => s === shard)![0];
    shard.count = count;
    shard.session = { id: randomUUID(), seq: 0, shard: index, events: [] };
    sessions.set(shard.session.id, shard.session);
    shard.readySocket = ws;
    dispatchOn(index, "READY", {
      v: 10,
      user: { ...STAND_IN_BOT, bot: true },
      guilds: [{ id: STAND_IN_GUILD, unavailable: true }],
      session_id: shard.session.id,
      resume_gateway_url: `ws://127.0.0.1:${port()}/resume`,
      application: { id: "100000000000000001", flags: 0 },
      shard: [index, count],
    });
    dispatchOn(index, "GUILD_CREATE", {
      id: STAND_IN_GUILD,
      roles: [
        { id: STAND_IN_GUILD, name: "@everyone" },
        { id: STAND_IN_BOT_ROLE, name: "edge-bot", tags: { bot_id: STAND_IN_BOT.id } },
      ],
    });
  }

  function resume(
    shard: Shard,
    ws: WebSocket,
    d: { token: string; session_id: string; seq: number },
  ) {
    const known = sessions.get(d.session_id);
    if (d.token !== token || !known || known !== shard.session) {
      ws.send(JSON.stringify({ op: 9, d: false }));
      return;
    }
    shard.readySocket = ws;
    for (const event of known.events.filter((e) => e.s > d.seq)) send(shard, { op: 0, ...event });
    dispatchOn(known.shard, "RESUMED", null);
  }

  function port(): number {
    return (server.address() as AddressInfo).port;
  }

  async function control(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body =
      chunks.length > 0
        ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>)
        : {};
    const reply = (value: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    const shard = shardAt(typeof body.shard === "number" ? body.shard : 0);
    switch (req.url) {
      case "/control/dispatch": {
        const events = (body.events as Array<{ t: string; d: unknown }>) ?? [];
        const on = (event: { d: unknown }) =>
          typeof body.shard === "number" ? body.shard : shardFor(event.d);
        return reply({ seqs: events.map((event) => dispatchOn(on(event), event.t, event.d)) });
      }
      case "/control/drop":
        // No close frame: the worker sees the connection fail (1006).
        shard.socket?.terminate();
        return reply({});
      case "/control/close":
        shard.socket?.close(Number(body.code), String(body.reason ?? ""));
        return reply({});
      case "/control/invalidate":
        if (body.resumable !== true) shard.session = null;
        send(shard, { op: 9, d: body.resumable === true });
        return reply({});
      case "/control/reconnect":
        send(shard, { op: 7, d: null });
        return reply({});
      case "/control/heartbeat-request":
        send(shard, { op: 1, d: null });
        return reply({});
      case "/control/settings":
        if (typeof body.ackHeartbeats === "boolean") ackHeartbeats = body.ackHeartbeats;
        if (typeof body.heartbeatMs === "number") heartbeatMs = body.heartbeatMs;
        if (typeof body.token === "string") token = body.token;
        return reply({});
      case "/control/state":
        return reply({
          connected: shard.socket !== null,
          ready: shard.readySocket !== null && shard.readySocket === shard.socket,
          connections,
          sessionId: shard.session?.id ?? null,
          seq: shard.session?.seq ?? 0,
          received,
          shards: [...shards]
            .sort(([a], [b]) => a - b)
            .map(([index, s]) => ({
              index,
              count: s.count,
              connected: s.socket !== null,
              ready: s.readySocket !== null && s.readySocket === s.socket,
              sessionId: s.session?.id ?? null,
            })),
        });
      case "/control/reset":
        for (const s of shards.values()) s.socket?.terminate();
        shards.clear();
        sessions.clear();
        received = [];
        connections = 0;
        ackHeartbeats = true;
        heartbeatMs = 1_000;
        token = "test-bot-token-not-real";
        return reply({});
      default:
        res.writeHead(404).end();
    }
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `ws://127.0.0.1:${port()}/`,
    controlUrl: `http://127.0.0.1:${port()}/control`,
    async close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
