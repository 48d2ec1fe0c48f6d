// The Bot API client against the Telegram stand-in (test/stand-ins/telegram-stand-in.ts), by the
// Bot API's own rules: "Making requests" (POST JSON, {ok, result} / {ok, error_code, description,
// parameters}), 429 with parameters.retry_after, file downloads (getFile, /file/bot<token>/<path>).
import { beforeEach, describe, expect, it } from "vitest";
import {
  createTelegramBotApi,
  TelegramApiError,
  type TelegramBotApiOptions,
} from "../../../src/clients/telegram/bot-api.ts";
import { createTelegramStandIn } from "../../stand-ins/telegram-stand-in.ts";

const TOKEN = "7000000001:AAH-test_token_not_real_0123456789abc";
const BASE = "https://telegram.test";
const BOT = { id: 7_000_000_001, username: "ada_agent_bot", first_name: "Ada" };
const GROUP = -1_001_987_654_321;

const telegram = createTelegramStandIn({ token: TOKEN, bot: BOT });
let slept: number[] = [];

function api(overrides: Partial<TelegramBotApiOptions> = {}) {
  return createTelegramBotApi({
    token: TOKEN,
    baseUrl: BASE,
    fetch: (input, init) => telegram.fetch(input, init),
    sleep: async (ms) => {
      slept.push(ms);
    },
    random: () => 0.5,
    ...overrides,
  });
}

async function failure(promise: Promise<unknown>): Promise<TelegramApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TelegramApiError) return error;
    throw error;
  }
  throw new Error("expected the call to fail");
}

beforeEach(() => {
  telegram.reset();
  slept = [];
});

describe("Making requests", () => {
  it("getMe answers the bot's identity", async () => {
    const me = await api().getMe();
    expect(me).toMatchObject({ id: BOT.id, is_bot: true, username: "ada_agent_bot" });
    expect(me.can_read_all_group_messages).toBe(false);
  });

  it("sendMessage posts JSON with reply_parameters and the topic, and answers the message id", async () => {
    const sent = await api().sendMessage({
      chat_id: GROUP,
      text: "4.",
      reply_parameters: { message_id: 40, allow_sending_without_reply: true },
      message_thread_id: 55,
      link_preview_options: { is_disabled: true },
    });
    expect(sent.message_id).toBeGreaterThan(0);
    expect(telegram.calls).toEqual([
      {
        method: "sendMessage",
        status: 200,
        at: expect.any(Number),
        body: {
          chat_id: GROUP,
          text: "4.",
          reply_parameters: { message_id: 40, allow_sending_without_reply: true },
          message_thread_id: 55,
          link_preview_options: { is_disabled: true },
        },
      },
    ]);
    // Plain text: no parse_mode, so nothing the model writes needs escaping.
    expect(telegram.calls[0]!.body).not.toHaveProperty("parse_mode");
    expect(telegram.sent(GROUP)).toEqual(["4."]);
  });

  it("keeps a supergroup id past 2^31 exact on the wire", async () => {
    await api().sendMessage({ chat_id: -1_009_876_543_210_123, text: "hi" });
    expect(telegram.sent(-1_009_876_543_210_123)).toEqual(["hi"]);
  });

  it("refuses a text over 4,096 characters before calling (split it first)", async () => {
    const error = await failure(api().sendMessage({ chat_id: GROUP, text: "a".repeat(4_097) }));
    expect(error.reason).toBe("invalid_request");
    expect(error.retryable).toBe(false);
    expect(telegram.calls).toHaveLength(0);
  });

  it("edits a message's text and removes its keyboard", async () => {
    const client = api();
    const { message_id } = await client.sendMessage({
      chat_id: GROUP,
      text: "Approve?",
      reply_markup: { inline_keyboard: [[{ text: "✅ Approve", callback_data: "ap:y" }]] },
    });
    await client.editMessageText({ chat_id: GROUP, message_id, text: "✅ Approved" });
    expect(telegram.messageText(GROUP, message_id)).toBe("✅ Approved");
    expect(telegram.calls[1]!.body).not.toHaveProperty("reply_markup");
  });

  it("sends typing to a topic, answers a callback query and sets the webhook", async () => {
    const client = api();
    await client.sendChatAction(GROUP, "typing", 55);
    await client.answerCallbackQuery("4382bfdwdsb323b2d9", "Only the person who asked can answer.");
    await client.setWebhook({
      url: "https://agents.test/telegram/webhook",
      secret_token: "s3cret_-token",
      allowed_updates: ["message", "edited_message", "callback_query"],
      drop_pending_updates: true,
    });
    expect(telegram.calls.map((c) => [c.method, c.body])).toEqual([
      ["sendChatAction", { chat_id: GROUP, action: "typing", message_thread_id: 55 }],
      [
        "answerCallbackQuery",
        { callback_query_id: "4382bfdwdsb323b2d9", text: "Only the person who asked can answer." },
      ],
      [
        "setWebhook",
        {
          url: "https://agents.test/telegram/webhook",
          secret_token: "s3cret_-token",
          allowed_updates: ["message", "edited_message", "callback_query"],
          drop_pending_updates: true,
        },
      ],
    ]);
    expect(telegram.webhook).toMatchObject({ secret_token: "s3cret_-token" });
  });

  it("refuses a webhook secret Telegram would refuse", async () => {
    const error = await failure(
      api().setWebhook({ url: "https://a.test/w", secret_token: "has space", allowed_updates: [] }),
    );
    expect(error.reason).toBe("invalid_request");
    expect(telegram.calls).toHaveLength(0);
  });
});

