// Telegram's Bot API as a fetch handler for tests and benchmarks, speaking the real wire format:
// `POST /bot<token>/<method>` (JSON, form or query parameters) answers `{ok: true, result}` or
// `{ok: false, error_code, description, parameters?}` with the error code as the HTTP status, and
// `GET /file/bot<token>/<file_path>` serves files added with `addFile`. A wrong token is a 401 as on
// Telegram. Every request is recorded in `calls`; failures are scripted per method with `failNext`
// (a 429 carries `parameters.retry_after`) or `dropNext` (the connection fails). It holds the rules a
// real bot trips on: text 1-4,096 characters, callback_data 1-64 bytes, a message to edit must exist.
// Builders for Updates (`messageUpdate`, `callbackUpdate`) are at the end.

export interface StandInBot {
  id: number;
  username: string;
  first_name: string;
}

export interface TelegramCall {
  /** The API method, or `file` for a download (its body is `{file_path}`). */
  method: string;
  body: Record<string, unknown>;
  /** 200, the scripted or rule-breaking error_code, or 0 for a dropped connection. */
  status: number;
  at: number;
}

export interface TelegramFailure {
  error_code: number;
  description: string;
  /** Seconds, sent as `parameters.retry_after` (Telegram's 429). */
  retry_after?: number;
  migrate_to_chat_id?: number;
}

export interface StandInFileOptions {
  /** Content-Length to announce instead of the true size, or "omit" to send none (a stream). */
  contentLength?: number | "omit";
  /** The size getFile reports; over 20 MB, getFile refuses as Telegram does ("file is too big"). */
  fileSize?: number;
}

/** The Bot API lets bots download files up to 20 MB. */
const MAX_BOT_DOWNLOAD_BYTES = 20 * 1024 * 1024;

export interface TelegramStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  readonly bot: StandInBot;
  /** Every request with the right token, failed ones included, in order. */
  readonly calls: readonly TelegramCall[];
  /** Requests with a wrong token (answered 401, not in `calls`). */
  readonly unauthorized: number;
  /** The next call of `method` (or a download, method `file`) fails like this; queued in order. */
  failNext(method: string, failure: TelegramFailure): void;
  /** The next call of `method` fails as a network error (fetch rejects). */
  dropNext(method: string): void;
  /** A file getFile knows, served at its file_path; returns that path. */
  addFile(
    fileId: string,
    bytes: Uint8Array,
    contentType: string,
    options?: StandInFileOptions,
  ): string;
  /** Texts of the messages sent to a chat, in order (successful sendMessage calls). */
  sent(chatId: number): string[];
  /** The text each message has now, after edits, by message id (any chat). */
  messageText(chatId: number, messageId: number): string | undefined;
  /** What setWebhook was last given. */
  readonly webhook: Record<string, unknown> | null;
  reset(): void;
}

interface StoredFile {
  fileId: string;
  path: string;
  bytes: Uint8Array;
  contentType: string;
  options: StandInFileOptions;
}

type Scripted = TelegramFailure | "drop";

const MESSAGE_LIMIT = 4_096;
const CALLBACK_DATA_BYTES = 64;

