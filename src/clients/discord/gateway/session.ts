// The Gateway session as a pure state machine: what to send, when to heartbeat, and whether a
// lost connection resumes or starts over. Each input (a frame, a timer, a close) returns the
// actions for the Durable Object to carry out; time and randomness are passed in, so every rule
// is unit-tested in plain Node (test/node/gateway-session.spec.ts). Rules from Discord's Gateway
// docs: the first heartbeat after HELLO waits interval x jitter; a heartbeat without an ACK before
// the next one means a zombie connection (close, resume); op 7 asks to resume at once; op 9 with
// `d: false` ends the session (wait 1-5 s, IDENTIFY anew); close codes decide the rest.
import {
  FATAL_CLOSE_CODES,
  GatewayOpcodes,
  GatewayPayload,
  HelloData,
  heartbeatPayload,
  identifyPayload,
  ReadyData,
  RESUMABLE_CLOSE_CODE,
  resumePayload,
  SESSION_ENDING_CLOSE_CODES,
} from "./protocol.ts";

export type SessionPhase =
  | "disconnected"
  | "connecting"
  | "identifying"
  | "resuming"
  | "ready"
  | "stopped";

/** What a RESUME needs, kept in the object's storage across evictions. */
export interface ResumeState {
  sessionId: string;
  resumeUrl: string;
  seq: number;
}

export type GatewayAction =
  | { kind: "send"; payload: object }
  /** Close the socket ourselves; the reconnect that follows is its own action. */
  | { kind: "close"; code: number; reason: string }
  | { kind: "heartbeat_in"; ms: number }
  /** Open a new connection after `delayMs`: resuming when the session allows it. */
  | { kind: "reconnect"; delayMs: number; resume: boolean; reason: string }
  | { kind: "dispatch"; event: string; seq: number; data: unknown }
  /** The session (id, resume URL) changed: store it. */
  | { kind: "session_changed" }
  /** Discord refused for good (bad token, disallowed intents, sharding required). */
  | { kind: "stop"; code: number; reason: string };

export interface SessionOptions {
  token: string;
  random: () => number;
  /** A session left by an earlier instance of the object. */
  resume?: ResumeState | null;
  /** Which shard this connection is (IDENTIFY's `shard`); default [0, 1]. */
  shard?: { index: number; count: number };
}

/** After op 9, Discord asks for a random wait of 1 to 5 seconds before the next IDENTIFY. */
export const INVALID_SESSION_MIN_WAIT_MS = 1_000;
export const INVALID_SESSION_MAX_WAIT_MS = 5_000;
/** Backoff for connections that fail before READY/RESUMED. */
export const RECONNECT_BASE_MS = 1_000;
export const RECONNECT_MAX_MS = 60_000;

export class GatewaySession {
  phase: SessionPhase = "disconnected";
  sessionId: string | null;
  resumeUrl: string | null;
  /** The last sequence number received (heartbeats carry it). */
  seq: number | null;
  heartbeatMs: number | null = null;
  /** A heartbeat went out and its ACK has not come back yet. */
  awaitingAck = false;
  botUser: { id: string; username: string } | null = null;
  /** Connections in a row that ended before READY or RESUMED: the backoff grows with them. */
  failures = 0;
  private readonly options: SessionOptions;
  /** Whether the connection being opened resumes (else it identifies). */
  private resuming = false;

  constructor(options: SessionOptions) {
    this.options = options;
    this.sessionId = options.resume?.sessionId ?? null;
    this.resumeUrl = options.resume?.resumeUrl ?? null;
    this.seq = options.resume?.seq ?? null;
  }

  /** Whether the next connection can RESUME (a session, its URL and a sequence number). */
  canResume(): boolean {
    return this.sessionId !== null && this.resumeUrl !== null && this.seq !== null;
  }

  /** A socket is being opened; `resume` says which handshake follows HELLO. */
  connecting(resume: boolean): void {
    this.phase = "connecting";
    this.resuming = resume && this.canResume();
    this.awaitingAck = false;
    this.heartbeatMs = null;
  }

