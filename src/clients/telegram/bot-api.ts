// Telegram's Bot API for what the bot sends and fetches: POST JSON to `<base>/bot<token>/<method>`,
// answers `{ok: true, result}` or `{ok: false, error_code, description, parameters}` checked with zod.
// 429s wait Telegram's `retry_after` (up to 30 s inline), 5xx and network errors back off, any other
// 4xx is final (the shared caller, src/net/retrying-call.ts). Replies are plain text (no parse_mode), so model text needs no escaping. The token is
// in every URL's path: no error message ever carries the token, a URL or more than Telegram's
// short `description`.
import { z } from "zod";
import { resolveRetryPolicy, serverRetryDelayMs, type Sleep } from "../../runtime/util/retry.ts";
import { retryingCall, type ApiAdapter } from "../../net/retrying-call.ts";
import { DEFAULT_TELEGRAM_API_BASE } from "../../settings.ts";
import { TelegramUser } from "./update.ts";

export { DEFAULT_TELEGRAM_API_BASE };

/** sendMessage and editMessageText take 1-4,096 characters: split with splitMessage first. */
export const TELEGRAM_MESSAGE_LIMIT = 4_096;
/** The Bot API serves files up to 20 MB to bots. */
export const TELEGRAM_MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024;
/** An API answer is a few KB; anything past this is not one. */
const MAX_ANSWER_BYTES = 1024 * 1024;
const MAX_DESCRIPTION_CHARS = 200;
/** `123456789:AA…`: the bot id, a colon, the secret (letters, digits, `_`, `-`). */
const BOT_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{1,200}$/;
/** setWebhook's secret_token: 1-256 of A-Z, a-z, 0-9, `_` and `-`. */
const WEBHOOK_SECRET = /^[A-Za-z0-9_-]{1,256}$/;
/** What getFile answers as a file_path (`voice/file_12.oga`); no `..`, no leading slash. */
const FILE_PATH = /^(?!.*\.\.)[A-Za-z0-9_-][A-Za-z0-9_.\-/]{0,255}$/;

/** Why a call failed, for callers to branch on (never on the message). */
export type TelegramFailure =
  | "network"
  | "rate_limited"
  | "server"
  | "refused"
  | "too_large"
  | "bad_answer"
  | "invalid_request"
  | "not_configured";

export class TelegramApiError extends Error {
  readonly method: string;
  readonly reason: TelegramFailure;
  /** The HTTP status (0 when no answer came). */
  readonly status: number;
  /** Telegram's `error_code`, when it answered with one. */
  readonly errorCode: number | null;
  readonly retryable: boolean;
  /** How long Telegram asked to wait (429), in ms. */
  readonly retryAfterMs: number | null;
  /** A group upgraded to a supergroup has a new id (400 with `migrate_to_chat_id`). */
  readonly migrateToChatId: number | null;
  constructor(
    method: string,
    reason: TelegramFailure,
    message: string,
    details: {
      status?: number;
      errorCode?: number | null;
      retryAfterMs?: number | null;
      migrateToChatId?: number | null;
    } = {},
  ) {
    super(message);
    this.name = "TelegramApiError";
    this.method = method;
    this.reason = reason;
    this.status = details.status ?? 0;
    this.errorCode = details.errorCode ?? null;
    this.retryable = reason === "network" || reason === "rate_limited" || reason === "server";
    this.retryAfterMs = details.retryAfterMs ?? null;
    this.migrateToChatId = details.migrateToChatId ?? null;
  }
}

export interface InlineKeyboardButton {
  text: string;
  /** 1-64 bytes. */
  callback_data: string;
}
export interface InlineKeyboardMarkup {
  inline_keyboard: InlineKeyboardButton[][];
}

export interface SendMessageParams {
  chat_id: number;
  text: string;
  /** Makes it a reply; still sent if the original was deleted. */
  reply_parameters?: { message_id: number; allow_sending_without_reply: true };
  /** The forum topic to post in. */
  message_thread_id?: number;
  reply_markup?: InlineKeyboardMarkup;
  link_preview_options?: { is_disabled?: boolean };
}

export interface EditMessageTextParams {
  chat_id: number;
  message_id: number;
  text: string;
  /** Omitted: the keyboard is removed. */
  reply_markup?: InlineKeyboardMarkup;
}

export interface SetWebhookParams {
  url: string;
  secret_token: string;
  allowed_updates: string[];
  drop_pending_updates?: boolean;
}

const BotUser = TelegramUser.extend({
  username: z.string().min(1).max(64),
  can_join_groups: z.boolean().optional(),
  /** True when privacy mode is off: the bot is sent every group message. */
  can_read_all_group_messages: z.boolean().optional(),
});
export type TelegramBotUser = z.infer<typeof BotUser>;

