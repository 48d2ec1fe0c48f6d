// DiscordGateway: one Durable Object per application (binding GATEWAY, named by the application
// id) that holds the bot's Gateway WebSocket. It carries out what the pure session decides
// (session.ts: heartbeats, RESUME or IDENTIFY, backoff), keeps the session id, resume URL and the
// handed-off sequence number in its storage, and passes message events to gateway-events.ts. An
// alarm every minute is the watchdog: it reopens the connection after an eviction or a deploy.
// Started by the worker's first request and by the cron (src/index.ts) when DISCORD_GATEWAY=true.
import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import type { DiscordGatewayRpc, GatewayStatus } from "../../../rpc.ts";
import { sha256Hex } from "../../../runtime/util/hashing.ts";
import { BotRoles, StoredBotRoles } from "./bot-roles.ts";
import { GatewayEvents } from "./gateway-events.ts";
import { fetchGatewayBot, gatewayUrlAllowed } from "./gateway-bot.ts";
import { identifyDelayMs } from "./identify-gate.ts";
import { GatewayOpcodes, gatewayUrl } from "./protocol.ts";
import { SeqWatermark } from "./seq-watermark.ts";
import { GatewaySession, type GatewayAction } from "./session.ts";

/** The watchdog: how often the alarm checks the connection (and reopens it). */
export const WATCHDOG_MS = 60_000;
const MESSAGE_EVENTS = new Set(["MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE"]);

const Stored = {
  session: z.object({ sessionId: z.string(), resumeUrl: z.string() }).nullable(),
  bot: z.object({ id: z.string(), username: z.string() }).nullable(),
  stopped: z.object({ code: z.number(), reason: z.string(), token: z.string() }).nullable(),
};

