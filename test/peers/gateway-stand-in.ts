// A Discord Gateway on loopback (Node, `ws`) that speaks the real protocol to the worker's
// DiscordGateway object: HELLO with a heartbeat interval, heartbeat ACKs, IDENTIFY -> READY (and
// GUILD_CREATE with the bot's managed role), DISPATCH with sequence numbers, RESUME -> the missed
// events replayed then RESUMED, INVALID_SESSION, op 7 RECONNECT and close codes. Sharded like
// Discord: IDENTIFY's `shard: [i, n]` makes a connection shard i of n, and a server's events go to
// shard (guild_id >> 22) % n (DMs to 0). Shards of two counts may be up at once, as in a re-shard:
// each count's set gets every event (Discord sends it to every session holding the server), and a
// client closing with 1000 or 1001 ends its session. Tests in workerd script it over a small HTTP
// control API: dispatch events (buffered while nobody is connected, as Discord buffers them for a
// RESUME), drop or close a shard's connection (`shard`, default 0; `count`, default the newest),
// hold the READY of chosen shards until released, stop ACKing heartbeats.
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
  /** Which shard identified it (`i/n`): its events go out on that shard's connection only. */
  shard: string;
  /** Every dispatch of the session, for RESUME replays. */
  events: Array<{ s: number; t: string; d: unknown }>;
}

/** One shard as Discord holds it: its newest connection and its session. */
interface Shard {
  index: number;
  count: number;
  socket: WebSocket | null;
  readySocket: WebSocket | null;
  session: Session | null;
  /** When it last identified: the newest set is the default target of the control API. */
  identifiedAt: number;
}