describe("Errors: 429, 5xx, other 4xx", () => {
  it("waits retry_after on a 429 and sends once it passes", async () => {
    telegram.failNext("sendMessage", {
      error_code: 429,
      description: "Too Many Requests: retry after 3",
      retry_after: 3,
    });
    await api().sendMessage({ chat_id: GROUP, text: "hello" });
    expect(slept).toEqual([3_000]);
    expect(telegram.calls.map((c) => c.status)).toEqual([429, 200]);
    expect(telegram.sent(GROUP)).toEqual(["hello"]);
  });

  it("gives up at once, retryable, when retry_after is past 30 s", async () => {
    telegram.failNext("sendMessage", {
      error_code: 429,
      description: "Too Many Requests: retry after 45",
      retry_after: 45,
    });
    const error = await failure(api().sendMessage({ chat_id: GROUP, text: "hello" }));
    expect(error).toMatchObject({
      reason: "rate_limited",
      status: 429,
      errorCode: 429,
      retryable: true,
      retryAfterMs: 45_000,
    });
    expect(slept).toEqual([]);
    expect(telegram.sent(GROUP)).toEqual([]);
  });

  it("backs off on 5xx and on a dropped connection, then succeeds", async () => {
    telegram.failNext("sendMessage", { error_code: 502, description: "Bad Gateway" });
    telegram.dropNext("sendMessage");
    await api().sendMessage({ chat_id: GROUP, text: "hello" });
    // Full jitter with random() = 0.5: half of 500 ms, then half of 1,000 ms.
    expect(slept).toEqual([250, 500]);
    expect(telegram.calls.map((c) => c.status)).toEqual([502, 0, 200]);
  });

  it("stops after maxAttempts on repeated 5xx, retryable", async () => {
    for (let i = 0; i < 3; i++)
      telegram.failNext("sendMessage", { error_code: 500, description: "Internal Server Error" });
    const error = await failure(api({ maxAttempts: 3 }).sendMessage({ chat_id: GROUP, text: "x" }));
    expect(error).toMatchObject({ reason: "server", status: 500, retryable: true });
    expect(telegram.calls).toHaveLength(3);
  });

  it("takes a 400 as final, with Telegram's description", async () => {
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: chat not found",
    });
    const error = await failure(api().sendMessage({ chat_id: GROUP, text: "x" }));
    expect(error).toMatchObject({
      reason: "refused",
      status: 400,
      errorCode: 400,
      retryable: false,
    });
    expect(error.message).toBe("Telegram refused sendMessage (400): Bad Request: chat not found");
    expect(telegram.calls).toHaveLength(1);
    expect(slept).toEqual([]);
  });

  it("carries migrate_to_chat_id when a group became a supergroup", async () => {
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: group chat was upgraded to a supergroup chat",
      migrate_to_chat_id: -1_001_234_567_890,
    });
    const error = await failure(api().sendMessage({ chat_id: -4_012_345, text: "x" }));
    expect(error.migrateToChatId).toBe(-1_001_234_567_890);
  });

  it("caps a long description at 200 characters", async () => {
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: `Bad Request: ${"z".repeat(500)}`,
    });
    const error = await failure(api().sendMessage({ chat_id: GROUP, text: "x" }));
    expect(error.message.length).toBeLessThan(260);
    expect(error.message).not.toContain("z".repeat(201));
  });

  it("never puts the token or the URL in an error message", async () => {
    const secret = TOKEN.split(":")[1]!;
    const messages: string[] = [];
    // A wrong token (401), a description echoing the token, a dropped connection, a 5xx.
    const wrong = createTelegramBotApi({
      token: "7000000001:AAH-another_token_0123456789",
      baseUrl: BASE,
      fetch: (input, init) => telegram.fetch(input, init),
    });
    messages.push((await failure(wrong.getMe())).message);
    telegram.failNext("getMe", {
      error_code: 400,
      description: `Bad Request: token ${TOKEN} is odd`,
    });
    messages.push((await failure(api().getMe())).message);
    const unreachable = api({
      maxAttempts: 1,
      fetch: async (input) => {
        throw new TypeError(`fetch failed for ${String(input)}`);
      },
    });
    messages.push((await failure(unreachable.getMe())).message);
    telegram.failNext("getMe", { error_code: 503, description: `Service Unavailable ${TOKEN}` });
    messages.push((await failure(api({ maxAttempts: 1 }).getMe())).message);
    telegram.failNext("file", { error_code: 404, description: `Not Found ${TOKEN}` });
    messages.push((await failure(api().downloadFile("voice/file_1.oga", 100))).message);
    expect(messages[0]).toBe("Telegram refused getMe (401): Unauthorized");
    for (const message of messages) {
      expect(message).not.toContain(secret);
      expect(message).not.toContain(BASE);
      expect(message).not.toContain("/bot");
    }
  });

  it("refuses to call without a bot token", async () => {
    const error = await failure(api({ token: "" }).getMe());
    expect(error.reason).toBe("not_configured");
    expect(telegram.calls).toHaveLength(0);
  });

  it("sends typing once, without waiting out a 429 (the next renewal is the retry)", async () => {
    telegram.failNext("sendChatAction", {
      error_code: 429,
      description: "Too Many",
      retry_after: 2,
    });
    const error = await failure(api().sendChatAction(GROUP, "typing"));
    expect(error.reason).toBe("rate_limited");
    expect(slept).toEqual([]);
    expect(telegram.calls).toHaveLength(1);
  });
});