  /** One text frame from the socket. */
  frame(raw: string): GatewayAction[] {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return [];
    }
    const parsed = GatewayPayload.safeParse(json);
    if (!parsed.success) return [];
    const payload = parsed.data;
    if (typeof payload.s === "number") this.seq = payload.s;
    switch (payload.op) {
      case GatewayOpcodes.Hello:
        return this.hello(payload.d);
      case GatewayOpcodes.HeartbeatAck:
        this.awaitingAck = false;
        return [];
      case GatewayOpcodes.Heartbeat:
        // Discord may ask for a heartbeat at any time: answer at once (the schedule stays).
        return [{ kind: "send", payload: heartbeatPayload(this.seq) }];
      case GatewayOpcodes.Reconnect:
        return this.drop("reconnect requested (op 7)", 0, true);
      case GatewayOpcodes.InvalidSession:
        return this.invalidSession(payload.d === true);
      case GatewayOpcodes.Dispatch:
        return this.dispatch(payload);
      default:
        return [];
    }
  }

  /** The heartbeat timer fired. */
  heartbeatDue(): GatewayAction[] {
    if (this.heartbeatMs === null || this.phase === "disconnected" || this.phase === "stopped")
      return [];
    // No ACK since the last heartbeat: the connection is a zombie (Discord's docs).
    if (this.awaitingAck) return this.drop("no heartbeat ACK", 0, true);
    this.awaitingAck = true;
    return [
      { kind: "send", payload: heartbeatPayload(this.seq) },
      { kind: "heartbeat_in", ms: this.heartbeatMs },
    ];
  }

  /** The socket closed without us asking (Discord closed it, or the network did). */
  closed(code: number): GatewayAction[] {
    if (this.phase === "stopped") return [];
    const wasUp = this.phase === "ready";
    this.phase = "disconnected";
    this.heartbeatMs = null;
    if (FATAL_CLOSE_CODES.has(code)) {
      this.phase = "stopped";
      return [{ kind: "stop", code, reason: `Discord closed the Gateway with ${code}` }];
    }
    const ended = SESSION_ENDING_CLOSE_CODES.has(code);
    if (ended) this.forgetSession();
    if (!wasUp) this.failures += 1;
    return [
      ...(ended ? [{ kind: "session_changed" } as const] : []),
      {
        kind: "reconnect",
        delayMs: wasUp ? 0 : this.backoffMs(),
        resume: this.canResume(),
        reason: `closed with ${code}`,
      },
    ];
  }

  /** The socket could not be opened at all. */
  connectFailed(): GatewayAction[] {
    this.phase = "disconnected";
    this.failures += 1;
    return [
      {
        kind: "reconnect",
        delayMs: this.backoffMs(),
        resume: this.canResume(),
        reason: "connect failed",
      },
    ];
  }

  backoffMs(): number {
    const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** (this.failures - 1));
    return Math.round(ceiling * (0.5 + this.options.random() / 2));
  }

  private hello(data: unknown): GatewayAction[] {
    const hello = HelloData.safeParse(data);
    if (!hello.success) return [];
    this.heartbeatMs = hello.data.heartbeat_interval;
    // The first heartbeat waits interval x jitter, so a fleet reconnecting at once does not beat in step.
    const first: GatewayAction = {
      kind: "heartbeat_in",
      ms: Math.round(hello.data.heartbeat_interval * this.options.random()),
    };
    if (this.resuming && this.canResume()) {
      this.phase = "resuming";
      const resume = resumePayload(this.options.token, this.sessionId!, this.seq!);
      return [first, { kind: "send", payload: resume }];
    }
    this.phase = "identifying";
    return [
      first,
      { kind: "send", payload: identifyPayload(this.options.token, this.options.shard) },
    ];
  }

  private dispatch(payload: GatewayPayload): GatewayAction[] {
    const event = payload.t ?? "";
    const seq = payload.s ?? this.seq ?? 0;
    if (event === "READY") {
      const ready = ReadyData.safeParse(payload.d);
      if (!ready.success) return [];
      this.sessionId = ready.data.session_id;
      this.resumeUrl = ready.data.resume_gateway_url;
      this.botUser = { id: ready.data.user.id, username: ready.data.user.username };
      this.phase = "ready";
      this.failures = 0;
      return [{ kind: "session_changed" }, { kind: "dispatch", event, seq, data: payload.d }];
    }
    if (event === "RESUMED") {
      this.phase = "ready";
      this.failures = 0;
      return [{ kind: "dispatch", event, seq, data: payload.d }];
    }
    return [{ kind: "dispatch", event, seq, data: payload.d }];
  }

  private invalidSession(resumable: boolean): GatewayAction[] {
    if (!resumable) this.forgetSession();
    const wait =
      INVALID_SESSION_MIN_WAIT_MS +
      this.options.random() * (INVALID_SESSION_MAX_WAIT_MS - INVALID_SESSION_MIN_WAIT_MS);
    const actions = this.drop(
      resumable ? "invalid session (resumable)" : "invalid session",
      Math.round(wait),
      resumable,
    );
    return resumable ? actions : [{ kind: "session_changed" }, ...actions];
  }

  /** We end this connection ourselves and open another. */
  private drop(reason: string, delayMs: number, resume: boolean): GatewayAction[] {
    this.phase = "disconnected";
    this.heartbeatMs = null;
    this.awaitingAck = false;
    // A non-1000 code keeps the session resumable on Discord's side; an ended one gets 1000.
    const code = resume && this.canResume() ? RESUMABLE_CLOSE_CODE : 1000;
    return [
      { kind: "close", code, reason },
      { kind: "reconnect", delayMs, resume: resume && this.canResume(), reason },
    ];
  }

  private forgetSession(): void {
    this.sessionId = null;
    this.resumeUrl = null;
    this.seq = null;
  }
}
