// What the bot reads from a Telegram Bot API Update, validated with zod after the webhook's secret
// check: `message`, `edited_message` and `callback_query`. Unknown fields are accepted and dropped
// (Telegram adds fields with every Bot API version); an Update of another kind (`channel_post`,
// `my_chat_member`, …) parses with none of our fields set. A failure names the path, never the value.
import { z } from "zod";

/** Telegram's text limit is 4,096 and a caption's 1,024 (4,096 for Premium); twice that, as slack. */
const MAX_TEXT_CHARS = 8_192;
const MAX_ENTITIES = 1_000;
/** A photo comes in a handful of sizes. */
const MAX_PHOTO_SIZES = 20;
/** Telegram's file ids are about 80 characters; a bound, not a format. */
const FileId = z.string().min(1).max(256);
const Name = z.string().max(256);

/**
 * Chat and user ids exceed 2^31 (supergroups are -100…, 13 digits) but stay below 2^52, so a JS
 * number holds them exactly; render them with String(), never through a 32-bit path.
 */
const TelegramId = z.number().int().safe();
const Count = z.number().int().nonnegative().safe();

export const TelegramUser = z.object({
  id: TelegramId,
  is_bot: z.boolean(),
  first_name: Name,
  last_name: Name.optional(),
  username: z.string().max(64).optional(),
});
export type TelegramUser = z.infer<typeof TelegramUser>;

export const TelegramChat = z.object({
  id: TelegramId,
  type: z.enum(["private", "group", "supergroup", "channel"]),
  title: Name.optional(),
  username: z.string().max(64).optional(),
  is_forum: z.boolean().optional(),
});
export type TelegramChat = z.infer<typeof TelegramChat>;

/** Offsets and lengths count UTF-16 code units, as JS string indices do. */
export const MessageEntity = z.object({
  type: z.string().min(1).max(64),
  offset: Count,
  length: Count,
  user: TelegramUser.optional(),
});
export type MessageEntity = z.infer<typeof MessageEntity>;

const PhotoSize = z.object({
  file_id: FileId,
  file_unique_id: FileId,
  width: Count,
  height: Count,
  file_size: Count.optional(),
});

const Document = z.object({
  file_id: FileId,
  file_unique_id: FileId.optional(),
  file_name: Name.optional(),
  mime_type: z.string().max(255).optional(),
  file_size: Count.optional(),
});

/** A voice note: OGG/Opus, `duration` in seconds. */
const Voice = z.object({
  file_id: FileId,
  file_unique_id: FileId.optional(),
  duration: Count,
  mime_type: z.string().max(255).optional(),
  file_size: Count.optional(),
});

const Audio = Voice.extend({
  performer: Name.optional(),
  title: Name.optional(),
  file_name: Name.optional(),
});

export const TelegramMessage = z.object({
  message_id: Count,
  /** Absent on messages sent on behalf of a channel; the intake skips a message without it. */
  from: TelegramUser.optional(),
  /** The chat a message was sent on behalf of (an anonymous admin, a linked channel). */
  sender_chat: TelegramChat.optional(),
  chat: TelegramChat,
  date: Count,
  edit_date: Count.optional(),
  text: z.string().max(MAX_TEXT_CHARS).optional(),
  caption: z.string().max(MAX_TEXT_CHARS).optional(),
  entities: z.array(MessageEntity).max(MAX_ENTITIES).optional(),
  caption_entities: z.array(MessageEntity).max(MAX_ENTITIES).optional(),
  /** Shallow: who wrote the replied-to message is all the addressing rules need. */
  reply_to_message: z.object({ message_id: Count, from: TelegramUser.optional() }).optional(),
  /** A forum topic OR an ordinary reply thread of a supergroup: see `is_topic_message`. */
  message_thread_id: Count.optional(),
  is_topic_message: z.boolean().optional(),
  photo: z.array(PhotoSize).max(MAX_PHOTO_SIZES).optional(),
  document: Document.optional(),
  voice: Voice.optional(),
  audio: Audio.optional(),
});
export type TelegramMessage = z.infer<typeof TelegramMessage>;

/** A button press. `message` is the bot's message that carried the keyboard (possibly too old to
 * be accessible, then only its ids and chat come). */
export const CallbackQuery = z.object({
  id: z.string().min(1).max(128),
  from: TelegramUser,
  message: z
    .object({
      message_id: Count,
      chat: TelegramChat,
      message_thread_id: Count.optional(),
      is_topic_message: z.boolean().optional(),
    })
    .optional(),
  /** callback_data is 1-64 bytes when sent; the bound here is generous. */
  data: z.string().max(256).optional(),
});
export type CallbackQuery = z.infer<typeof CallbackQuery>;

export const TelegramUpdate = z.object({
  update_id: Count,
  message: TelegramMessage.optional(),
  edited_message: TelegramMessage.optional(),
  callback_query: CallbackQuery.optional(),
});
export type TelegramUpdate = z.infer<typeof TelegramUpdate>;

export type ParseUpdateResult = { ok: true; update: TelegramUpdate } | { ok: false; error: string };

/** `message.chat.id: expected number` — the first failing path and what was expected. */
export function parseUpdate(body: unknown): ParseUpdateResult {
  // reportInput tells a missing field from a mistyped one; the input itself is never shown.
  const parsed = TelegramUpdate.safeParse(body, { reportInput: true });
  if (parsed.success) return { ok: true, update: parsed.data };
  const issues = parsed.error.issues;
  const first = issues[0];
  if (!first) return { ok: false, error: "invalid update" };
  const path = first.path.map(String).join(".") || "(body)";
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  return { ok: false, error: `${path}: ${describeIssue(first)}${more}` };
}

/** Built from the issue's code, not zod's message, so no received value can be echoed. */
function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined ? "required" : `expected ${issue.expected}`;
    case "too_big":
      return `too long or too large (at most ${String(issue.maximum)})`;
    case "too_small":
      return `too short or too small (at least ${String(issue.minimum)})`;
    case "invalid_value":
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    default:
      return "invalid";
  }
}
