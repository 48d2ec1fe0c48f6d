// What a Gateway message event means for the rooms, decided without I/O: MESSAGE_CREATE becomes a
// turn unless it is the bot's own message, a system message, or empty; it is "addressed" to the bot
// when it mentions the bot or the bot's role, replies to one of the bot's messages, or is a DM
// (the respond rules in src/runtime/turn/respond-decision.ts treat those as mentions). Mentions are
// rewritten to names so the model reads "@Ada" rather than "<@123>". Edits and deletes are keyed
// by the message id, like the turn they amend.
import { z } from "zod";
import type { Attachment } from "../../../runtime/ports/memory.ts";

const Snowflake = z.string().regex(/^\d{1,20}$/);

const User = z.object({
  id: Snowflake,
  username: z.string().max(100),
  global_name: z.string().max(100).nullish(),
  bot: z.boolean().optional(),
});

/** Discord's message types that are people talking: DEFAULT (0) and REPLY (19). */
const CONVERSATION_TYPES = new Set([0, 19]);

export const GatewayMessage = z.object({
  id: Snowflake,
  channel_id: Snowflake,
  guild_id: Snowflake.optional(),
  author: User,
  content: z.string().max(8_000).default(""),
  type: z.number().int().default(0),
  webhook_id: Snowflake.optional(),
  mentions: z
    .array(User.partial({ username: true }))
    .max(200)
    .default([]),
  mention_roles: z.array(Snowflake).max(250).default([]),
  /** In a server: the author's roles there (role-gated tools). */
  member: z
    .object({ roles: z.array(Snowflake).max(250).default([]) })
    .optional()
    .catch(undefined),
  attachments: z
    .array(
      z.object({
        url: z.string().max(2_000),
        filename: z.string().max(1_000),
        content_type: z.string().max(200).optional(),
      }),
    )
    .max(10)
    .default([]),
  referenced_message: z
    .object({ author: z.object({ id: Snowflake }) })
    .nullish()
    .catch(null),
});
export type GatewayMessage = z.infer<typeof GatewayMessage>;

export const MessageUpdate = z.object({
  id: Snowflake,
  channel_id: Snowflake,
  guild_id: Snowflake.optional(),
  /** Absent when the update did not touch the text (an embed resolving, a pin). */
  content: z.string().max(8_000).optional(),
  author: z.object({ id: Snowflake }).optional(),
});

export const MessageDelete = z.object({
  id: Snowflake,
  channel_id: Snowflake,
  guild_id: Snowflake.optional(),
});

/** Who the bot is, and its role in each server (Discord gives a bot a managed role there). */
export interface BotIdentity {
  userId: string;
  username: string;
  rolesIn(guildId: string): readonly string[];
}

export type MessageIntake =
  | { kind: "ignore"; reason: "own_message" | "system_message" | "empty" }
  | {
      kind: "turn";
      messageId: string;
      channelId: string;
      guildId: string | null;
      userId: string;
      userName: string;
      /** The author's roles in the server (none in a DM). */
      roles: readonly string[];
      text: string;
      attachments: Attachment[];
      isDirect: boolean;
      mentioned: boolean;
      fromBot: boolean;
    };

/** The idempotency key of a message's turn: a replayed event finds the turn it already made. */
export function messageTurnKey(messageId: string): string {
  return `discord-msg:${messageId}`;
}

export function readMessage(message: GatewayMessage, bot: BotIdentity): MessageIntake {
  if (message.author.id === bot.userId) return { kind: "ignore", reason: "own_message" };
  if (!CONVERSATION_TYPES.has(message.type)) return { kind: "ignore", reason: "system_message" };
  const text = readableText(message, bot);
  if (text === "" && message.attachments.length === 0) return { kind: "ignore", reason: "empty" };
  const isDirect = message.guild_id === undefined;
  const botRoles = message.guild_id ? bot.rolesIn(message.guild_id) : [];
  const mentioned =
    message.mentions.some((user) => user.id === bot.userId) ||
    message.mention_roles.some((role) => botRoles.includes(role)) ||
    message.referenced_message?.author.id === bot.userId;
  return {
    kind: "turn",
    messageId: message.id,
    channelId: message.channel_id,
    guildId: message.guild_id ?? null,
    userId: message.author.id,
    userName: message.author.global_name ?? message.author.username,
    roles: message.member?.roles ?? [],
    text,
    attachments: message.attachments.map((file) => ({
      url: file.url,
      contentType: file.content_type ?? "application/octet-stream",
      title: file.filename,
    })),
    isDirect,
    mentioned,
    // Webhook posts count as bots: nobody is there to talk to.
    fromBot: message.author.bot === true || message.webhook_id !== undefined,
  };
}

/** The text with user mentions as `@name` (the bot's as its own name), trimmed. */
function readableText(message: GatewayMessage, bot: BotIdentity): string {
  const names = new Map<string, string>([[bot.userId, bot.username]]);
  for (const user of message.mentions) {
    const name = user.global_name ?? user.username;
    if (name && !names.has(user.id)) names.set(user.id, name);
  }
  return message.content
    .replace(/<@!?(\d{1,20})>/g, (whole, id: string) => {
      const name = names.get(id);
      return name ? `@${name}` : whole;
    })
    .trim();
}
