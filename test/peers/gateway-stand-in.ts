// A Discord Gateway on loopback (Node, `ws`) that speaks the real protocol to the worker's
// DiscordGateway object: HELLO with a heartbeat interval, heartbeat ACKs, IDENTIFY -> READY (and
// GUILD_CREATE with the bot's managed role), DISPATCH with sequence numbers, RESUME -> the missed
// events replayed then RESUMED, INVALID_SESSION, op 7 RECONNECT and close codes. Tests in workerd
// script it over a small HTTP control API: dispatch events (buffered while nobody is connected,
// as Discord buffers them for a RESUME), drop or close the connection, stop ACKing heartbeats.
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
  /** Every dispatch of the session, for RESUME replays. */
  events: Array<{ s: number; t: string; d: unknown }>;
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
  let socket: WebSocket | null = null;
  let session: Session | null = null;
  let received: GatewayRecord[] = [];
  const sessions = new Map<string, Session>();
  let connections = 0;
  let token = "test-bot-token-not-real";

  const send = (payload: object) => socket?.send(JSON.stringify(payload));
  const dispatch = (t: string, d: unknown) => {
    if (!session) return null;
    session.seq += 1;
    const event = { s: session.seq, t, d };
    session.events.push(event);
    if (socket && readySocket === socket) send({ op: 0, ...event });
    return event.s;
  };
  let readySocket: WebSocket | null = null;

  const server = createServer((req, res) => void control(req, res));
  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws, req) => {
    connections += 1;
    const url = new URL(req.url ?? "/", "http://x");
    if (url.searchParams.get("v") !== "10" || url.searchParams.get("encoding") !== "json") {
      ws.close(4012, "Invalid API version");
      return;
    }
    // One connection at a time, as for one shard.
    socket?.terminate();
    socket = ws;
    readySocket = null;
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: heartbeatMs } }));
    ws.on("message", (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number; d: unknown };
      received.push({ op: payload.op, d: payload.d, at: Date.now() });
      if (ws !== socket) return;
      if (payload.op === 1) {
        if (ackHeartbeats) ws.send(JSON.stringify({ op: 11 }));
      } else if (payload.op === 2) identify(ws, payload.d as { token: string; intents: number });
      else if (payload.op === 6)
        resume(ws, payload.d as { token: string; session_id: string; seq: number });
    });
    ws.on("close", () => {
      if (socket === ws) {
        socket = null;
        readySocket = null;
      }
    });
  });

  function identify(ws: WebSocket, d: { token: string; intents: number }) {
    if (d.token !== token) return ws.close(4004, "Authentication failed");
    session = { id: randomUUID(), seq: 0, events: [] };
    sessions.set(session.id, session);
    readySocket = ws;
    dispatch("READY", {
      v: 10,
      user: { ...STAND_IN_BOT, bot: true },
      guilds: [{ id: STAND_IN_GUILD, unavailable: true }],
      session_id: session.id,
      resume_gateway_url: `ws://127.0.0.1:${port()}/resume`,
      application: { id: "100000000000000001", flags: 0 },
    });
    dispatch("GUILD_CREATE", {
      id: STAND_IN_GUILD,
      roles: [
        { id: STAND_IN_GUILD, name: "@everyone" },
        { id: STAND_IN_BOT_ROLE, name: "edge-bot", tags: { bot_id: STAND_IN_BOT.id } },
      ],
    });
  }

  function resume(ws: WebSocket, d: { token: string; session_id: string; seq: number }) {
    const known = sessions.get(d.session_id);
    if (d.token !== token || !known || known !== session) {
      ws.send(JSON.stringify({ op: 9, d: false }));
      return;
    }
    readySocket = ws;
    for (const event of known.events.filter((e) => e.s > d.seq)) send({ op: 0, ...event });
    dispatch("RESUMED", null);
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
    switch (req.url) {
      case "/control/dispatch": {
        const events = (body.events as Array<{ t: string; d: unknown }>) ?? [];
        return reply({ seqs: events.map((event) => dispatch(event.t, event.d)) });
      }
      case "/control/drop":
        // No close frame: the worker sees the connection fail (1006).
        socket?.terminate();
        return reply({});
      case "/control/close":
        socket?.close(Number(body.code), String(body.reason ?? ""));
        return reply({});
      case "/control/invalidate":
        if (body.resumable !== true) session = null;
        send({ op: 9, d: body.resumable === true });
        return reply({});
      case "/control/reconnect":
        send({ op: 7, d: null });
        return reply({});
      case "/control/heartbeat-request":
        send({ op: 1, d: null });
        return reply({});
      case "/control/settings":
        if (typeof body.ackHeartbeats === "boolean") ackHeartbeats = body.ackHeartbeats;
        if (typeof body.heartbeatMs === "number") heartbeatMs = body.heartbeatMs;
        if (typeof body.token === "string") token = body.token;
        return reply({});
      case "/control/state":
        return reply({
          connected: socket !== null,
          ready: readySocket !== null && readySocket === socket,
          connections,
          sessionId: session?.id ?? null,
          seq: session?.seq ?? 0,
          received,
        });
      case "/control/reset":
        socket?.terminate();
        socket = null;
        readySocket = null;
        session = null;
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
