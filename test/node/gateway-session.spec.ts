// The Gateway's protocol decisions as pure functions, in plain Node: the session state machine
// (session.ts), the IDENTIFY budget (identify-gate.ts), the handed-off sequence mark
// (seq-watermark.ts) and what a message event means (message-intake.ts). Grouped by the headings
// of Discord's Gateway documentation; the same rules run against a live stand-in in test/gateway/.
import { describe, expect, it } from "vitest";
import { identifyDelayMs } from "../../src/clients/discord/gateway/identify-gate.ts";
import { GatewayMessage, readMessage } from "../../src/clients/discord/gateway/message-intake.ts";
import { RESUMABLE_CLOSE_CODE } from "../../src/clients/discord/gateway/protocol.ts";
import { SeqWatermark } from "../../src/clients/discord/gateway/seq-watermark.ts";
import { GatewaySession, type GatewayAction } from "../../src/clients/discord/gateway/session.ts";

const TOKEN = "token";
const hello = (ms = 41_250) => JSON.stringify({ op: 10, d: { heartbeat_interval: ms } });
const ready = (seq: number) =>
  JSON.stringify({
    op: 0,
    s: seq,
    t: "READY",
    d: {
      session_id: "s1",
      resume_gateway_url: "wss://resume.test",
      user: { id: "9", username: "bot" },
    },
  });
const sent = (actions: GatewayAction[]) =>
  actions.flatMap((a) => (a.kind === "send" ? [a.payload as { op: number; d: unknown }] : []));
const kinds = (actions: GatewayAction[]) => actions.map((a) => a.kind);

function readySession(random = () => 0.5) {
  const session = new GatewaySession({ token: TOKEN, random });
  session.connecting(false);
  session.frame(hello());
  session.frame(ready(1));
  return session;
}

describe("Gateway session: Hello and heartbeats", () => {
  it("waits interval x jitter before the first heartbeat, then the full interval", () => {
    const session = new GatewaySession({ token: TOKEN, random: () => 0.25 });
    session.connecting(false);
    const actions = session.frame(hello(40_000));
    expect(actions[0]).toEqual({ kind: "heartbeat_in", ms: 10_000 });
    const beat = session.heartbeatDue();
    expect(sent(beat)).toEqual([{ op: 1, d: null }]);
    expect(beat.at(-1)).toEqual({ kind: "heartbeat_in", ms: 40_000 });
  });

  it("heartbeats with the last sequence number received", () => {
    const session = readySession();
    session.frame(JSON.stringify({ op: 0, s: 7, t: "MESSAGE_CREATE", d: {} }));
    expect(sent(session.heartbeatDue())).toEqual([{ op: 1, d: 7 }]);
  });

  it("answers Discord's heartbeat request (op 1) at once", () => {
    const session = readySession();
    expect(sent(session.frame(JSON.stringify({ op: 1, d: null })))).toEqual([{ op: 1, d: 1 }]);
  });

  it("treats a heartbeat without an ACK before the next one as a zombie: close non-1000, resume", () => {
    const session = readySession();
    session.heartbeatDue();
    const zombie = session.heartbeatDue();
    expect(zombie[0]).toMatchObject({ kind: "close", code: RESUMABLE_CLOSE_CODE });
    expect(zombie[1]).toMatchObject({ kind: "reconnect", resume: true, delayMs: 0 });
  });

  it("keeps beating while ACKs come back (op 11)", () => {
    const session = readySession();
    session.heartbeatDue();
    session.frame(JSON.stringify({ op: 11 }));
    expect(kinds(session.heartbeatDue())).toEqual(["send", "heartbeat_in"]);
  });
});

describe("Gateway session: Identify, Ready and Resume", () => {
  it("identifies with the intents on a fresh connection and keeps the session from READY", () => {
    const session = new GatewaySession({ token: TOKEN, random: () => 0 });
    session.connecting(false);
    const [identify] = sent(session.frame(hello()));
    expect(identify).toEqual({
      op: 2,
      d: expect.objectContaining({ token: TOKEN, intents: 1 | 512 | 4096 | 32768 }),
    });
    expect(kinds(session.frame(ready(1)))).toEqual(["session_changed", "dispatch"]);
    expect(session.sessionId).toBe("s1");
    expect(session.resumeUrl).toBe("wss://resume.test");
    expect(session.phase).toBe("ready");
  });

  it("resumes a stored session with its sequence number after a restart", () => {
    const session = new GatewaySession({
      token: TOKEN,
      random: () => 0,
      resume: { sessionId: "s1", resumeUrl: "wss://resume.test", seq: 41 },
    });
    expect(session.canResume()).toBe(true);
    session.connecting(true);
    expect(sent(session.frame(hello()))).toEqual([
      { op: 6, d: { token: TOKEN, session_id: "s1", seq: 41 } },
    ]);
    expect(session.phase).toBe("resuming");
    session.frame(JSON.stringify({ op: 0, s: 42, t: "RESUMED", d: null }));
    expect(session.phase).toBe("ready");
  });

  it("resumes at once when asked to reconnect (op 7)", () => {
    const session = readySession();
    const actions = session.frame(JSON.stringify({ op: 7, d: null }));
    expect(actions).toEqual([
      { kind: "close", code: RESUMABLE_CLOSE_CODE, reason: "reconnect requested (op 7)" },
      { kind: "reconnect", delayMs: 0, resume: true, reason: "reconnect requested (op 7)" },
    ]);
  });
});

