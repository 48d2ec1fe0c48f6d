// Answers to messages the bot read on the Gateway (@mentions, replies, DMs): the first part of the
// reply is a Discord reply to the message (message_reference, nobody pinged), the rest follow in
// the channel (in the thread the message opened, with autoThread: plain messages there); a prompt
// with approval buttons is a reply too. Messages the agent chose not to answer send nothing, and
// neither do failures of messages nobody addressed to the bot.
import { z } from "zod";
import type { SerializedError } from "../../runtime/util/errors.ts";
import { deliveryText, type PostedMessage } from "./interaction-delivery.ts";
import type { DiscordMessageBody, DiscordRest } from "./rest.ts";
import { splitMessage } from "../chat/split.ts";

/** A channel message to answer with a reply, as the room stores it (checked on the way back). */
export const DiscordMessageDelivery = z.looseObject({
  kind: z.literal("discord-message"),
  channelId: z.string().regex(/^\d{1,20}$/),
  messageId: z.string().regex(/^\d{1,20}$/),
  /** It mentioned the bot, replied to it, or was a DM: worth telling when something fails. */
  addressed: z.boolean(),
  /**
   * The message opened the thread `channelId` (autoThread): answers are plain messages in the
   * thread, since a Discord reply cannot point at a message of another channel.
   */
  startedThread: z.boolean().optional(),
});
export type DiscordMessageDelivery = z.infer<typeof DiscordMessageDelivery>;

export interface MessageReplyJob {
  target: DiscordMessageDelivery;
  reply: string | null;
  error: SerializedError | null;
  /** The agent decided not to answer: nothing is sent. */
  ignored: boolean;
  sentParts: number;
}

export async function deliverMessageReply(
  rest: DiscordRest,
  job: MessageReplyJob,
  onSent: (parts: number) => void,
): Promise<void> {
  if (job.ignored || (job.error && !job.target.addressed)) return;
  const parts = splitMessage(deliveryText(job));
  for (let i = job.sentParts; i < parts.length; i++) {
    const body: DiscordMessageBody = { content: parts[i]! };
    await rest.channelMessage(job.target.channelId, i === 0 ? asReply(job.target, body) : body);
    onSent(i + 1);
  }
}

/** Posts a message (an approval prompt, a line) as a reply to the message; editable later. */
export async function postReply(
  rest: DiscordRest,
  target: DiscordMessageDelivery,
  body: DiscordMessageBody,
): Promise<PostedMessage | null> {
  const sent = await rest.channelMessage(target.channelId, asReply(target, body));
  return sent.id ? { via: "channel", channelId: target.channelId, messageId: sent.id } : null;
}

/** The typing indicator lasts 10 s: renewed every 8 s while the turn runs. */
export const TYPING_RENEW_MS = 8_000;

/** Shows the bot typing in the channel until the returned function is called. Best effort. */
export function keepTyping(
  rest: DiscordRest,
  channelId: string,
  onError: (error: unknown) => void,
): () => void {
  let stopped = false;
  const beat = () => {
    if (!stopped) rest.typing(channelId).catch(onError);
  };
  beat();
  const timer = setInterval(beat, TYPING_RENEW_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

function asReply(target: DiscordMessageDelivery, body: DiscordMessageBody): DiscordMessageBody {
  if (target.startedThread) return body;
  // A message deleted meanwhile: post without the reference rather than fail.
  return {
    ...body,
    message_reference: {
      message_id: target.messageId,
      channel_id: target.channelId,
      fail_if_not_exists: false,
    },
  };
}
