// The room's reply surface on Telegram (src/objects/shared/reply-surface.ts), for messages the bot
// read from its webhook: the reply's first part answers the message (reply_parameters, still sent
// if it was deleted), in its forum topic when it came from one; the rest follow in the chat. Parts
// are at most 4,096 characters (sendMessage's limit) and a resumed delivery sends none twice. While
// a turn runs the chat shows "typing…", renewed every 4 s (Telegram shows it 5 s at most). Plain
// text only (no parse_mode): model text needs no escaping. A turn's tool approval is an inline
// keyboard (approval.ts) answered through the webhook's callback_query; the prompt is edited when
// answered or expired. Tasks' questions are posted as plain text (no Answer button yet).
import { createMessageSurface } from "../chat/message-surface.ts";
import { z } from "zod";
import type { Env } from "../../env.ts";
import { loadConfig } from "../../config.ts";
import { errorField, log } from "../../log.ts";
import { VOICE_NOTE_FAILED } from "../../objects/conversation/voice-notes.ts";
import type { PostedPrompt, ReplySurface } from "../../objects/shared/reply-surface.ts";
import { approvalPromptFields } from "../chat/approval-text.ts";
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
  return createMessageSurface<TelegramMessageDelivery>({
    kind: TELEGRAM_MESSAGE_KIND,
    parse: (target) => TelegramMessageDelivery.parse(target),
    canRouteApproval: (agentId) => canRouteApproval(agentId, "room"),
    split: (text) => splitMessage(text, TELEGRAM_MESSAGE_LIMIT),
    async send(delivery, text, first) {
      await telegram().sendMessage(message(delivery, text, first));
    },
    async postApprovalPrompt(delivery, request) {
      const prompt = approvalPrompt({
        ...approvalPromptFields(request),
        requesterName: null,
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
    // 400 (chat not found, bad request) and 403 (the bot was removed or blocked) are final.
    isPermanentFailure: (error) => error instanceof TelegramApiError && !error.retryable,
    // A voice note that could not be transcribed: the error is written for the person already.
    errorText: (error) => (isVoiceNoteFailure(error.details) ? `⚠️ ${error.message}` : null),
    startTyping(delivery) {
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
  });
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

function isVoiceNoteFailure(details: unknown): boolean {
  return (
    typeof details === "object" &&
    details !== null &&
    (details as { kind?: unknown }).kind === VOICE_NOTE_FAILED
  );
}
