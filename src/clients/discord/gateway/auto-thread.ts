// autoThread: a mention in a server channel whose settings turn it on opens a public thread from
// the message (Discord: POST /channels/{channel}/messages/{message}/threads), and the conversation
// goes on there. The name comes from the message: mentions stripped, whitespace collapsed, at most
// 100 characters cut at a word. A thread started from a message takes the message's id, so a
// redelivered event (Discord answers 160004, already created) finds the same thread.
import { errorField, log } from "../../../log.ts";
import { DiscordApiError, THREAD_ALREADY_CREATED, type DiscordRest } from "../rest.ts";
import type { GatewayMessage } from "./message-intake.ts";

/** Discord's limit for a thread's name. */
export const MAX_THREAD_NAME_CHARS = 100;
/** A day without messages before Discord archives the thread (the next message reopens it). */
export const THREAD_ARCHIVE_MINUTES = 1440;

/**
 * The thread's name: the message's words without the bot's mention (nor role or channel mentions,
 * which would show as raw ids), other people as `@name`; "Conversation with <author>" when
 * nothing is left.
 */
export function threadName(message: GatewayMessage, botId: string, authorName: string): string {
  const names = new Map<string, string>();
  for (const user of message.mentions) {
    const name = user.global_name ?? user.username;
    if (name) names.set(user.id, name);
  }
  const words = message.content
    .replace(/<@!?(\d{1,20})>/g, (_, id: string) => {
      const name = id === botId ? undefined : names.get(id);
      return name ? `@${name}` : " ";
    })
    .replace(/<(?:@&|#)\d{1,20}>/g, " ")
    .replace(/<a?:(\w{1,32}):\d{1,20}>/g, ":$1:")
    .replace(/\s+/g, " ")
    .trim();
  return cutAtWord(words || `Conversation with ${authorName}`, MAX_THREAD_NAME_CHARS);
}

/** At most `max` characters (code points), cut before a word that would not fit whole. */
function cutAtWord(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const head = chars.slice(0, max + 1).join("");
  const space = head.lastIndexOf(" ");
  return space > 0 ? head.slice(0, space).trimEnd() : chars.slice(0, max).join("");
}

/**
 * Starts the thread from the message; its id, or null when Discord refused (no Create Public
 * Threads permission, a channel type without threads, an outage): the answer then stays in the
 * channel, as without autoThread.
 */
export async function openThread(
  rest: DiscordRest,
  channelId: string,
  messageId: string,
  name: string,
): Promise<string | null> {
  try {
    const thread = await rest.startThread(channelId, messageId, {
      name,
      auto_archive_duration: THREAD_ARCHIVE_MINUTES,
    });
    return thread.id ?? messageId;
  } catch (error) {
    // Started before (a redelivered event): a message's thread has the message's id.
    if (error instanceof DiscordApiError && error.code === THREAD_ALREADY_CREATED) return messageId;
    log.warn("discord_auto_thread_failed", { channelId, messageId, error: errorField(error) });
    return null;
  }
}
