// How a Slack event maps onto the chat layer's terms, as pure functions: the room (a DM is one
// room; in channels one room per thread), whether the bot was addressed, the turn's idempotency key
// (one per channel + ts, so app_mention and message.* for one message, a retry and a repeated
// event_id are one turn), which events start no turn, edits and deletions as amendments, and the
// text as the model reads it (Slack's `<…>` entities made readable, its HTML escapes undone).
import type { AppMentionEvent, MessageEvent } from "./events.ts";

export type SlackMessageEvent = AppMentionEvent | MessageEvent;

/** Message subtypes that are still a person writing (a file upload, a thread reply also sent to the channel). */
const PERSON_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

function isDirectChannel(event: SlackMessageEvent): boolean {
  // app_mention carries no channel_type; DM channel ids start with D.
  return event.type === "message" ? event.channel_type === "im" : event.channel.startsWith("D");
}

function roomFor(channel: string, direct: boolean, threadRoot: string): string {
  return direct ? `slack:${channel}` : `slack:${channel}:${threadRoot}`;
}

/**
 * `slack:<dm channel>` for a direct message; `slack:<channel>:<thread root ts>` in a channel, where a
 * top-level message roots its own thread (the bot answers there). For message_changed and
 * message_deleted, the room of the message that changed.
 */
export function roomIdOf(event: SlackMessageEvent): string {
  const direct = isDirectChannel(event);
  if (event.type === "message" && event.subtype === "message_changed" && event.message)
    return roomFor(event.channel, direct, event.message.thread_ts ?? event.message.ts);
  if (event.type === "message" && event.subtype === "message_deleted") {
    const old = event.previous_message;
    return roomFor(
      event.channel,
      direct,
      old?.thread_ts ?? event.deleted_ts ?? old?.ts ?? event.ts,
    );
  }
  return roomFor(event.channel, direct, event.thread_ts ?? event.ts);
}

/** The thread the bot answers in: the thread's root, or the message itself at top level. */
export function replyThreadOf(event: SlackMessageEvent): string {
  return event.thread_ts ?? event.ts;
}

export interface SlackAddressing {
  /** An `<@BOT>` in the text, or an app_mention event (Slack decided it mentions the app). */
  mentionsBot: boolean;
  /** A direct message channel with the bot. */
  isDirect: boolean;
}

export function addressing(event: SlackMessageEvent, botUserId: string): SlackAddressing {
  const text = event.text ?? "";
  const mention = text.includes(`<@${botUserId}>`) || text.includes(`<@${botUserId}|`);
  return { mentionsBot: event.type === "app_mention" || mention, isDirect: isDirectChannel(event) };
}

/** The turn's idempotency key: one per message (`ts` is a message's id within its channel). */
export function turnKey(event: { channel: string; ts: string }): string {
  return messageKey(event.channel, event.ts);
}

function messageKey(channel: string, ts: string): string {
  return `slack-msg:${channel}:${ts}`;
}

/**
 * Events that start no turn: the bot's own or another bot's posts, a message without a person, and
 * subtypes other than a person writing (joins, topic changes, …). message_changed and
 * message_deleted are ignored here too: `amendmentOf` handles them.
 */
export function shouldIgnore(event: SlackMessageEvent, botUserId: string): boolean {
  if (event.bot_id !== undefined) return true;
  if (event.user === undefined || event.user === botUserId) return true;
  if (
    event.type === "message" &&
    event.subtype !== undefined &&
    !PERSON_SUBTYPES.has(event.subtype)
  )
    return true;
  return false;
}

export type SlackAmendment =
  | { kind: "edit"; key: string; roomId: string; text: string }
  | { kind: "delete"; key: string; roomId: string };

/**
 * An edit or deletion of a person's message, keyed like the turn it amends; null for anything else,
 * for the bot's (or another bot's) own messages, and for a message_changed that leaves the text as
 * it was (Slack sends one when a link preview is attached).
 */
export function amendmentOf(event: SlackMessageEvent, botUserId?: string): SlackAmendment | null {
  if (event.type !== "message") return null;
  const roomId = roomIdOf(event);
  const byBot = (m: { user?: string; bot_id?: string } | undefined) =>
    m !== undefined &&
    (m.bot_id !== undefined || (botUserId !== undefined && m.user === botUserId));
  if (event.subtype === "message_changed") {
    const now = event.message;
    if (!now || byBot(now)) return null;
    const key = messageKey(event.channel, now.ts);
    // A thread's root deleted while it has replies stays as a "tombstone".
    if (now.subtype === "tombstone") return { kind: "delete", key, roomId };
    const text = now.text ?? "";
    if (event.previous_message && event.previous_message.text === text) return null;
    return { kind: "edit", key, roomId, text };
  }
  if (event.subtype === "message_deleted") {
    const ts = event.deleted_ts ?? event.previous_message?.ts;
    if (!ts || byBot(event.previous_message)) return null;
    return { kind: "delete", key: messageKey(event.channel, ts), roomId };
  }
  return null;
}

const ESCAPES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">" };

/**
 * Slack's text as the model reads it. The bot's mention that addresses the message (at its start)
 * is removed and any other becomes `@<botName>`; other users `<@U1>` / `<@U1|ann>` become `@U1` /
 * `@ann`; `<#C1|general>` becomes `#general`; `<!here>` `@here`; links `<https://x|label>` become
 * `label (https://x)`; Slack's three HTML escapes are undone last, in one pass.
 */
export function textForModel(text: string, botUserId: string, botName: string): string {
  const id = botUserId.replace(/[^A-Za-z0-9]/g, "\\$&");
  const bot = new RegExp(`^\\s*<@${id}(?:\\|[^>]*)?>[\\s,:]*`);
  const readable = text.replace(bot, "").replace(/<([^<>]*)>/g, (_whole, inner: string) => {
    const bar = inner.indexOf("|");
    const target = bar === -1 ? inner : inner.slice(0, bar);
    const label = bar === -1 ? null : inner.slice(bar + 1);
    if (target.startsWith("@")) {
      const user = target.slice(1);
      return user === botUserId ? `@${botName}` : `@${label ?? user}`;
    }
    if (target.startsWith("#")) return `#${label ?? target.slice(1)}`;
    if (target.startsWith("!")) {
      // <!here>, <!channel>, <!subteam^S1|@team>, <!date^…|fallback>: the label when there is one.
      if (label) return label;
      return `@${target.slice(1).split("^")[0]}`;
    }
    if (label && label !== target && label !== target.replace(/^mailto:/, ""))
      return `${label} (${target})`;
    return label ?? target;
  });
  return readable.replace(/&(?:amp|lt|gt);/g, (entity) => ESCAPES[entity] ?? entity).trim();
}