export function createTelegramStandIn(config: { token: string; bot: StandInBot }): TelegramStandIn {
  let calls: TelegramCall[] = [];
  let unauthorized = 0;
  let scripted = new Map<string, Scripted[]>();
  let files = new Map<string, StoredFile>();
  let messages = new Map<string, string>();
  let webhook: Record<string, unknown> | null = null;
  let nextMessageId = 1;
  const now = () => Date.now();

  const ok = (result: unknown) => Response.json({ ok: true, result });
  const refuse = (failure: TelegramFailure) => {
    const parameters: Record<string, number> = {};
    if (failure.retry_after !== undefined) parameters.retry_after = failure.retry_after;
    if (failure.migrate_to_chat_id !== undefined)
      parameters.migrate_to_chat_id = failure.migrate_to_chat_id;
    return Response.json(
      {
        ok: false,
        error_code: failure.error_code,
        description: failure.description,
        ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
      },
      { status: failure.error_code },
    );
  };
  const badRequest = (description: string) =>
    refuse({ error_code: 400, description: `Bad Request: ${description}` });
  const record = (method: string, body: Record<string, unknown>, status: number) => {
    calls.push({ method, body, status, at: now() });
  };
  const takeScripted = (method: string): Scripted | undefined => scripted.get(method)?.shift();

  const botUser = () => ({
    id: config.bot.id,
    is_bot: true,
    first_name: config.bot.first_name,
    username: config.bot.username,
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
  });

  const chatOf = (chatId: number) =>
    chatId > 0
      ? { id: chatId, type: "private", first_name: "Someone" }
      : {
          id: chatId,
          type: String(chatId).startsWith("-100") ? "supergroup" : "group",
          title: "A group",
        };

  /** The method's answer once the token and the script have let it through. */
  const answer = (method: string, body: Record<string, unknown>): Response => {
    switch (method) {
      case "getMe":
        return ok(botUser());
      case "sendMessage": {
        const chatId = Number(body.chat_id);
        if (!Number.isSafeInteger(chatId) || chatId === 0) return badRequest("chat not found");
        const problem = textProblem(body.text) ?? keyboardProblem(body.reply_markup);
        if (problem) return badRequest(problem);
        const messageId = nextMessageId++;
        messages.set(`${chatId}:${messageId}`, String(body.text));
        return ok({
          message_id: messageId,
          from: botUser(),
          chat: chatOf(chatId),
          date: Math.floor(now() / 1000),
          text: body.text,
          ...(body.message_thread_id !== undefined
            ? { message_thread_id: body.message_thread_id }
            : {}),
        });
      }
      case "editMessageText": {
        const key = `${Number(body.chat_id)}:${Number(body.message_id)}`;
        if (!messages.has(key)) return badRequest("message to edit not found");
        const problem = textProblem(body.text) ?? keyboardProblem(body.reply_markup);
        if (problem) return badRequest(problem);
        messages.set(key, String(body.text));
        return ok({
          message_id: Number(body.message_id),
          from: botUser(),
          chat: chatOf(Number(body.chat_id)),
          date: Math.floor(now() / 1000),
          edit_date: Math.floor(now() / 1000),
          text: body.text,
        });
      }
      case "sendChatAction":
        if (body.action === undefined) return badRequest("action is empty");
        return ok(true);
      case "answerCallbackQuery":
        if (typeof body.callback_query_id !== "string" || body.callback_query_id === "")
          return badRequest("query is too old and response timeout expired or query ID is invalid");
        if (typeof body.text === "string" && body.text.length > 200)
          return badRequest("MESSAGE_TOO_LONG");
        return ok(true);
      case "getFile": {
        const file = files.get(String(body.file_id));
        if (!file) return badRequest("invalid file_id");
        const size = file.options.fileSize ?? file.bytes.byteLength;
        if (size > MAX_BOT_DOWNLOAD_BYTES) return badRequest("file is too big");
        return ok({
          file_id: file.fileId,
          file_unique_id: `u-${file.fileId}`,
          file_size: size,
          file_path: file.path,
        });
      }
      case "setWebhook":
        if (typeof body.url !== "string" || !body.url.startsWith("https://"))
          return badRequest("bad webhook: An HTTPS URL must be provided for webhook");
        webhook = body;
        return ok(true);
      default:
        return refuse({ error_code: 404, description: "Not Found" });
    }
  };

  const download = (path: string): Response => {
    const file = [...files.values()].find((f) => f.path === path);
    if (!file) return refuse({ error_code: 404, description: "Not Found" });
    const headers: Record<string, string> = { "content-type": file.contentType };
    const length = file.options.contentLength;
    if (length !== "omit") headers["content-length"] = String(length ?? file.bytes.byteLength);
    // A stream in 1 KB chunks, so a reader that stops early is seen to stop early.
    const bytes = file.bytes;
    let at = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.byteLength) {
          controller.close();
          return;
        }
        controller.enqueue(bytes.slice(at, at + 1024));
        at += 1024;
      },
    });
    return new Response(body, { status: 200, headers });
  };

  return {
    async fetch(input, init) {
      const request =
        input instanceof Request && init === undefined ? input : new Request(input, init);
      const url = new URL(request.url);
      const api = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
      const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
      const token = api?.[1] ?? file?.[1];
      if (token !== config.token) {
        unauthorized += 1;
        await request.body?.cancel();
        return token === undefined
          ? refuse({ error_code: 404, description: "Not Found" })
          : refuse({ error_code: 401, description: "Unauthorized" });
      }
      const method = api ? api[2]! : "file";
      const body = file ? { file_path: decodeURIComponent(file[2]!) } : await params(request, url);
      const script = takeScripted(method);
      if (script === "drop") {
        record(method, body, 0);
        throw new TypeError("fetch failed: stand-in dropped the connection");
      }
      const response = script
        ? refuse(script)
        : file
          ? download(String(body.file_path))
          : answer(method, body);
      record(method, body, response.status);
      return response;
    },
    get bot() {
      return config.bot;
    },
    get calls() {
      return calls;
    },
    get unauthorized() {
      return unauthorized;
    },
    failNext(method, failure) {
      scripted.set(method, [...(scripted.get(method) ?? []), failure]);
    },
    dropNext(method) {
      scripted.set(method, [...(scripted.get(method) ?? []), "drop"]);
    },
    addFile(fileId, bytes, contentType, options = {}) {
      const path = `${folderOf(contentType)}/file_${files.size + 1}${extensionOf(contentType)}`;
      files.set(fileId, { fileId, path, bytes, contentType, options });
      return path;
    },
    sent(chatId) {
      return calls
        .filter(
          (c) =>
            c.method === "sendMessage" && c.status === 200 && Number(c.body.chat_id) === chatId,
        )
        .map((c) => String(c.body.text));
    },
    messageText(chatId, messageId) {
      return messages.get(`${chatId}:${messageId}`);
    },
    get webhook() {
      return webhook;
    },
    reset() {
      calls = [];
      unauthorized = 0;
      scripted = new Map();
      files = new Map();
      messages = new Map();
      webhook = null;
      nextMessageId = 1;
    },
  };
}