const TelegramFile = z.object({
  file_id: z.string().min(1).max(256),
  file_unique_id: z.string().max(256).optional(),
  file_size: z.number().int().nonnegative().safe().optional(),
  /** Absent when the file cannot be downloaded (over 20 MB). */
  file_path: z.string().max(1_024).optional(),
});
export type TelegramFile = z.infer<typeof TelegramFile>;

const SentMessage = z.object({ message_id: z.number().int().nonnegative().safe() });
/** editMessageText answers the message, or `true` for an inline message. */
const Edited = z.union([SentMessage, z.literal(true)]);
const True = z.literal(true);

const Answer = z.union([
  z.object({ ok: z.literal(true), result: z.unknown() }),
  z.object({
    ok: z.literal(false),
    error_code: z.number().int(),
    description: z.string().max(10_000).optional(),
    parameters: z
      .object({
        retry_after: z.number().nonnegative().optional(),
        migrate_to_chat_id: z.number().int().safe().optional(),
      })
      .optional(),
  }),
]);
type Answer = z.infer<typeof Answer>;

export interface TelegramBotApiOptions {
  token: string;
  baseUrl?: string;
  fetch: typeof fetch;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  /** Attempts in total per call, the first included (default 5). */
  maxAttempts?: number;
}

export interface DownloadedFile {
  bytes: Uint8Array;
  contentType: string | null;
}

export interface TelegramBotApi {
  getMe(): Promise<TelegramBotUser>;
  sendMessage(params: SendMessageParams): Promise<{ message_id: number }>;
  /** Shows "typing…" for up to 5 s: one attempt, no waiting (the next renewal is the retry). */
  sendChatAction(chatId: number, action: "typing", messageThreadId?: number): Promise<void>;
  /** Stops the button's progress bar; `text` shows as a short notice to the person who pressed. */
  answerCallbackQuery(callbackQueryId: string, text?: string): Promise<void>;
  editMessageText(params: EditMessageTextParams): Promise<void>;
  getFile(fileId: string): Promise<TelegramFile>;
  /** Downloads a getFile path, refused past maxBytes by Content-Length and while reading. */
  downloadFile(filePath: string, maxBytes: number): Promise<DownloadedFile>;
  setWebhook(params: SetWebhookParams): Promise<void>;
}

