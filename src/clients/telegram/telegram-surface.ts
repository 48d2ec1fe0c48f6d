// The room's reply surface on Telegram (src/objects/shared/reply-surface.ts), for messages the bot
// read from its webhook: the reply's first part answers the message (reply_parameters, still sent
// if it was deleted), in its forum topic when it came from one; the rest follow in the chat. Parts
// are at most 4,096 characters (sendMessage's limit) and a resumed delivery sends none twice. While
// a turn runs the chat shows "typing…", renewed every 4 s (Telegram shows it 5 s at most). Plain
// text only (no parse_mode): model text needs no escaping. Approval buttons are not built yet: a
// Telegram target cannot be asked, so the room does not wait on one.
import { z } from "zod";
import type { Env } from "../../env.ts";
import { loadConfig } from "../../config.ts";
import { errorField, log } from "../../log.ts";
import type { DeliveryTarget, ReplySurface } from "../../objects/shared/reply-surface.ts";
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
    canAskApproval: () => false,
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
      // Not reached while canAskApproval is false; a plain notice if it ever is.
      await post(
        target,
        `${request.agentName} wants to run ${request.tool}: approve it over the API.`,
        true,
      );
      return null;
    },
    async closeExpiredPrompt() {},
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

function replyText(job: { reply: string | null; error: { message: string } | null }): string {
  if (job.error) return `⚠️ I couldn't answer that: ${job.error.message}`;
  return job.reply?.trim() || "…(I have nothing to add.)";
}
