// Telegram's webhook, `POST /telegram/webhook`. Telegram signs nothing: setWebhook's secret_token
// comes back in X-Telegram-Bot-Api-Secret-Token, compared in constant time before the body is even
// read. The body is read up to 1 MB and validated (src/clients/telegram/update.ts). A message in a
// bound chat becomes one turn in room `telegram:<chat>[:<topic>]`, keyed `telegram-msg:<chat>:<id>`
// so a redelivered Update is the same turn; an edit amends the stored message by that key. Photos,
// documents and voice notes travel as token-free references the room reads (and transcribes). A
// press on Approve / Deny goes to the room whose turn waits for it; `/forget` asks, and its buttons
// are answered here. Any well-formed Update is answered 200 (Telegram repeats anything else),
// including those we skip.
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import { readCappedBody } from "../../capped-body.ts";
import {
  amendMessage,
  clientBudgets,
  configuredOwners,
  takeMessage,
} from "../../../clients/chat/intake.ts";
import {
  approvalResultText,
  parseApprovalCallbackData,
} from "../../../clients/telegram/approval.ts";
import { answerApprovalPress } from "../../../clients/chat/approval-flow.ts";
import { botIdentity } from "../../../clients/telegram/bot-identity.ts";
import { readMessage, roomIdOf, senderName } from "../../../clients/telegram/message-text.ts";
import {
  agentTag,
  FORGET_QUESTION,
  type ForgetPress,
  forgetKeyboard,
  forgottenText,
  parseForgetCallbackData,
} from "../../../clients/telegram/forget.ts";
import { hasVoice, messageAttachments } from "../../../clients/telegram/message-files.ts";
import {
  TELEGRAM_MESSAGE_KIND,
  telegramBotApi,
  type TelegramMessageDelivery,
} from "../../../clients/telegram/telegram-surface.ts";
import {
  type CallbackQuery,
  parseUpdate,
  type TelegramMessage,
} from "../../../clients/telegram/update.ts";
import { loadConfig } from "../../../config.ts";
import { surfaceUnavailable } from "../../../surfaces.ts";
import { agentData, stores } from "../../../db/stores/index.ts";
import type { TelegramConfig } from "../../../db/stores/chat-client-store.ts";
import { errorField, log } from "../../../log.ts";
import { deleteMemories } from "../../../db/memory/memory-repo.ts";
import { forgetRoomHistory } from "../../../objects/conversation/room-client.ts";
import { UnauthorizedError, ValidationError } from "../../../runtime/util/errors.ts";
import { errorContent } from "../../schemas.ts";

/** Updates are a few KB; a message is at most 4,096 characters. */
export const MAX_TELEGRAM_UPDATE_BYTES = 1024 * 1024;
export const SECRET_HEADER = "x-telegram-bot-api-secret-token";

type Ctx = Context<AppEnv>;
type Outcome =
  | "queued"
  | "duplicate"
  | "dm_refused"
  | "rate_limited"
  | "amended"
  | "answered"
  | "skipped";

export function telegramRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  // Documented, not validated by the route schema: the secret is checked before the body is read.
  app.openAPIRegistry.registerPath({
    method: "post",
    path: "/telegram/webhook",
    summary: "Telegram Bot API webhook (authenticated by its secret token header; no bearer token)",
    request: {
      headers: z.object({
        [SECRET_HEADER]: z
          .string()
          .openapi({ description: "setWebhook's secret_token (TELEGRAM_WEBHOOK_SECRET)" }),
      }),
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z.record(z.string(), z.unknown()).openapi({ description: "A Telegram Update" }),
          },
        },
      },
    },
    responses: {
      200: { description: "Taken (a turn queued), or an Update the bot does not act on" },
      400: errorContent("A body that is not a valid Update"),
      401: errorContent("Missing or wrong secret token"),
      413: errorContent("A body over 1 MB"),
      503: errorContent("Telegram is not configured, or off (a malformed variable of its own)"),
    },
  });

  app.post("/telegram/webhook", async (c) => {
    const telegram = loadConfig(c.env).telegram;
    if (!telegram)
      throw surfaceUnavailable(
        loadConfig(c.env),
        "telegram",
        "TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET",
      );
    const given = c.req.header(SECRET_HEADER);
    if (!given || !(await sameSecret(given, telegram.webhookSecret)))
      throw new UnauthorizedError("missing or wrong X-Telegram-Bot-Api-Secret-Token");
    const raw = await readCappedBody(c.req.raw, MAX_TELEGRAM_UPDATE_BYTES);
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(raw));
    } catch {
      throw new ValidationError("invalid request body: not JSON");
    }
    const parsed = parseUpdate(body);
    if (!parsed.ok) throw new ValidationError(`invalid update: ${parsed.error}`);
    const { update } = parsed;
    let outcome: Outcome = "skipped";
    if (update.message) outcome = await onMessage(c, update.message, telegram.botToken);
    else if (update.edited_message)
      outcome = await onEdit(c, update.edited_message, telegram.botToken);
    else if (update.callback_query) outcome = await onPress(c, update.callback_query);
    if (outcome !== "queued" && outcome !== "amended" && outcome !== "answered")
      log.info("telegram_update_not_taken", { updateId: update.update_id, outcome });
    // No `method` field: Telegram would run a JSON answer that has one as a Bot API call.
    return c.json({ ok: true, outcome }, 200);
  });
  return app;
}

