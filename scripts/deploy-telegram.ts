// The Telegram bot's part of `npm run deploy` (with TELEGRAM_BOT_TOKEN in the shell, or
// --telegram, which asks for it on a terminal): before anything changes it checks the token as the
// worker does (src/config.ts) and with Telegram (getMe) and picks the webhook secret; after the
// deploy it points the webhook at the worker. The token is in every Bot API URL: no message here
// names a URL, and neither the token nor the secret is ever printed.
import { randomBytes } from "node:crypto";
import { variableIssues } from "../src/config.ts";
import { DEFAULT_TELEGRAM_API_BASE } from "../src/settings.ts";

/** The Updates the webhook handles (src/http/routes/telegram/telegram.ts); others are not sent. */
export const TELEGRAM_ALLOWED_UPDATES = ["message", "edited_message", "callback_query"];

export interface TelegramSetup {
  token: string;
  secret: string;
  username: string;
}

const telegramBase = (): string =>
  (process.env.TELEGRAM_API_BASE?.trim() || DEFAULT_TELEGRAM_API_BASE).replace(/\/+$/, "");

/** One Bot API call. Its URL holds the token: no error here names the URL or the whole body. */
async function telegramCall(
  token: string,
  method: string,
  body?: unknown,
): Promise<{ ok: boolean; status: number; result?: unknown; description?: string }> {
  let response: Response;
  try {
    response = await fetch(`${telegramBase()}/bot${token}/${method}`, {
      method: body === undefined ? "GET" : "POST",
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
  } catch {
    throw new Error(`Telegram's Bot API did not answer ${method} (network error)`);
  }
  let answer: { ok?: unknown; result?: unknown; description?: unknown } = {};
  try {
    answer = (await response.json()) as typeof answer;
  } catch {}
  return {
    ok: response.ok && answer.ok === true,
    status: response.status,
    result: answer.result,
    ...(typeof answer.description === "string"
      ? { description: answer.description.slice(0, 200) }
      : {}),
  };
}

/**
 * The bot behind TELEGRAM_BOT_TOKEN (getMe), checked before the account is touched, and the
 * webhook secret to upload with it: the shell's TELEGRAM_WEBHOOK_SECRET, else a new random one
 * (the webhook is set with it right after the deploy; Telegram retries what it sends in between).
 */
export async function telegramSetup(
  asked: boolean,
  ask: ((question: string) => Promise<string>) | undefined,
): Promise<TelegramSetup | undefined> {
  const token = process.env.TELEGRAM_BOT_TOKEN?.trim() || (asked ? await telegramToken(ask) : "");
  if (!token) return undefined;
  const issues = variableIssues({
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_WEBHOOK_SECRET: process.env.TELEGRAM_WEBHOOK_SECRET?.trim() ?? "",
  });
  if (issues.length > 0) throw new Error(`Telegram: ${issues.join("; ")}`);
  const me = await telegramCall(token, "getMe");
  if (me.status === 401 || me.status === 404)
    throw new Error(
      "Telegram refused TELEGRAM_BOT_TOKEN (HTTP 401): copy it again from @BotFather (/token)",
    );
  const bot = me.result as { username?: unknown } | undefined;
  if (!me.ok || typeof bot?.username !== "string")
    throw new Error(
      `Telegram did not say which bot the token belongs to (HTTP ${me.status}${me.description ? `: ${me.description}` : ""})`,
    );
  const secret =
    process.env.TELEGRAM_WEBHOOK_SECRET?.trim() || randomBytes(32).toString("base64url");
  return { token, secret, username: bot.username };
}

/** --telegram without TELEGRAM_BOT_TOKEN: asked for on a terminal, refused elsewhere. */
async function telegramToken(
  ask: ((question: string) => Promise<string>) | undefined,
): Promise<string> {
  if (!ask)
    throw new Error(
      "--telegram needs the bot token: set TELEGRAM_BOT_TOKEN in this shell (@BotFather, /token), " +
        "or run on a terminal to be asked for it",
    );
  const typed = await ask("Telegram bot token (@BotFather, /token; not shown): ");
  if (!typed) throw new Error("--telegram needs the bot token");
  return typed;
}

/** Points the bot's webhook at the worker, with its secret and the Updates it handles. */
export async function setTelegramWebhook(telegram: TelegramSetup, base: string): Promise<string> {
  const url = `${base.replace(/\/+$/, "")}/telegram/webhook`;
  const set = await telegramCall(telegram.token, "setWebhook", {
    url,
    secret_token: telegram.secret,
    allowed_updates: TELEGRAM_ALLOWED_UPDATES,
  });
  if (set.ok) return `Telegram webhook: ${url} (set, with its secret).`;
  return [
    `Telegram webhook: Telegram did not take ${url} (HTTP ${set.status}${set.description ? `: ${set.description}` : ""}).`,
    "  Telegram needs a public https address; pass --url if the worker answers elsewhere.",
  ].join("\n");
}
