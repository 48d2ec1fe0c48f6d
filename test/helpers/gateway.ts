// The Discord Gateway stand-in (test/peers/gateway-stand-in.ts) from tests in workerd: its control
// API, message events shaped as Discord sends them, and waiting for what the bot does.
import { inject } from "vitest";
import { STAND_IN_BOT, STAND_IN_BOT_ROLE, STAND_IN_GUILD } from "../peers/gateway-ids.ts";
import { snowflake } from "./discord.ts";

export { STAND_IN_BOT, STAND_IN_BOT_ROLE, STAND_IN_GUILD };

export interface GatewayState {
  connected: boolean;
  ready: boolean;
  connections: number;
  sessionId: string | null;
  seq: number;
  received: Array<{ op: number; d: unknown; at: number }>;
}

export function gatewayPeer() {
  return inject("gatewayPeer");
}

/**
 * The control calls of one Gateway stand-in: the shared one (below), or a file's own
 * (test/setup/gateway-peer.ts), for a file whose connection must be nobody else's.
 */
export function peerControls(peer: () => { controlUrl: string }) {
  async function control<T = Record<string, unknown>>(path: string, body: unknown = {}) {
    const response = await fetch(`${peer().controlUrl}/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    return (await response.json()) as T;
  }
  return {
    control,
    dispatch: async (...events: Array<{ t: string; d: unknown }>): Promise<number[]> =>
      (await control<{ seqs: number[] }>("dispatch", { events })).seqs,
    /** Waits until the worker's session on this stand-in is READY. */
    waitForSession: () =>
      waitFor(
        "a ready Gateway session",
        async () => (await control<{ ready: boolean }>("state")).ready,
      ),
  };
}

const shared = peerControls(gatewayPeer);
export const control = shared.control;

export const gatewayState = () => control<GatewayState>("state");

/** Polls until `check` answers something truthy. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The bot is connected and its session is ready (identified or resumed). */
export const waitForReady = () =>
  waitFor("a ready Gateway session", async () => {
    const state = await gatewayState();
    return state.ready ? state : null;
  });

export interface MessageOptions {
  id?: string;
  user?: string;
  userName?: string;
  /** Mentions the bot (`<@bot>` in the text and in `mentions`). */
  mention?: boolean;
  /** Mentions the bot's managed role. */
  mentionRole?: boolean;
  /** Replies to a message of `replyTo` (the bot's id for a reply to the bot). */
  replyTo?: string;
  bot?: boolean;
  /** null: a DM (no guild). */
  guild?: string | null;
  attachments?: Array<{ url: string; filename: string; content_type?: string }>;
}

export function messageEvent(channel: string, text: string, o: MessageOptions = {}) {
  const user = o.user ?? "700000000000000001";
  const guild = o.guild === undefined ? STAND_IN_GUILD : o.guild;
  return {
    t: "MESSAGE_CREATE",
    d: {
      id: o.id ?? snowflake(),
      channel_id: channel,
      ...(guild ? { guild_id: guild } : {}),
      author: { id: user, username: o.userName ?? "dana", global_name: "Dana", bot: o.bot },
      content: o.mention ? `<@${STAND_IN_BOT.id}> ${text}` : text,
      type: o.replyTo ? 19 : 0,
      mentions: o.mention ? [{ ...STAND_IN_BOT, bot: true }] : [],
      mention_roles: o.mentionRole ? [STAND_IN_BOT_ROLE] : [],
      attachments: o.attachments ?? [],
      referenced_message: o.replyTo
        ? { id: snowflake(), author: { id: o.replyTo, username: "someone" }, content: "earlier" }
        : null,
      timestamp: new Date().toISOString(),
    },
  };
}

export const dispatch = shared.dispatch;
