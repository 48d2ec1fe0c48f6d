// DiscordGateway (binding GATEWAY) in two roles. Named by the application id, it plans the shards
// (gateway-coordinator.ts). Named `shard:<i>/<n>`, it holds one shard's Gateway WebSocket: it
// carries out what the pure session decides (session.ts: heartbeats, RESUME or IDENTIFY, backoff),
// keeps the session id, resume URL and handed-off sequence number in its storage, and passes
// message events to gateway-events.ts. A shard's alarm every minute is the watchdog: it reopens the
// connection after an eviction or a deploy, and retires the shard once the plan's count changed.
// A shard tells the coordinator when it is READY with its servers arrived (guild-arrival.ts),
// which ends a re-shard's overlap.
// Started by the worker's first request and by the cron (src/index.ts) when DISCORD_GATEWAY=true.
import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import type { DiscordGatewayRpc, GatewayStatus, ShardStatus } from "../../../rpc.ts";
import { sha256Hex } from "../../../runtime/util/hashing.ts";
import { BotRoles, StoredBotRoles } from "./bot-roles.ts";
import { StoredThreadParents, ThreadParents } from "./thread-parents.ts";
import { GatewayEvents } from "./gateway-events.ts";
import { fetchGatewayBot, gatewayUrlAllowed } from "./gateway-bot.ts";
import { coordinatorName } from "./gateway-client.ts";
import { GatewayCoordinator } from "./gateway-coordinator.ts";
import { GUILDS_ARRIVAL_WAIT_MS, GuildArrival } from "./guild-arrival.ts";
import { GatewayOpcodes, gatewayUrl } from "./protocol.ts";
import { SeqWatermark } from "./seq-watermark.ts";
import { GatewaySession, type GatewayAction } from "./session.ts";
import type { ShardId } from "./shard-plan.ts";

/** The watchdog: how often the alarm checks the connection (and reopens it). */
export const WATCHDOG_MS = 60_000;
const MESSAGE_EVENTS = new Set(["MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE"]);

const Stored = {
  session: z.object({ sessionId: z.string(), resumeUrl: z.string() }).nullable(),
  bot: z.object({ id: z.string(), username: z.string() }).nullable(),
  stopped: z.object({ code: z.number(), reason: z.string(), token: z.string() }).nullable(),
  shard: z.object({ index: z.number().int().min(0), count: z.number().int().min(1) }).nullable(),
};
/** What the per-application object kept when it held the only connection itself. */
const LEGACY_KEYS = [
  "session",
  "seq",
  "bot",
  "roles",
  "stopped",
  "lastIdentifyAt",
  "lastConnectAt",
];