const keyOf = (index: number, count: number) => `${index}/${count}`;

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
  const shards = new Map<string, Shard>();
  let connections = 0;
  let token = "test-bot-token-not-real";
  /** Shards (`i/n`) whose IDENTIFY waits for `release` before READY. */
  let heldReady = new Set<string>();
  const pendingReady: Array<() => void> = [];
  let identifications = 0;

  const shardAt = (index: number, count: number): Shard => {
    const key = keyOf(index, count);
    let shard = shards.get(key);
    if (!shard) {
      shard = { index, count, socket: null, readySocket: null, session: null, identifiedAt: 0 };
      shards.set(key, shard);
    }
    return shard;
  };
  /** Shard `index` of `count`, or of the newest set that has it (0 of 1 when none does). */
  const pick = (index: number, count?: number): Shard => {
    if (count !== undefined) return shardAt(index, count);
    const newest = [...shards.values()]
      .filter((shard) => shard.index === index)
      .sort((a, b) => b.identifiedAt - a.identifiedAt)[0];
    return newest ?? shardAt(index, 1);
  };
  const send = (shard: Shard, payload: object) => shard.socket?.send(JSON.stringify(payload));
  const dispatchOn = (shard: Shard, t: string, d: unknown) => {
    const session = shard.session;
    if (!session) return null;
    session.seq += 1;
    const event = { s: session.seq, t, d };
    session.events.push(event);
    if (shard.socket && shard.readySocket === shard.socket) send(shard, { op: 0, ...event });
    return event.s;
  };
  /**
   * Discord's routing: a server's events go to shard (guild_id >> 22) % count, DMs to shard 0, in
   * every set with a live session (two during a re-shard), the newest set first.
   */
  const shardsFor = (d: unknown): Shard[] => {
    const guild = (d as { guild_id?: unknown } | null)?.guild_id;
    const live = [...shards.values()]
      .filter((shard) => shard.session !== null)
      .sort((a, b) => b.identifiedAt - a.identifiedAt);
    return [...new Set(live.map((shard) => shard.count))].flatMap((count) => {
      const index = typeof guild === "string" ? Number((BigInt(guild) >> 22n) % BigInt(count)) : 0;
      return live.filter((shard) => shard.count === count && shard.index === index);
    });
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
    let claimed: Shard | null = null;
    const claim = (shard: Shard) => {
      // One connection at a time per shard.
      if (shard.socket !== ws) shard.socket?.terminate();
      shard.socket = ws;
      shard.readySocket = null;
      claimed = shard;
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
        const shard = claim(shardAt(i, count));
        if (heldReady.has(keyOf(i, count))) pendingReady.push(() => identify(shard, ws, d));
        else identify(shard, ws, d);
        return;
      }
      if (payload.op === 6) {
        const d = payload.d as { token: string; session_id: string; seq: number };
        const known = sessions.get(d.session_id);
        resume(claim(known ? shards.get(known.shard)! : (claimed ?? shardAt(0, 1))), ws, d);
        return;
      }
      if (claimed !== null && claimed.socket !== ws) return;
      if (payload.op === 1 && ackHeartbeats) ws.send(JSON.stringify({ op: 11 }));
    });
    ws.on("close", (code) => {
      const shard = claimed;
      if (shard && shard.socket === ws) {
        shard.socket = null;
        shard.readySocket = null;
        // Discord ends a session its client closed with 1000 or 1001: nothing more goes to it.
        if (code === 1000 || code === 1001) shard.session = null;
      }
    });
  });

  function identify(shard: Shard, ws: WebSocket, d: { token: string }) {
    if (shard.socket !== ws) return;
    if (d.token !== token) return ws.close(4004, "Authentication failed");
    const { index, count } = shard;
    shard.identifiedAt = ++identifications;
    shard.session = { id: randomUUID(), seq: 0, shard: keyOf(index, count), events: [] };
    sessions.set(shard.session.id, shard.session);
    shard.readySocket = ws;
    dispatchOn(shard, "READY", {
      v: 10,
      user: { ...STAND_IN_BOT, bot: true },
      guilds: [{ id: STAND_IN_GUILD, unavailable: true }],
      session_id: shard.session.id,
      resume_gateway_url: `ws://127.0.0.1:${port()}/resume`,
      application: { id: "100000000000000001", flags: 0 },
      shard: [index, count],
    });
    dispatchOn(shard, "GUILD_CREATE", {
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
    dispatchOn(shard, "RESUMED", null);
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
    const count = typeof body.count === "number" ? body.count : undefined;
    const shard = pick(typeof body.shard === "number" ? body.shard : 0, count);
    switch (req.url) {
      case "/control/dispatch": {
        const events = (body.events as Array<{ t: string; d: unknown }>) ?? [];
        const on = (event: { d: unknown }) =>
          typeof body.shard === "number" ? [shard] : shardsFor(event.d);
        // `seqs`: each event's number on the newest set; `deliveries`: on every shard that got it.
        const deliveries = events.map((event) =>
          on(event).map((to) => ({
            shard: [to.index, to.count],
            seq: dispatchOn(to, event.t, event.d),
          })),
        );
        return reply({
          seqs: deliveries.map((sent) => sent[0]?.seq ?? null),
          deliveries: deliveries.map((sent) => sent.filter((one) => one.seq !== null)),
        });
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
        if (Array.isArray(body.holdReady))
          heldReady = new Set(
            (body.holdReady as Array<[number, number]>).map(([i, n]) => keyOf(i, n)),
          );
        if (typeof body.ackHeartbeats === "boolean") ackHeartbeats = body.ackHeartbeats;
        if (typeof body.heartbeatMs === "number") heartbeatMs = body.heartbeatMs;
        if (typeof body.token === "string") token = body.token;
        return reply({});
      case "/control/release":
        // The held IDENTIFYs are answered now (those whose connection is still open).
        heldReady.clear();
        for (const answer of pendingReady.splice(0)) answer();
        return reply({});
      case "/control/state":
        return reply({
          connected: shard.socket !== null,
          ready: shard.readySocket !== null && shard.readySocket === shard.socket,
          connections,
          sessionId: shard.session?.id ?? null,
          seq: shard.session?.seq ?? 0,
          received,
          shards: [...shards.values()]
            .sort((a, b) => a.count - b.count || a.index - b.index)
            .map((s) => ({
              index: s.index,
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
        heldReady.clear();
        pendingReady.length = 0;
        identifications = 0;
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