export class DiscordGateway extends DurableObject<Env> implements DiscordGatewayRpc {
  private session: GatewaySession | null = null;
  private socket: WebSocket | null = null;
  private opening = false;
  private heartbeatTimer: ReturnType<typeof setTimeout> | null = null;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly watermark: SeqWatermark;
  private readonly roles: BotRoles;
  private readonly events: GatewayEvents;
  private readonly stats = {
    reconnects: 0,
    identifies: 0,
    resumes: 0,
    lastEvent: null as string | null,
    lastEventAt: null as number | null,
    lastClose: null as { code: number; at: number } | null,
  };

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const kv = ctx.storage.kv;
    this.watermark = new SeqWatermark(
      z
        .number()
        .int()
        .nullable()
        .catch(null)
        .parse(kv.get("seq") ?? null),
    );
    this.roles = new BotRoles(StoredBotRoles.catch({}).parse(kv.get("roles") ?? {}));
    this.events = new GatewayEvents({
      env,
      bot: () => {
        const bot = this.botUser();
        return bot
          ? { userId: bot.id, username: bot.username, rolesIn: (g) => this.roles.rolesIn(g) }
          : null;
      },
    });
  }

  /** Opens the connection unless it is open, opening, or Discord refused this token for good. */
  async start(): Promise<GatewayStatus> {
    if (!this.enabled()) return this.status();
    await this.ensureRunning();
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(Date.now() + WATCHDOG_MS);
    return this.status();
  }

  async status(): Promise<GatewayStatus> {
    const session = this.session;
    const stopped = this.stoppedFor(await this.tokenFingerprint());
    const phase = stopped ? "stopped" : (session?.phase ?? "disconnected");
    return {
      state: this.enabled() ? phase : "off",
      connected: session?.phase === "ready" && this.socket !== null,
      resuming: session?.phase === "resuming",
      ...this.stats,
      eventsHandled: this.events.handled,
      inFlight: this.watermark.inFlight,
      stoppedReason: stopped?.reason ?? null,
    };
  }

  /** The watchdog: reopens a connection lost to an eviction, a deploy or a failure. */
  override async alarm(): Promise<void> {
    if (!this.enabled()) return;
    await this.ensureRunning();
    if (!this.stoppedFor(await this.tokenFingerprint()))
      await this.ctx.storage.setAlarm(Date.now() + WATCHDOG_MS);
  }

  private enabled(): boolean {
    return loadConfig(this.env).discordGateway && Boolean(this.env.DISCORD_BOT_TOKEN);
  }

  private async ensureRunning(): Promise<void> {
    if (this.socket || this.opening || this.reconnectTimer) return;
    if (this.stoppedFor(await this.tokenFingerprint())) return;
    this.session ??= new GatewaySession({
      token: this.env.DISCORD_BOT_TOKEN ?? "",
      random: Math.random,
      resume: this.storedResume(),
    });
    await this.openConnection(this.session.canResume());
  }

  private async openConnection(resume: boolean): Promise<void> {
    const session = this.session;
    if (!session || this.socket || this.opening) return;
    this.opening = true;
    try {
      // Storage throws in an instance that was reset (an eviction's leftovers): it must not connect.
      this.ctx.storage.kv.put("lastConnectAt", Date.now());
      let url: string;
      if (resume && session.canResume()) url = gatewayUrl(session.resumeUrl!);
      else {
        const info = await fetchGatewayBot(this.env);
        const wait = identifyDelayMs(Date.now(), this.lastIdentifyAt(), info.session_start_limit);
        if (wait > 0) {
          log.info("gateway_identify_waits", { ms: wait });
          this.scheduleReconnect(wait, false);
          return;
        }
        if ((info.shards ?? 1) > 1)
          log.warn("gateway_sharding_recommended", { shards: info.shards });
        url = gatewayUrl(info.url);
      }
      if (!gatewayUrlAllowed(url, loadConfig(this.env).allowLoopbackFetch))
        throw new Error("the Gateway URL is not wss:// (or loopback ws:// in development)");
      session.connecting(resume);
      const socket = new WebSocket(url);
      this.socket = socket;
      socket.addEventListener("message", (event) => {
        if (this.socket === socket && typeof event.data === "string")
          this.apply(session.frame(event.data));
      });
      socket.addEventListener("close", (event) => this.lost(socket, event.code));
      socket.addEventListener("error", () => this.lost(socket, 1006));
    } catch (error) {
      log.warn("gateway_connect_failed", { error: errorField(error) });
      this.apply(session.connectFailed());
    } finally {
      this.opening = false;
    }
  }

  /** The socket closed (or failed) without us closing it. */
  private lost(socket: WebSocket, code: number): void {
    if (this.socket !== socket || !this.session) return;
    this.socket = null;
    this.clearHeartbeat();
    this.stats.lastClose = { code, at: Date.now() };
    log.info("gateway_closed", { code });
    this.apply(this.session.closed(code));
  }

  private apply(actions: GatewayAction[]): void {
    for (const action of actions) {
      switch (action.kind) {
        case "send":
          this.send(action.payload);
          break;
        case "close": {
          const socket = this.socket;
          this.socket = null;
          this.clearHeartbeat();
          this.stats.lastClose = { code: action.code, at: Date.now() };
          log.info("gateway_closing", { code: action.code, reason: action.reason });
          try {
            socket?.close(action.code, action.reason);
          } catch {
            // Already closed.
          }
          break;
        }
        case "heartbeat_in":
          this.clearHeartbeat();
          this.heartbeatTimer = setTimeout(() => {
            this.heartbeatTimer = null;
            if (this.session) this.apply(this.session.heartbeatDue());
          }, action.ms);
          break;
        case "reconnect":
          this.stats.reconnects += 1;
          this.scheduleReconnect(action.delayMs, action.resume);
          break;
        case "session_changed":
          this.saveSession();
          break;
        case "dispatch":
          this.dispatch(action.event, action.seq, action.data);
          break;
        case "stop":
          log.error("gateway_stopped", { code: action.code, reason: action.reason });
          void this.stop(action.code, action.reason);
          break;
      }
    }
  }

  private send(payload: object): void {
    const op = (payload as { op?: unknown }).op;
    if (op === GatewayOpcodes.Identify) {
      this.stats.identifies += 1;
      this.ctx.storage.kv.put("lastIdentifyAt", Date.now());
    } else if (op === GatewayOpcodes.Resume) this.stats.resumes += 1;
    try {
      this.socket?.send(JSON.stringify(payload));
    } catch (error) {
      log.warn("gateway_send_failed", { op: String(op), error: errorField(error) });
    }
  }

  private dispatch(event: string, seq: number, data: unknown): void {
    this.stats.lastEvent = event;
    this.stats.lastEventAt = Date.now();
    this.watermark.begin(seq);
    const finished = () => {
      if (this.watermark.finish(seq)) this.ctx.storage.kv.put("seq", this.watermark.value);
    };
    const bot = this.botUser();
    if (bot && this.roles.note(event, data, bot.id))
      this.ctx.storage.kv.put("roles", this.roles.toJSON());
    if (MESSAGE_EVENTS.has(event)) void this.events.handle(event, data).finally(finished);
    else finished();
  }

  private scheduleReconnect(delayMs: number, resume: boolean): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.openConnection(resume);
    }, delayMs);
  }

  private clearHeartbeat(): void {
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  /** A new session numbers events from 1: the handed-off mark starts over with it. */
  private saveSession(): void {
    const session = this.session;
    if (!session) return;
    const { kv } = this.ctx.storage;
    if (session.sessionId && session.resumeUrl) {
      kv.put("session", { sessionId: session.sessionId, resumeUrl: session.resumeUrl });
      if (session.botUser) kv.put("bot", session.botUser);
    } else kv.delete("session");
    this.watermark.reset(null);
    kv.delete("seq");
  }

  private async stop(code: number, reason: string): Promise<void> {
    this.ctx.storage.kv.put("stopped", { code, reason, token: await this.tokenFingerprint() });
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    await this.ctx.storage.deleteAlarm();
  }

  /** A refusal stands until the token changes (a new secret is a new chance). */
  private stoppedFor(token: string): z.infer<typeof Stored.stopped> {
    const stopped = Stored.stopped.catch(null).parse(this.ctx.storage.kv.get("stopped") ?? null);
    return stopped && stopped.token === token ? stopped : null;
  }

  private async tokenFingerprint(): Promise<string> {
    return (await sha256Hex(this.env.DISCORD_BOT_TOKEN ?? "")).slice(0, 16);
  }

  private storedResume() {
    const kv = this.ctx.storage.kv;
    const session = Stored.session.catch(null).parse(kv.get("session") ?? null);
    const seq = this.watermark.value;
    return session && seq !== null ? { ...session, seq } : null;
  }

  private botUser(): { id: string; username: string } | null {
    return (
      this.session?.botUser ?? Stored.bot.catch(null).parse(this.ctx.storage.kv.get("bot") ?? null)
    );
  }

  private lastIdentifyAt(): number | null {
    return z
      .number()
      .nullable()
      .catch(null)
      .parse(this.ctx.storage.kv.get("lastIdentifyAt") ?? null);
  }
}
