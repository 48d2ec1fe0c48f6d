// Who the bot is in its workspace (auth.test: its user id, bot id, workspace and name), which
// mention detection, "never answer yourself" and the one-workspace check need. Asked once per
// isolate and kept for an hour; a failed lookup is not kept, so the next event asks again.
import type { SlackWebApi } from "./web-api.ts";

export const SLACK_IDENTITY_TTL_MS = 60 * 60 * 1000;

export interface SlackBotIdentity {
  /** The bot user's id (U…): `<@U…>` mentions it, and its own messages carry it. */
  userId: string;
  botId: string | null;
  /** The workspace the token belongs to: the only one this deployment answers. */
  teamId: string;
  /** The bot user's name, for the model's text (`@name`). */
  name: string;
}

interface Cached {
  /** The token the identity belongs to: a rotated token may be another app or workspace. */
  token: string;
  identity: Promise<SlackBotIdentity>;
  at: number;
}

let cached: Cached | null = null;

export function slackBotIdentity(
  api: SlackWebApi,
  token: string,
  now: number = Date.now(),
): Promise<SlackBotIdentity> {
  if (cached && cached.token === token && now - cached.at < SLACK_IDENTITY_TTL_MS)
    return cached.identity;
  const identity = api.authTest().then((me) => ({
    userId: me.user_id,
    botId: me.bot_id ?? null,
    teamId: me.team_id,
    name: me.user ?? "agent",
  }));
  const entry: Cached = { token, identity, at: now };
  cached = entry;
  identity.catch(() => {
    if (cached === entry) cached = null;
  });
  return identity;
}

/** Forgets the identity (tests start a fresh isolate with it). */
export function forgetSlackBotIdentity(): void {
  cached = null;
}