async function onMessage(c: Ctx, message: TelegramMessage, token: string): Promise<Outcome> {
  const from = message.from;
  if (!from || from.is_bot) return "skipped";
  const chat = await boundChat(c, message.chat.id);
  if (!chat) return "skipped";
  const { agentId } = chat;
  const bot = await botIdentity(telegramBotApi(c.env), token);
  // The message's entities, scanned once: the command, whether it is addressed, the text.
  const read = readMessage(message, bot);
  if (read.command === "forget") return await askToForget(c, message, from.id, agentId);
  const { text } = read;
  // Files are references without the token; the room downloads (and transcribes) them.
  const attachments = messageAttachments(message);
  if (text === "" && attachments.length === 0) return "skipped";
  const isDirect = message.chat.type === "private";
  const mentioned = read.addressed;
  const delivery: TelegramMessageDelivery = {
    kind: TELEGRAM_MESSAGE_KIND,
    chatId: message.chat.id,
    messageId: message.message_id,
    ...(message.is_topic_message === true && message.message_thread_id !== undefined
      ? { threadId: message.message_thread_id }
      : {}),
    addressed: mentioned || isDirect,
  };
  const now = Date.now();
  const { filter } = chat.config;
  return await takeMessage(
    c.env,
    {
      platform: "telegram",
      turnKey: turnKey(message),
      roomId: roomIdOf(message),
      chatId: String(message.chat.id),
      spaceId: null,
      sender: { id: String(from.id), name: senderName(from), isBot: false },
      text,
      ...(attachments.length > 0 ? { attachments } : {}),
      isDirect,
      mentioned,
      receivedAt: now,
      delivery,
      // Declined before the model and stored; Telegram says nothing of an account's age. A voice
      // note's words are filtered in the room, once transcribed, before the model reads them.
      filter: filter ?? null,
      ...(hasVoice(message) ? { transcribed: true } : {}),
      ...clientBudgets(chat.config),
    },
    agentId,
    {
      tellDmClosed: (text) => telegramBotApi(c.env).sendMessage({ chat_id: message.chat.id, text }),
    },
  );
}

async function onEdit(c: Ctx, message: TelegramMessage, token: string): Promise<Outcome> {
  if (!message.from || message.from.is_bot) return "skipped";
  // A voice note's stored text is its transcript: a caption edited later must not replace it.
  if (hasVoice(message)) return "skipped";
  const chat = await boundChat(c, message.chat.id);
  if (!chat) return "skipped";
  const bot = await botIdentity(telegramBotApi(c.env), token);
  const { text } = readMessage(message, bot);
  const now = Date.now();
  // An edit the filter declines (a clean message edited into spam) leaves memory instead.
  await amendMessage(
    c.env,
    { agentId: chat.agentId, roomId: roomIdOf(message), turnKey: turnKey(message) },
    { kind: "edit", text, filter: chat.config.filter },
    now,
  );
  return "amended";
}

/**
 * Approve / Deny on a paused turn's prompt: the room of the chat (and topic) the prompt is in
 * decides whether this press counts (only the person who asked). The press is always answered, or
 * Telegram shows its progress bar on the button until it times out.
 */