/** The Bot API takes parameters as JSON, a form, or the query string. */
async function params(request: Request, url: URL): Promise<Record<string, unknown>> {
  const type = request.headers.get("content-type") ?? "";
  const text = await request.text();
  if (type.includes("application/json") && text !== "")
    return JSON.parse(text) as Record<string, unknown>;
  const form = new URLSearchParams(type.includes("x-www-form-urlencoded") ? text : url.search);
  return Object.fromEntries(form);
}

function textProblem(text: unknown): string | null {
  if (typeof text !== "string" || text.trim() === "") return "message text is empty";
  if (text.length > MESSAGE_LIMIT) return "message is too long";
  return null;
}

function keyboardProblem(markup: unknown): string | null {
  if (markup === undefined) return null;
  const rows = (markup as { inline_keyboard?: unknown }).inline_keyboard;
  if (!Array.isArray(rows)) return "can't parse reply keyboard markup JSON object";
  for (const row of rows) {
    if (!Array.isArray(row)) return "can't parse reply keyboard markup JSON object";
    for (const button of row as Array<{ text?: unknown; callback_data?: unknown }>) {
      if (typeof button.text !== "string" || button.text === "")
        return "text buttons are unallowed in the inline keyboard";
      const data = button.callback_data;
      if (typeof data !== "string") continue;
      const bytes = new TextEncoder().encode(data).byteLength;
      if (bytes < 1 || bytes > CALLBACK_DATA_BYTES) return "BUTTON_DATA_INVALID";
    }
  }
  return null;
}

function folderOf(contentType: string): string {
  if (contentType.startsWith("audio/ogg")) return "voice";
  if (contentType.startsWith("image/")) return "photos";
  return "documents";
}

function extensionOf(contentType: string): string {
  if (contentType.startsWith("audio/ogg")) return ".oga";
  if (contentType === "image/jpeg") return ".jpg";
  if (contentType === "image/png") return ".png";
  if (contentType === "application/pdf") return ".pdf";
  return "";
}

// Updates as Telegram sends them to the webhook.

let updateCounter = 700_000_000;

export interface MessageUpdateOptions {
  chat: {
    id: number;
    type: "private" | "group" | "supergroup";
    title?: string;
    is_forum?: boolean;
  };
  from: { id: number; first_name: string; last_name?: string; username?: string; is_bot?: boolean };
  text?: string;
  caption?: string;
  entities?: Array<{ type: string; offset: number; length: number; user?: unknown }>;
  message_id?: number;
  reply_to_message?: Record<string, unknown>;
  message_thread_id?: number;
  is_topic_message?: boolean;
  /** Sent as `edited_message` with an edit_date. */
  edited?: boolean;
  extra?: Record<string, unknown>;
  update_id?: number;
}

/** A `message` (or `edited_message`) Update; entities go to caption_entities for a caption. */
export function messageUpdate(options: MessageUpdateOptions): Record<string, unknown> {
  const date = Math.floor(Date.now() / 1000);
  const message: Record<string, unknown> = {
    message_id: options.message_id ?? Math.floor(Math.random() * 1_000_000) + 1,
    from: { is_bot: false, ...options.from },
    chat: options.chat,
    date,
    ...(options.text !== undefined ? { text: options.text } : {}),
    ...(options.caption !== undefined ? { caption: options.caption } : {}),
    ...(options.entities
      ? { [options.caption !== undefined ? "caption_entities" : "entities"]: options.entities }
      : {}),
    ...(options.reply_to_message ? { reply_to_message: options.reply_to_message } : {}),
    ...(options.message_thread_id !== undefined
      ? { message_thread_id: options.message_thread_id }
      : {}),
    ...(options.is_topic_message !== undefined
      ? { is_topic_message: options.is_topic_message }
      : {}),
    ...(options.edited ? { edit_date: date } : {}),
    ...options.extra,
  };
  return {
    update_id: options.update_id ?? updateCounter++,
    [options.edited ? "edited_message" : "message"]: message,
  };
}

/** A `callback_query` Update: a press on a button of the bot's message. */
export function callbackUpdate(options: {
  from: { id: number; first_name: string; username?: string };
  chat: { id: number; type: "private" | "group" | "supergroup" };
  message_id: number;
  data: string;
  message_thread_id?: number;
  is_topic_message?: boolean;
  update_id?: number;
}): Record<string, unknown> {
  return {
    update_id: options.update_id ?? updateCounter++,
    callback_query: {
      id: String(BigInt(options.from.id) * 1000n + BigInt(updateCounter)),
      from: { is_bot: false, ...options.from },
      message: {
        message_id: options.message_id,
        chat: options.chat,
        date: Math.floor(Date.now() / 1000),
        ...(options.message_thread_id !== undefined
          ? { message_thread_id: options.message_thread_id }
          : {}),
        ...(options.is_topic_message !== undefined
          ? { is_topic_message: options.is_topic_message }
          : {}),
      },
      chat_instance: "-5312345678901234567",
      data: options.data,
    },
  };
}
