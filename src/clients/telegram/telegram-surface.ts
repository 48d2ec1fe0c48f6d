// The room's reply surface on Telegram (src/objects/shared/reply-surface.ts), for messages the bot
// read from its webhook: the reply's first part answers the message (reply_parameters, still sent
// if it was deleted), in its forum topic when it came from one; the rest follow in the chat. Parts
// are at most 4,096 characters (sendMessage's limit) and a resumed delivery sends none twice. While
// a turn runs the chat shows "typing…", renewed every 4 s (Telegram shows it 5 s at most). Plain
// text only (no parse_mode): model text needs no escaping. A turn's tool approval is an inline
// keyboard (approval.ts) answered through the webhook's callback_query; the prompt is edited when
// answered or expired. Tasks' questions are posted as plain text (no Answer button yet).
import { memberErrorText } from "../chat/member-error.ts";
import type { SerializedError } from "../../runtime/util/errors.ts";
import { z } from "zod";
import type { Env } from "../../env.ts";
import { loadConfig } from "../../config.ts";
import { errorField, log } from "../../log.ts";
import { VOICE_NOTE_FAILED } from "../../objects/conversation/voice-notes.ts";
import type {
  DeliveryTarget,
  PostedPrompt,
  ReplySurface,
} from "../../objects/shared/reply-surface.ts";
import { approvalPrompt, approvalResultText, canRouteApproval } from "./approval.ts";
import { splitMessage } from "../chat/split.ts";
import {
  createTelegramBotApi,
  TELEGRAM_MESSAGE_LIMIT,
  TelegramApiError,
  type SendMessageParams,
  type TelegramBotApi,
} from "./bot-api.ts";

export const TELEGRAM_MESSAGE_KIND = "telegram-message";
/** sendChatAction's status lasts 5 s or less: renewed a little before. */
export const TELEGRAM_TYPING_RENEW_MS = 4_000;

/** A message to answer, as the room stores it (checked on the way back). */
export const TelegramMessageDelivery = z.looseObject({
  kind: z.literal(TELEGRAM_MESSAGE_KIND),
  chatId: z.number().int().safe(),
  messageId: z.number().int().nonnegative().safe(),
  /** The forum topic it was written in (only for `is_topic_message`). */
  threadId: z.number().int().nonnegative().safe().optional(),
  /** It mentioned the bot, replied to it, was a command or a private chat: worth telling on failure. */
  addressed: z.boolean(),
});
export type TelegramMessageDelivery = z.infer<typeof TelegramMessageDelivery>;

/** A prompt the bot posted, so it can be edited when it expires. */
export const TelegramPostedMessage = z.looseObject({
  via: z.literal("telegram"),
  chatId: z.number().int().safe(),
  messageId: z.number().int().nonnegative().safe(),
});
export type TelegramPostedMessage = z.infer<typeof TelegramPostedMessage>;

/** Whether a posted prompt is one of Telegram's (for the surface router). */
export const isTelegramPosted = (posted: PostedPrompt): boolean => posted.via === "telegram";

/** The Bot API with the configured token and base, through the global fetch (tests intercept it). */
export function telegramBotApi(env: Env): TelegramBotApi {
  const telegram = loadConfig(env).telegram;
  return createTelegramBotApi({
    token: telegram?.botToken ?? "",
    baseUrl: telegram?.apiBase,
    fetch: (input, init) => fetch(input, init),
  });
}