export function createTelegramBotApi(options: TelegramBotApiOptions): TelegramBotApi {
  const base = (options.baseUrl || DEFAULT_TELEGRAM_API_BASE).replace(/\/+$/, "");
  const doFetch = options.fetch;
  const now = options.now ?? Date.now;
  const policy = resolveRetryPolicy({
    maxAttempts: options.maxAttempts ?? 5,
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  });

  const token = (method: string): string => {
    if (!BOT_TOKEN.test(options.token))
      throw new TelegramApiError(
        method,
        "not_configured",
        "TELEGRAM_BOT_TOKEN is not set or is not a bot token (<bot id>:<secret>)",
      );
    return options.token;
  };

  /** Telegram's description, cut short, with the token's secret taken out should it ever appear. */
  const secret = options.token.slice(options.token.indexOf(":") + 1);
  const describe = (text: string | undefined): string => {
    let out = (text ?? "no description").replace(/\p{Cc}+/gu, " ");
    if (secret.length >= 8) out = out.replaceAll(secret, "<token>");
    return out.slice(0, MAX_DESCRIPTION_CHARS);
  };

  const failure = (method: string, response: Response, answer: Answer | null) => {
    const refused = answer && !answer.ok ? answer : null;
    const code = refused?.error_code ?? null;
    const status = response.status;
    const details = { status, errorCode: code };
    if (status === 429 || code === 429) {
      const wait =
        refused?.parameters?.retry_after !== undefined
          ? Math.ceil(refused.parameters.retry_after * 1000)
          : (serverRetryDelayMs(response.headers, now()) ?? 1_000);
      return new TelegramApiError(
        method,
        "rate_limited",
        `Telegram rate limit on ${method} (retry after ${wait} ms)`,
        { ...details, retryAfterMs: wait },
      );
    }
    if (status >= 500)
      return new TelegramApiError(method, "server", `Telegram answered ${status} to ${method}`, {
        ...details,
      });
    return new TelegramApiError(
      method,
      "refused",
      `Telegram refused ${method} (${code ?? status}): ${describe(refused?.description)}`,
      { ...details, migrateToChatId: refused?.parameters?.migrate_to_chat_id ?? null },
    );
  };

  /** Telegram's side of the shared caller: its errors carry the wait and whether to try again. */
  const adapter = <T>(
    method: string,
    read: (response: Response) => Promise<T>,
  ): ApiAdapter<T, TelegramApiError> => ({
    async read(response) {
      try {
        return { ok: true, value: await read(response) };
      } catch (error) {
        if (!(error instanceof TelegramApiError)) throw error;
        const wait =
          error.reason === "rate_limited" ? { retryAfterMs: error.retryAfterMs ?? 1_000 } : {};
        return { ok: false, failure: error, retryable: error.retryable, ...wait };
      }
    },
    // The fetch error's message may quote the URL, which holds the token: keep only its name.
    unreachable: (error) =>
      new TelegramApiError(
        method,
        "network",
        `Telegram unreachable on ${method} (${error instanceof Error ? error.name : "error"})`,
      ),
  });

  /** One call through the shared caller; its last failure is thrown. */
  const send = async <T>(
    method: string,
    url: string,
    init: RequestInit,
    read: (response: Response) => Promise<T>,
    attempts = policy.maxAttempts,
  ): Promise<T> => {
    const result = await retryingCall(() => doFetch(url, init), adapter(method, read), {
      policy: { ...policy, maxAttempts: attempts },
      sleep: options.sleep,
      random: options.random,
      now,
    });
    if (result.ok) return result.value;
    throw result.failure;
  };

  const call = async <T>(
    method: string,
    params: object,
    result: z.ZodType<T>,
    attempts = policy.maxAttempts,
  ): Promise<T> => {
    const url = `${base}/bot${token(method)}/${method}`;
    const init = {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(params),
    };
    return send(
      method,
      url,
      init,
      async (response) => {
        const answer = await readAnswer(method, response);
        if (!response.ok || !answer?.ok) throw failure(method, response, answer);
        const parsed = result.safeParse(answer.result);
        if (!parsed.success)
          throw new TelegramApiError(
            method,
            "bad_answer",
            `Telegram's ${method} result is malformed`,
            { status: response.status },
          );
        return parsed.data;
      },
      attempts,
    );
  };

  return {
    getMe: () => call("getMe", {}, BotUser),
    async sendMessage(params) {
      checkText("sendMessage", params.text);
      const sent = await call("sendMessage", params, SentMessage);
      return { message_id: sent.message_id };
    },
    async sendChatAction(chatId, action, messageThreadId) {
      const params =
        messageThreadId === undefined
          ? { chat_id: chatId, action }
          : { chat_id: chatId, action, message_thread_id: messageThreadId };
      await call("sendChatAction", params, True, 1);
    },
    async answerCallbackQuery(callbackQueryId, text) {
      await call(
        "answerCallbackQuery",
        text === undefined
          ? { callback_query_id: callbackQueryId }
          : { callback_query_id: callbackQueryId, text: text.slice(0, 200) },
        True,
      );
    },
    async editMessageText(params) {
      checkText("editMessageText", params.text);
      await call("editMessageText", params, Edited);
    },
    getFile: (fileId) => call("getFile", { file_id: fileId }, TelegramFile),
    async setWebhook(params) {
      if (!WEBHOOK_SECRET.test(params.secret_token))
        throw new TelegramApiError(
          "setWebhook",
          "invalid_request",
          "the webhook secret must be 1-256 of A-Z, a-z, 0-9, _ and -",
        );
      await call("setWebhook", params, True);
    },
    async downloadFile(filePath, maxBytes) {
      const method = "downloadFile";
      if (!FILE_PATH.test(filePath))
        throw new TelegramApiError(method, "invalid_request", "not a Telegram file path");
      const url = `${base}/file/bot${token(method)}/${filePath}`;
      return send(method, url, { method: "GET" }, async (response) => {
        if (!response.ok) throw failure(method, response, await readAnswer(method, response));
        const announced = Number(response.headers.get("content-length") ?? Number.NaN);
        if (Number.isFinite(announced) && announced > maxBytes) {
          await response.body?.cancel();
          throw tooLarge(method, maxBytes);
        }
        const bytes = await readBounded(method, response, maxBytes);
        if (bytes === null) throw tooLarge(method, maxBytes);
        const contentType = response.headers.get("content-type")?.trim().slice(0, 255) || null;
        return { bytes, contentType };
      });
    },
  };
}

function checkText(method: string, text: string): void {
  if (text.length === 0 || text.length > TELEGRAM_MESSAGE_LIMIT)
    throw new TelegramApiError(
      method,
      "invalid_request",
      `a message text must be 1-${TELEGRAM_MESSAGE_LIMIT} characters (split it first), not ${text.length}`,
    );
}

function tooLarge(method: string, maxBytes: number): TelegramApiError {
  return new TelegramApiError(method, "too_large", `the file is larger than ${maxBytes} bytes`);
}

/** The API's JSON answer, or null when the body is not one (an HTML error page, say). */
async function readAnswer(method: string, response: Response): Promise<Answer | null> {
  const bytes = await readBounded(method, response, MAX_ANSWER_BYTES);
  if (bytes === null) return null;
  try {
    const parsed = Answer.safeParse(JSON.parse(new TextDecoder().decode(bytes)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The body, or null once it passes maxBytes (the rest is not read). */
async function readBounded(
  method: string,
  response: Response,
  maxBytes: number,
): Promise<Uint8Array | null> {
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel();
        return null;
      }
      chunks.push(value);
    }
  } catch {
    throw new TelegramApiError(method, "network", `Telegram's answer to ${method} was cut off`);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
