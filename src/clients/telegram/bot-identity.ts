// Who the bot is (getMe: its id and username), which mention and reply detection need. Asked once
// per isolate and kept for an hour (a username changes rarely and only through BotFather); a
// failed lookup is not kept, so the next update asks again.
import type { TelegramBotApi } from "./bot-api.ts";
import type { TelegramBotIdentity } from "./message-text.ts";

export const BOT_IDENTITY_TTL_MS = 60 * 60 * 1000;

interface Cached {
  /** The token the identity belongs to: a rotated token is another bot, maybe. */
  token: string;
  identity: Promise<TelegramBotIdentity>;
  at: number;
}

let cached: Cached | null = null;

export function botIdentity(
  api: TelegramBotApi,
  token: string,
  now: number = Date.now(),
): Promise<TelegramBotIdentity> {
  if (cached && cached.token === token && now - cached.at < BOT_IDENTITY_TTL_MS)
    return cached.identity;
  const identity = api.getMe().then((me) => ({ id: me.id, username: me.username }));
  const entry: Cached = { token, identity, at: now };
  cached = entry;
  identity.catch(() => {
    if (cached === entry) cached = null;
  });
  return identity;
}

/** Forgets the identity (tests start a fresh isolate with it). */
export function forgetBotIdentity(): void {
  cached = null;
}