describe("Files: getFile and downloads (bots get files up to 20 MB)", () => {
  const voice = new Uint8Array(5_000).map((_, i) => i % 251);

  it("gets a file's path and downloads its bytes with the content type", async () => {
    telegram.addFile("AwACAgQAAxkBAAIC", voice, "audio/ogg");
    const client = api();
    const file = await client.getFile("AwACAgQAAxkBAAIC");
    expect(file).toMatchObject({ file_id: "AwACAgQAAxkBAAIC", file_size: 5_000 });
    const downloaded = await client.downloadFile(file.file_path!, 10_000);
    expect(downloaded.contentType).toBe("audio/ogg");
    expect(downloaded.bytes).toEqual(voice);
    expect(telegram.calls.at(-1)).toMatchObject({
      method: "file",
      body: { file_path: file.file_path },
    });
  });

  it("refuses a file whose Content-Length is over the bound, without reading it", async () => {
    const path = telegram.addFile("big", voice, "audio/ogg");
    const error = await failure(api().downloadFile(path, 4_999));
    expect(error).toMatchObject({ reason: "too_large", retryable: false });
  });

  it("refuses a file that streams past the bound with no or a lying Content-Length", async () => {
    const noLength = telegram.addFile("stream", voice, "audio/ogg", { contentLength: "omit" });
    expect((await failure(api().downloadFile(noLength, 2_048))).reason).toBe("too_large");
    const lying = telegram.addFile("liar", voice, "audio/ogg", { contentLength: 10 });
    expect((await failure(api().downloadFile(lying, 2_048))).reason).toBe("too_large");
  });

  it("answers an unknown file_id with Telegram's 400, final", async () => {
    const error = await failure(api().getFile("nope"));
    expect(error).toMatchObject({ reason: "refused", errorCode: 400, retryable: false });
    expect(error.message).toContain("invalid file_id");
  });

  it("refuses a file path that climbs out of the file area", async () => {
    const error = await failure(api().downloadFile("../bot/getMe", 100));
    expect(error.reason).toBe("invalid_request");
    expect(telegram.calls).toHaveLength(0);
  });
});
