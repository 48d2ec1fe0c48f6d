// Telegram for the workerd tests: the model and Bot API stand-ins behind globalThis.fetch (the
// worker's TELEGRAM_API_BASE is http://telegram.test), Updates posted to the webhook with the
// configured secret, and the chat binding (`POST /clients/telegram/config`).
import { afterEach, vi } from "vitest";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";
import { createTelegramStandIn } from "../stand-ins/telegram-stand-in.ts";
import { api, MODEL_HOST } from "./api.ts";

/** vitest.config.ts's TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET. */
export const TELEGRAM_TOKEN = "123456:TEST-token_value";
export const TELEGRAM_SECRET = "test-telegram-webhook-secret";
/** In TELEGRAM_OWNER_IDS. */
export const TELEGRAM_OWNER_ID = 700000001;
export const TELEGRAM_BOT = { id: 123456, username: "edge_agent_bot", first_name: "Edge" };

export function useTelegramStandIns() {
  const model = createOpenAIStandIn();
  const telegram = createTelegramStandIn({ token: TELEGRAM_TOKEN, bot: TELEGRAM_BOT });
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.host === MODEL_HOST) return model.fetch(input, init);
    if (url.host === "telegram.test") return telegram.fetch(input, init);
    return realFetch(input, init);
  });
  afterEach(() => {
    model.releaseHung({ text: "late" });
    model.reset();
    telegram.reset();
  });
  return { model, telegram };
}

/** Posts an Update (or any body) to the webhook; `secret: null` sends no secret header. */
export function postUpdate(
  body: unknown,
  options: { secret?: string | null; raw?: string } = {},
): Promise<Response> {
  const secret = options.secret === undefined ? TELEGRAM_SECRET : options.secret;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
  return api("POST", "/telegram/webhook", {
    token: null,
    headers,
    body: options.raw ?? JSON.stringify(body),
  });
}

/** Binds the bot's chats to an agent. */
export async function bindTelegram(defaultAgentId: string, allowedChats: string[] = []) {
  const response = await api("POST", "/clients/telegram/config", {
    body: { defaultAgentId, allowedChats },
  });
  if (response.status !== 200)
    throw new Error(`binding Telegram failed: ${response.status} ${await response.text()}`);
}

let chatCounter = 0;
/** A fresh supergroup id per test (-100…), so tests do not share rooms. */
export function groupChatId(): number {
  chatCounter += 1;
  return -1001000000000 - (Date.now() % 1_000_000_000) * 10 - chatCounter;
}