export class DiscordGateway extends DurableObject<Env> implements DiscordGatewayRpc {
  private session: GatewaySession | null = null;
  private socket: WebSocket | null = null;
  private opening = false;
  private heartbeatTimer: ReturnType<typeof setTimeout> | null = null;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private arrivalTimer: ReturnType<typeof setTimeout> | null = null;
  /** Whether this shard's servers have arrived since READY (a re-shard waits for that). */
  private readonly arrival = new GuildArrival();
  /** Set in a shard object (its storage says which); null in the coordinator. */
  private shard: ShardId | null;
  /** The shard count changed and this shard stopped for good: nothing may reconnect it. */
  private retired = false;
  private readonly coordinator: GatewayCoordinator;
  private readonly watermark: SeqWatermark;
  private readonly roles: BotRoles;
  private readonly threads: ThreadParents;
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
    this.shard = Stored.shard.catch(null).parse(kv.get("shard") ?? null);
    this.coordinator = new GatewayCoordinator({
      env,
      kv,
      shard: (name) => this.namespace().getByName(name),
      wakeAt: (at) => ctx.storage.setAlarm(at),
    });
    this.watermark = new SeqWatermark(
      z
        .number()
        .int()
        .nullable()
        .catch(null)
        .parse(kv.get("seq") ?? null),
    );
    this.roles = new BotRoles(StoredBotRoles.catch({}).parse(kv.get("roles") ?? {}));
    this.threads = new ThreadParents(StoredThreadParents.catch({}).parse(kv.get("threads") ?? {}));
    this.events = new GatewayEvents({
      env,
      parentOf: (channelId) => this.threads.parentOf(channelId),
      threadOpened: (threadId, parentId, guildId) => {
        if (this.threads.opened(threadId, parentId, guildId))
          this.ctx.storage.kv.put("threads", this.threads.toJSON());
      },
      bot: () => {
        const bot = this.botUser();
        return bot
          ? { userId: bot.id, username: bot.username, rolesIn: (g) => this.roles.rolesIn(g) }
          : null;
      },
    });
  }

  // --- The coordinator (named by the application id) ---

  /** Starts every shard of the plan (and retires those of an earlier count). */
  async start(): Promise<GatewayStatus> {
    if (!this.enabled() || this.shard) return this.status();
    const { kv } = this.ctx.storage;
    if (kv.get("role") !== "coordinator") {
      // This object held the only connection before sharding: its session is no shard's.
      for (const key of LEGACY_KEYS) kv.delete(key);
      await this.ctx.storage.deleteAlarm();
      kv.put("role", "coordinator");
    }
    await this.coordinator.start();
    return this.status();
  }

  async status(): Promise<GatewayStatus> {
    return this.coordinator.status(this.enabled());
  }

  async identifySlot(
    shard: number,
    limit: { remaining: number; reset_after: number; max_concurrency: number } | null,
  ): Promise<number> {
    return this.coordinator.identifySlot(shard, limit, Date.now());
  }

  async isCurrent(count: number): Promise<boolean> {
    return this.coordinator.isCurrent(count);
  }

  async shardReady(index: number, count: number): Promise<void> {
    await this.coordinator.shardReady(index, count);
  }

  // --- A shard (named `shard:<i>/<n>`) ---

  /** Opens the connection unless it is open, opening, or Discord refused this token for good. */
  async startShard(index: number, count: number): Promise<ShardStatus> {
    const shard = Stored.shard.unwrap().parse({ index, count });
    if (shard.index >= shard.count) throw new RangeError("shard index past the shard count");
    this.retired = false;
    this.shard = shard;
    this.ctx.storage.kv.put("shard", shard);
    if (!this.enabled()) return this.shardStatus();
    await this.ensureRunning();
    // Up before a re-shard began (its READY report went before the handover): say so again.
    if (this.session?.phase === "ready" && !this.arrival.waiting) this.reportReady();
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(Date.now() + WATCHDOG_MS);
    return this.shardStatus();
  }

  async shardStatus(): Promise<ShardStatus> {
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

  /** The shard count changed: close for good (1000 ends the session at Discord) and forget all. */
  async retire(): Promise<void> {
    this.retired = true;
    const socket = this.socket;
    this.socket = null;
    this.session = null;
    this.clearHeartbeat();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    if (this.arrivalTimer) clearTimeout(this.arrivalTimer);
    this.arrivalTimer = null;
    try {
      socket?.close(1000, "resharding");
    } catch {
      // Already closed.
    }
    if (this.shard) log.info("gateway_shard_retired", { ...this.shard });
    this.shard = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /** The watchdog: reopens a connection lost to an eviction, a deploy or a failure. */
  override async alarm(): Promise<void> {
    if (!this.enabled()) return;
    const shard = this.shard;
    if (!shard && this.ctx.storage.kv.get("role") === "coordinator") {
      // The coordinator's own alarm: a re-shard's deadline.
      await this.coordinator
        .wake()
        .catch((error: unknown) => log.error("gateway_wake_failed", { error: errorField(error) }));
      return;
    }
    if (!shard) {
      // The per-application object's watchdog from before sharding: start the shards instead.
      await this.start().catch((error: unknown) =>
        log.error("gateway_start_failed", { error: errorField(error) }),
      );
      return;
    }
    const current = await this.coordinatorStub()
      .isCurrent(shard.count)
      .catch(() => true);
    if (!current) return this.retire();
    await this.ensureRunning();
    if (!this.stoppedFor(await this.tokenFingerprint()))
      await this.ctx.storage.setAlarm(Date.now() + WATCHDOG_MS);
  }

  private enabled(): boolean {
    return loadConfig(this.env).discordGateway && Boolean(this.env.DISCORD_BOT_TOKEN);
  }

  private namespace(): DurableObjectNamespace<DiscordGatewayRpc> {
    if (!this.env.GATEWAY) throw new Error("the GATEWAY binding is missing");
    return this.env.GATEWAY;
  }

  private coordinatorStub(): DurableObjectStub<DiscordGatewayRpc> {
    return this.namespace().getByName(coordinatorName(this.env));
  }

  private async ensureRunning(): Promise<void> {
    if (!this.shard || this.retired) return;
    if (this.socket || this.opening || this.reconnectTimer) return;
    if (this.stoppedFor(await this.tokenFingerprint())) return;
    this.session ??= new GatewaySession({
      token: this.env.DISCORD_BOT_TOKEN ?? "",
      random: Math.random,
      resume: this.storedResume(),
      shard: this.shard,
    });
    await this.openConnection(this.session.canResume());
  }

  private async openConnection(resume: boolean): Promise<void> {
    const session = this.session;
    const shard = this.shard;
    if (!session || !shard || this.socket || this.opening) return;
    this.opening = true;
    try {
      // Storage throws in an instance that was reset (an eviction's leftovers): it must not connect.
      this.ctx.storage.kv.put("lastConnectAt", Date.now());
      let url: string;
      if (resume && session.canResume()) url = gatewayUrl(session.resumeUrl!);
      else {
        const info = await fetchGatewayBot(this.env);
        // Shards share Discord's IDENTIFY buckets: the coordinator hands out the slots.
        const wait = await this.coordinatorStub().identifySlot(
          shard.index,
          info.session_start_limit ?? null,
        );
        if (this.session !== session) return;
        if (wait > 0) {
          log.info("gateway_identify_waits", { shard: shard.index, ms: wait });
          this.scheduleReconnect(wait, false);
          return;
        }
        if ((info.shards ?? 1) > shard.count)
          log.warn("gateway_sharding_recommended", { shards: info.shards, running: shard.count });
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
    if (this.retired) return;
    this.stats.lastEvent = event;
    this.stats.lastEventAt = Date.now();
    this.watermark.begin(seq);
    const finished = () => {
      if (this.watermark.finish(seq) && !this.retired)
        this.ctx.storage.kv.put("seq", this.watermark.value);
    };
    // The coordinator retires the old shards of a re-shard once every new one has its servers.
    if (this.arrival.note(event, data)) this.reportReady();
    if (event === "READY" && this.arrival.waiting) this.awaitGuilds();
    const bot = this.botUser();
    if (bot && this.roles.note(event, data, bot.id))
      this.ctx.storage.kv.put("roles", this.roles.toJSON());
    if (this.threads.note(event, data)) this.ctx.storage.kv.put("threads", this.threads.toJSON());
    if (MESSAGE_EVENTS.has(event)) void this.events.handle(event, data).finally(finished);
    else finished();
  }

  /** A server in an outage may not arrive for long: the shard is ready after a bounded wait. */
  private awaitGuilds(): void {
    if (this.arrivalTimer) clearTimeout(this.arrivalTimer);
    this.arrivalTimer = setTimeout(() => {
      this.arrivalTimer = null;
      if (this.arrival.expire()) this.reportReady();
    }, GUILDS_ARRIVAL_WAIT_MS);
  }

  private reportReady(): void {
    const shard = this.shard;
    if (!shard || this.retired) return;
    void this.coordinatorStub()
      .shardReady(shard.index, shard.count)
      .catch((error: unknown) =>
        // The coordinator's deadline alarm asks the shards itself.
        log.warn("gateway_ready_report_failed", { ...shard, error: errorField(error) }),
      );
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
}
