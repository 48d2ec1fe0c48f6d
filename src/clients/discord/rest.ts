// Discord's REST API for what the bot sends: editing the deferred response, follow-up messages
// (interaction webhooks, no bot token needed), and a channel message with the bot token when the
// interaction token has expired. 429s wait the `retry_after` Discord gives; 5xx and network errors
// back off; any other 4xx is final. Every message is sent with `allowed_mentions: {parse: []}`, so
// nothing the model writes can ping @everyone, a role or a user.
import {
  backoffDelayMs,
  resolveRetryPolicy,
  serverRetryDelayMs,
  abortableSleep,
  type Sleep,
} from "../../model/retry.ts";

export const DEFAULT_DISCORD_API_BASE = "https://discord.com/api/v10";
/** An interaction token works for 15 minutes; we stop using it a little before. */
export const INTERACTION_TOKEN_LIFETIME_MS = 15 * 60 * 1000;
export const TOKEN_SAFETY_MARGIN_MS = 20_000;
/** Longer rate-limit waits than this are left to the room's retry (alarm) instead of sleeping. */
const MAX_INLINE_WAIT_MS = 30_000;

export interface DiscordMessageBody {
  content: string;
  flags?: number;
  components?: unknown[];
  /** Makes the message a reply (Gateway conversations); the replied-to author is not pinged. */
  message_reference?: { message_id: string; channel_id: string; fail_if_not_exists: boolean };
}

export class DiscordApiError extends Error {
  readonly status: number;
  readonly retryable: boolean;
  constructor(status: number, message: string, retryable: boolean) {
    super(message);
    this.name = "DiscordApiError";
    this.status = status;
    this.retryable = retryable;
  }
}

export interface DiscordRestOptions {
  baseUrl?: string;
  botToken?: string;
  fetch?: typeof fetch;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  maxAttempts?: number;
}

/** The message Discord created or edited (its id, when the answer carried one). */
export interface SentMessage {
  id: string | null;
}

export interface DiscordRest {
  editOriginal(
    applicationId: string,
    token: string,
    body: DiscordMessageBody,
  ): Promise<SentMessage>;
  followUp(applicationId: string, token: string, body: DiscordMessageBody): Promise<SentMessage>;
  /** Edits a follow-up sent with the same interaction token. */
  editFollowUp(
    applicationId: string,
    token: string,
    messageId: string,
    body: DiscordMessageBody,
  ): Promise<SentMessage>;
  channelMessage(channelId: string, body: DiscordMessageBody): Promise<SentMessage>;
  editChannelMessage(
    channelId: string,
    messageId: string,
    body: DiscordMessageBody,
  ): Promise<SentMessage>;
  /** Shows "<bot> is typing…" for 10 s or until the bot's next message (one attempt, no retry). */
  typing(channelId: string): Promise<void>;
}

export function createDiscordRest(options: DiscordRestOptions = {}): DiscordRest {
  const base = (options.baseUrl || DEFAULT_DISCORD_API_BASE).replace(/\/+$/, "");
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const policy = resolveRetryPolicy({
    maxAttempts: options.maxAttempts ?? 5,
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  });

  const send = async (
    method: string,
    path: string,
    body: DiscordMessageBody,
    auth?: string,
  ): Promise<SentMessage> => {
    // A reply would ping the person replied to unless replied_user says otherwise.
    const allowed = body.message_reference ? { parse: [], replied_user: false } : { parse: [] };
    const payload = JSON.stringify({ ...body, allowed_mentions: allowed });
    let last: DiscordApiError | null = null;
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      let response: Response;
      try {
        response = await doFetch(`${base}${path}`, {
          method,
          headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
          body: payload,
        });
      } catch (error) {
        last = new DiscordApiError(
          0,
          `Discord unreachable: ${error instanceof Error ? error.message : String(error)}`,
          true,
        );
        await sleep(backoffDelayMs(attempt, policy, random));
        continue;
      }
      if (response.ok) return { id: messageId(await response.text()) };
      const text = await response.text();
      if (response.status === 429) {
        const wait = retryAfterMs(text, response.headers, now());
        last = new DiscordApiError(429, `Discord rate limit (retry after ${wait} ms)`, true);
        if (wait > MAX_INLINE_WAIT_MS) break;
        await sleep(wait);
        continue;
      }
      if (response.status >= 500) {
        last = new DiscordApiError(response.status, `Discord answered ${response.status}`, true);
        await sleep(backoffDelayMs(attempt, policy, random));
        continue;
      }
      // The path holds the interaction token: never put it in an error.
      throw new DiscordApiError(
        response.status,
        `Discord refused the message (${response.status}): ${discordMessage(text)}`,
        false,
      );
    }
    throw last ?? new DiscordApiError(0, "Discord delivery failed", true);
  };

  const bot = (): string => {
    if (!options.botToken)
      throw new DiscordApiError(
        0,
        "DISCORD_BOT_TOKEN is not set, so the bot cannot post to the channel",
        false,
      );
    return `Bot ${options.botToken}`;
  };

  return {
    editOriginal: (applicationId, token, body) =>
      send("PATCH", `/webhooks/${applicationId}/${token}/messages/@original`, body),
    // wait=true makes Discord answer with the message, whose id a later edit needs.
    followUp: (applicationId, token, body) =>
      send("POST", `/webhooks/${applicationId}/${token}?wait=true`, body),
    editFollowUp: (applicationId, token, id, body) =>
      send("PATCH", `/webhooks/${applicationId}/${token}/messages/${id}`, body),
    channelMessage: async (channelId, body) =>
      send("POST", `/channels/${channelId}/messages`, body, bot()),
    editChannelMessage: async (channelId, id, body) =>
      send("PATCH", `/channels/${channelId}/messages/${id}`, body, bot()),
    async typing(channelId) {
      const response = await doFetch(`${base}/channels/${channelId}/typing`, {
        method: "POST",
        headers: { authorization: bot() },
      });
      await response.body?.cancel();
      if (!response.ok)
        throw new DiscordApiError(response.status, `Discord answered ${response.status}`, false);
    },
  };
}

/** Discord puts the wait in the JSON body (`retry_after`, seconds, fractional) and in Retry-After. */
function retryAfterMs(body: string, headers: Headers, nowMs: number): number {
  try {
    const parsed = JSON.parse(body) as { retry_after?: unknown };
    if (typeof parsed.retry_after === "number" && parsed.retry_after >= 0)
      return Math.ceil(parsed.retry_after * 1000);
  } catch {
    // Fall back to the header.
  }
  return serverRetryDelayMs(headers, nowMs) ?? 1_000;
}

function messageId(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { id?: unknown };
    return typeof parsed.id === "string" && /^\d{1,20}$/.test(parsed.id) ? parsed.id : null;
  } catch {
    return null;
  }
}

function discordMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown; code?: unknown };
    if (typeof parsed.message === "string")
      return `${parsed.message}${typeof parsed.code === "number" ? ` (code ${parsed.code})` : ""}`.slice(
        0,
        200,
      );
  } catch {
    // Not JSON.
  }
  return body.slice(0, 200);
}