describe("Gateway session: Invalid Session (op 9)", () => {
  it("forgets the session and identifies again after 1 to 5 seconds when d is false", () => {
    for (const [random, wait] of [
      [0, 1_000],
      [1, 5_000],
    ] as const) {
      const session = readySession(() => random);
      const actions = session.frame(JSON.stringify({ op: 9, d: false }));
      expect(kinds(actions)).toEqual(["session_changed", "close", "reconnect"]);
      expect(actions.at(-1)).toMatchObject({ kind: "reconnect", resume: false, delayMs: wait });
      expect(session.sessionId).toBeNull();
    }
  });

  it("keeps the session and resumes when d is true", () => {
    const session = readySession();
    const actions = session.frame(JSON.stringify({ op: 9, d: true }));
    expect(actions.at(-1)).toMatchObject({ kind: "reconnect", resume: true });
    expect(session.sessionId).toBe("s1");
  });
});

describe("Gateway session: close codes", () => {
  it.each([4004, 4010, 4011, 4012, 4013, 4014])("stops for good on %i", (code) => {
    const session = readySession();
    expect(session.closed(code)).toEqual([
      { kind: "stop", code, reason: `Discord closed the Gateway with ${code}` },
    ]);
    expect(session.phase).toBe("stopped");
  });

  it.each([4007, 4009])("starts a new session (IDENTIFY) after %i", (code) => {
    const session = readySession();
    const actions = session.closed(code);
    expect(actions.at(-1)).toMatchObject({ kind: "reconnect", resume: false });
    expect(session.canResume()).toBe(false);
  });

  it.each([1000, 1001, 1006, 4000, 4008])("resumes after %i", (code) => {
    expect(readySession().closed(code).at(-1)).toMatchObject({ kind: "reconnect", resume: true });
  });

  it("backs off exponentially (with jitter, up to a minute) while connections keep failing", () => {
    const session = new GatewaySession({ token: TOKEN, random: () => 1 });
    const delays = Array.from({ length: 9 }, () => {
      const action = session.connectFailed()[0]!;
      return action.kind === "reconnect" ? action.delayMs : -1;
    });
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    session.connecting(false);
    session.frame(hello());
    session.frame(ready(1));
    expect(session.failures).toBe(0);
  });
});

describe("Gateway: IDENTIFY rate limits (session_start_limit)", () => {
  const limit = { total: 1000, remaining: 999, reset_after: 3_600_000, max_concurrency: 1 };
  it("allows one IDENTIFY per 5 seconds", () => {
    expect(identifyDelayMs(10_000, null, limit)).toBe(0);
    expect(identifyDelayMs(10_000, 8_000, limit)).toBe(3_000);
    expect(identifyDelayMs(10_000, 4_000, limit)).toBe(0);
  });

  it("waits reset_after once the daily session starts are spent", () => {
    expect(identifyDelayMs(10_000, null, { ...limit, remaining: 0 })).toBe(3_600_000);
  });
});

describe("Gateway: resume from what was handed off", () => {
  it("moves the watermark only over events finished with everything before them", () => {
    const mark = new SeqWatermark(10);
    for (const seq of [11, 12, 13]) mark.begin(seq);
    expect(mark.finish(12)).toBe(false);
    expect(mark.value).toBe(10);
    expect(mark.finish(11)).toBe(true);
    expect(mark.value).toBe(12);
    mark.finish(13);
    expect(mark.value).toBe(13);
    expect(mark.inFlight).toBe(0);
  });

  it("ignores replayed events at or below the watermark", () => {
    const mark = new SeqWatermark(5);
    mark.begin(4);
    expect(mark.finish(4)).toBe(false);
    expect(mark.value).toBe(5);
  });
});

describe("Gateway: message events (MESSAGE_CREATE)", () => {
  const bot = { userId: "9", username: "edge-bot", rolesIn: () => ["77"] };
  const message = (fields: Record<string, unknown>) =>
    GatewayMessage.parse({
      id: "1",
      channel_id: "2",
      guild_id: "3",
      author: { id: "4", username: "dana" },
      content: "hello",
      ...fields,
    });

  it("never makes a turn of the bot's own messages or of system messages", () => {
    expect(readMessage(message({ author: { id: "9", username: "edge-bot" } }), bot)).toEqual({
      kind: "ignore",
      reason: "own_message",
    });
    expect(readMessage(message({ type: 7 }), bot)).toMatchObject({ reason: "system_message" });
  });

  it("is addressed to the bot by a mention, its role, a reply to it, or a DM", () => {
    const addressed = (fields: Record<string, unknown>) => {
      const intake = readMessage(message(fields), bot);
      return intake.kind === "turn" && (intake.mentioned || intake.isDirect);
    };
    expect(addressed({})).toBe(false);
    expect(addressed({ mentions: [{ id: "9", username: "edge-bot" }] })).toBe(true);
    expect(addressed({ mention_roles: ["77"] })).toBe(true);
    expect(addressed({ type: 19, referenced_message: { author: { id: "9" } } })).toBe(true);
    expect(addressed({ guild_id: undefined })).toBe(true);
  });

  it("writes mentions as names and counts webhooks as bots", () => {
    const intake = readMessage(
      message({
        content: "<@9> ask <@!5> please",
        mentions: [
          { id: "9", username: "edge-bot" },
          { id: "5", username: "sam", global_name: "Sam" },
        ],
        webhook_id: "6",
      }),
      bot,
    );
    expect(intake).toMatchObject({
      kind: "turn",
      text: "@edge-bot ask @Sam please",
      fromBot: true,
    });
  });
});
