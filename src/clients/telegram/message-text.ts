// Reading a Telegram message for the chat layer: which room it belongs to, whether it is addressed
// to the bot (a mention, a reply to the bot, a command), the text the model sees, and who wrote it.
// Pure functions over a validated message. Entity offsets and lengths count UTF-16 code units
// (Bot API, MessageEntity), which is what JS string indices count, so slices need no conversion.
import type { MessageEntity, TelegramMessage, TelegramUser } from "./update.ts";

/** The bot as getMe describes it. */
export interface TelegramBotIdentity {
  id: number;
  username: string;
}

export interface Addressing {
  mentionsBot: boolean;
  replyToBot: boolean;
  /** The command's name, lower-cased, without `/` or `@bot` (`ask`), when the message is one for us. */
  command: string | null;
}

/** What roomIdOf needs: a message, or the message a callback query's button was on. */
export interface MessagePlace {
  chat: { id: number };
  message_thread_id?: number;
  is_topic_message?: boolean;
}

/**
 * `telegram:<chat id>`, or `telegram:<chat id>:<topic>` for a forum topic. `message_thread_id` is
 * also set on ordinary reply threads in supergroups, so only `is_topic_message: true` keys a topic:
 * otherwise every reply chain would split the group into a room of its own.
 */
export function roomIdOf(message: MessagePlace): string {
  const chat = String(message.chat.id);
  if (message.is_topic_message === true && message.message_thread_id !== undefined)
    return `telegram:${chat}:${String(message.message_thread_id)}`;
  return `telegram:${chat}`;
}

/** `/cmd` or `/cmd@botname` (Bot API: commands are 1-32 of a-z, 0-9 and _; usernames 5-32). */
const COMMAND = /^\/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{1,64}))?$/;

/** A message read once: whether it is addressed to the bot, and the text the model sees. */
export interface ReadMessage extends Addressing {
  /** The text (or caption) without the bot's own mentions and a leading command of ours. */
  text: string;
  /** A mention, a reply to the bot or a command of ours. */
  addressed: boolean;
}

/** One pass over the message's entities: what addresses the bot, and what to cut from the text. */
export function readMessage(message: TelegramMessage, bot: TelegramBotIdentity): ReadMessage {
  const { text, entities } = textAndEntities(message);
  let mentionsBot = false;
  let command: string | null = null;
  const cuts: Array<[number, number]> = [];
  for (const entity of entities) {
    const slice = entitySlice(text, entity);
    if (slice === null) continue;
    const mention =
      (entity.type === "mention" && isBotMention(slice, bot)) ||
      (entity.type === "text_mention" && entity.user?.id === bot.id);
    const own =
      entity.type === "bot_command" && entity.offset === 0 ? ownCommand(slice, bot) : null;
    if (mention) mentionsBot = true;
    if (entity.type === "bot_command" && entity.offset === 0) command = own;
    if (mention || own !== null) cuts.push([entity.offset, entity.offset + entity.length]);
  }
  const replyToBot = repliesToBot(message, bot);
  return {
    mentionsBot,
    replyToBot,
    command,
    addressed: mentionsBot || replyToBot || command !== null,
    text: cutText(text, cuts),
  };
}

export function addressing(message: TelegramMessage, bot: TelegramBotIdentity): Addressing {
  const { mentionsBot, replyToBot, command } = readMessage(message, bot);
  return { mentionsBot, replyToBot, command };
}

/** The text (or caption) without the bot's own mentions and a leading command of ours, trimmed. */
export function textForModel(message: TelegramMessage, bot: TelegramBotIdentity): string {
  return readMessage(message, bot).text;
}

/** The text with the bot's own entities cut out, trimmed. */
function cutText(text: string, cuts: Array<[number, number]>): string {
  // From the end, so earlier offsets stay valid; overlapping entities are cut once.
  const ordered = [...cuts].sort((a, b) => b[0] - a[0]);
  let out = text;
  let floor = Number.POSITIVE_INFINITY;
  for (const [start, rawEnd] of ordered) {
    const end = Math.min(rawEnd, floor);
    if (end <= start) continue;
    // "hey @bot what" → "hey what": take one following space when one precedes the cut.
    const spaceAfter = out[end] === " " && (start === 0 || /\s/.test(out[start - 1]!));
    out = out.slice(0, start) + out.slice(spaceAfter ? end + 1 : end);
    floor = start;
  }
  out = out.trim();
  // "@bot, what is x" → "what is x".
  if (ordered.some(([start]) => text.slice(0, start).trim() === ""))
    out = out.replace(/^[,:;]\s*/, "");
  return out.trim();
}

/** First and last name, else the username, else the id. */
export function senderName(user: TelegramUser): string {
  const name = [user.first_name, user.last_name ?? ""].join(" ").trim();
  if (name !== "") return name;
  if (user.username) return user.username;
  return String(user.id);
}

function textAndEntities(message: TelegramMessage): { text: string; entities: MessageEntity[] } {
  if (message.text !== undefined) return { text: message.text, entities: message.entities ?? [] };
  return { text: message.caption ?? "", entities: message.caption_entities ?? [] };
}

/** The entity's text, or null when its range does not lie inside the text. */
function entitySlice(text: string, entity: MessageEntity): string | null {
  if (entity.length === 0 || entity.offset + entity.length > text.length) return null;
  return text.slice(entity.offset, entity.offset + entity.length);
}

/** Telegram usernames are case-insensitive. */
function isBotMention(slice: string, bot: TelegramBotIdentity): boolean {
  return slice.toLowerCase() === `@${bot.username.toLowerCase()}`;
}

/** The command's name when it is for us: no `@bot` suffix, or ours; a command for another bot is not. */
function ownCommand(slice: string, bot: TelegramBotIdentity): string | null {
  const match = COMMAND.exec(slice);
  if (!match) return null;
  const target = match[2];
  if (target !== undefined && target.toLowerCase() !== bot.username.toLowerCase()) return null;
  return match[1]!.toLowerCase();
}

/**
 * In a forum topic, a message that replies to nobody still carries `reply_to_message`: the topic's
 * first (service) message, whose id is the topic's `message_thread_id`. If the bot created the
 * topic, that is not a reply to the bot.
 */
function repliesToBot(message: TelegramMessage, bot: TelegramBotIdentity): boolean {
  const replied = message.reply_to_message;
  if (!replied || replied.from?.id !== bot.id) return false;
  return !(message.is_topic_message === true && replied.message_id === message.message_thread_id);
}