async function onPress(c: Ctx, press: CallbackQuery): Promise<Outcome> {
  const api = telegramBotApi(c.env);
  const notice = (text?: string) =>
    api.answerCallbackQuery(press.id, text).catch((error: unknown) => {
      log.warn("telegram_callback_answer_failed", { error: errorField(error) });
    });
  const forget = press.data ? parseForgetCallbackData(press.data) : null;
  if (forget) return await onForgetPress(c, press, forget, notice);
  const button = press.data ? parseApprovalCallbackData(press.data) : null;
  const prompt = press.message;
  const invalid = async () => {
    await notice("That button is no longer valid.");
    return "skipped" as const;
  };
  if (!button || !prompt || press.from.is_bot) return await invalid();
  const name = senderName(press.from);
  const via: TelegramMessageDelivery = {
    kind: TELEGRAM_MESSAGE_KIND,
    chatId: prompt.chat.id,
    messageId: prompt.message_id,
    addressed: true,
  };
  const from = { userId: `telegram:${String(press.from.id)}`, userName: name, via };
  // Tasks do not post Telegram prompts (yet): a `tap:` press is not ours to answer. The bot's
  // owners (TELEGRAM_OWNER_IDS) may answer for whoever asked.
  const result = await answerApprovalPress(
    c.env,
    { button, roomId: roomIdOf(prompt), from },
    {
      tasks: false,
      onBehalf: configuredOwners(loadConfig(c.env), "telegram").includes(String(press.from.id)),
    },
  );
  switch (result.status) {
    case "invalid":
      return await invalid();
    case "not_yours":
      await notice(
        "Only the person who asked, or one of the bot's owners, can approve or deny this.",
      );
      return "skipped";
    case "gone":
      await notice("This request is no longer waiting for an answer.");
      return "skipped";
    case "resolved":
      await notice();
      // Without reply_markup the keyboard is removed; the prompt says who answered.
      await api
        .editMessageText({
          chat_id: prompt.chat.id,
          message_id: prompt.message_id,
          text: approvalResultText(result.tool, result.decision, name),
        })
        .catch((error: unknown) => {
          log.warn("telegram_prompt_edit_failed", { error: errorField(error) });
        });
      return "answered";
  }
}

/**
 * `/forget`: the question as a reply, with buttons only the asker's press counts on. The command
 * itself is not a turn and is not stored; a private chat gets it whatever the DM policy says, as
 * forgetting one's own memories needs no permission.
 */
async function askToForget(
  c: Ctx,
  message: TelegramMessage,
  userId: number,
  agentId: string,
): Promise<Outcome> {
  await telegramBotApi(c.env).sendMessage({
    chat_id: message.chat.id,
    text: FORGET_QUESTION,
    reply_parameters: { message_id: message.message_id, allow_sending_without_reply: true },
    ...(message.is_topic_message === true && message.message_thread_id !== undefined
      ? { message_thread_id: message.message_thread_id }
      : {}),
    reply_markup: await forgetKeyboard(String(userId), agentId),
  });
  return "answered";
}

/**
 * "Forget me" or "Cancel": only the person who asked, and only while the chat is bound to the
 * agent the question was for. Yes deletes their memories (`telegram:<id>`) as Discord's /forget
 * does, and the rooms' cached history with them; either way the buttons are removed.
 */
async function onForgetPress(
  c: Ctx,
  press: CallbackQuery,
  forget: ForgetPress,
  notice: (text?: string) => Promise<void>,
): Promise<Outcome> {
  const prompt = press.message;
  if (String(press.from.id) !== forget.userId) {
    await notice("Only the person who asked can answer this.");
    return "skipped";
  }
  const agentId = prompt ? await boundAgent(c, prompt.chat.id) : null;
  if (!prompt || !agentId || (await agentTag(agentId)) !== forget.agentTag) {
    await notice("That button is no longer valid.");
    return "skipped";
  }
  let text = "Nothing was deleted.";
  if (forget.confirmed) {
    const { deleted, rooms } = await deleteMemories((await agentData(c.env, agentId)).db, {
      agentId,
      userId: `telegram:${forget.userId}`,
    });
    c.executionCtx.waitUntil(forgetRoomHistory(c.env, agentId, rooms));
    text = forgottenText(deleted);
  }
  await notice();
  // Without reply_markup the keyboard is removed: a second press has nothing to press.
  await telegramBotApi(c.env)
    .editMessageText({ chat_id: prompt.chat.id, message_id: prompt.message_id, text })
    .catch((error: unknown) => {
      log.warn("telegram_prompt_edit_failed", { error: errorField(error) });
    });
  return "answered";
}

/** The default agent, when the chat is allowed (every chat while allowedChats is empty). */
async function boundAgent(c: Ctx, chatId: number): Promise<string | null> {
  return (await boundChat(c, chatId))?.agentId ?? null;
}

/** The chat's agent with the client's settings it is answered under (the filter). */
async function boundChat(
  c: Ctx,
  chatId: number,
): Promise<{ agentId: string; config: TelegramConfig } | null> {
  const config = await stores(c.env).telegram.readConfig();
  if (!config.defaultAgentId) return null;
  if (config.allowedChats.length > 0 && !config.allowedChats.includes(String(chatId))) return null;
  return { agentId: config.defaultAgentId, config };
}

/** Message ids are unique per chat only. */
function turnKey(message: TelegramMessage): string {
  return `telegram-msg:${String(message.chat.id)}:${String(message.message_id)}`;
}

async function sameSecret(given: string, expected: string): Promise<boolean> {
  // Equal-length digests, so the comparison's time says nothing about the secret or its length.
  const digest = (text: string) => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const [a, b] = await Promise.all([digest(given), digest(expected)]);
  return crypto.subtle.timingSafeEqual(a, b);
}