export function createTelegramSurface(env: Env): ReplySurface {
  let api: TelegramBotApi | null = null;
  const telegram = () => (api ??= telegramBotApi(env));
  const post = async (target: DeliveryTarget, text: string, asReply: boolean) => {
    const delivery = TelegramMessageDelivery.parse(target);
    for (const part of splitMessage(text, TELEGRAM_MESSAGE_LIMIT)) {
      await telegram().sendMessage(message(delivery, part, asReply));
      asReply = false;
    }
  };
  return {
    // Only a room's turn: a press is routed back by the chat (and topic) it was made in.
    canAskApproval: (target, agentId) =>
      target.kind === TELEGRAM_MESSAGE_KIND && canRouteApproval(agentId, "room"),
    async sendReply(target, job, onSent) {
      const delivery = TelegramMessageDelivery.parse(target);
      if (job.ignored || (job.error && !delivery.addressed)) return;
      const parts = splitMessage(replyText(job), TELEGRAM_MESSAGE_LIMIT);
      for (let i = job.sentParts; i < parts.length; i++) {
        await telegram().sendMessage(message(delivery, parts[i]!, i === 0));
        onSent(i + 1);
      }
    },
    postLine: (target, text) => post(target, text, true),
    async postApprovalPrompt(target, request) {
      const delivery = TelegramMessageDelivery.parse(target);
      const prompt = approvalPrompt({
        target: request.asker,
        approvalId: request.approvalId,
        agentId: request.agentId,
        agentName: request.agentName,
        tool: request.tool,
        arguments: request.arguments,
        requesterName: null,
        expiresAt: request.expiresAt,
        now: Date.now(),
      });
      const sent = await telegram().sendMessage({
        ...message(delivery, prompt.text, true),
        reply_markup: prompt.reply_markup,
      });
      const posted: TelegramPostedMessage = {
        via: "telegram",
        chatId: delivery.chatId,
        messageId: sent.message_id,
      };
      return posted;
    },
    async closeExpiredPrompt(posted, tool) {
      const { chatId, messageId } = TelegramPostedMessage.parse(posted);
      // Without reply_markup the keyboard is removed.
      await telegram().editMessageText({
        chat_id: chatId,
        message_id: messageId,
        text: approvalResultText(tool, "expired"),
      });
    },
    async postQuestion(target, request) {
      await post(target, `${request.agentName} asks: ${request.question}`, true);
      return null;
    },
    async closeExpiredQuestion() {},
    openingUsed: (target) => target,
    afterAnswer: (target) => target,
    // 400 (chat not found, bad request) and 403 (the bot was removed or blocked) are final.
    isPermanentFailure: (error) => error instanceof TelegramApiError && !error.retryable,
    startTyping(target) {
      const delivery = TelegramMessageDelivery.parse(target);
      let stopped = false;
      const beat = () => {
        if (stopped) return;
        telegram()
          .sendChatAction(delivery.chatId, "typing", delivery.threadId)
          .catch((error: unknown) =>
            log.warn("telegram_typing_failed", {
              chatId: delivery.chatId,
              error: errorField(error),
            }),
          );
      };
      beat();
      const timer = setInterval(beat, TELEGRAM_TYPING_RENEW_MS);
      return () => {
        stopped = true;
        clearInterval(timer);
      };
    },
  };
}

function message(
  target: TelegramMessageDelivery,
  text: string,
  asReply: boolean,
): SendMessageParams {
  return {
    chat_id: target.chatId,
    text,
    ...(target.threadId !== undefined ? { message_thread_id: target.threadId } : {}),
    ...(asReply
      ? { reply_parameters: { message_id: target.messageId, allow_sending_without_reply: true } }
      : {}),
    link_preview_options: { is_disabled: true },
  };
}

function replyText(job: {
  reply: string | null;
  error: (Pick<SerializedError, "code" | "message"> & { details?: unknown }) | null;
}): string {
  // A voice note that could not be transcribed: the error is written for the person already.
  if (job.error && isVoiceNoteFailure(job.error.details)) return `⚠️ ${job.error.message}`;
  if (job.error) return memberErrorText(job.error);
  return job.reply?.trim() || "…(I have nothing to add.)";
}

function isVoiceNoteFailure(details: unknown): boolean {
  return (
    typeof details === "object" &&
    details !== null &&
    (details as { kind?: unknown }).kind === VOICE_NOTE_FAILED
  );
}
