// Discord's REST API for what the bot sends: editing the deferred response, follow-up messages
// (interaction webhooks, no bot token needed), a channel message with the bot token when the
// interaction token has expired, a thread started from a message (autoThread), and the deletion
// of a message the server's filter declined (filter-actions.ts). Before each request the limiter
// says whether it may go (Discord's route buckets and global limit, shared by the bot's rooms:
// rest-limiter.ts); each response's rate-limit headers go back to it. A 429 is
// waited out the same way; 5xx and network errors back off; any other 4xx is final (with
// Discord's error code): the shared caller, src/net/retrying-call.ts. A wait past 30 s is left to the room's retry (alarm). Every message is
// sent with `allowed_mentions: {parse: []}`, so nothing the model writes can ping @everyone, a
// role or a user.
import { abortableSleep, resolveRetryPolicy, type Sleep } from "../../runtime/util/retry.ts";
import { retryingCall, type ApiAdapter } from "../../net/retrying-call.ts";
import { log } from "../../log.ts";
import {
  discordRoute,
  rateLimitSeen,
  type DiscordRoute,
  type RateLimitSeen,
} from "../../rate-limits/discord-buckets.ts";
import { createLocalLimiter, type DiscordLimiter } from "./rest-limiter.ts";

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
  /** Discord's JSON error code of a refusal (e.g. 160004), when its answer carried one. */
  readonly code: number | null;
  constructor(status: number, message: string, retryable: boolean, code: number | null = null) {
    super(message);
    this.name = "DiscordApiError";
    this.status = status;
    this.retryable = retryable;
    this.code = code;
  }
}

/** Discord's error code: a thread was already started from this message. */
export const THREAD_ALREADY_CREATED = 160_004;

/** A public thread started from a message (Discord: name 1-100 characters). */
export interface ThreadStart {
  name: string;
  /** Minutes without activity before Discord archives it: 60, 1440, 4320 or 10080. */
  auto_archive_duration: 60 | 1440 | 4320 | 10080;
}

export interface DiscordRestOptions {
  baseUrl?: string;
  botToken?: string;
  fetch?: typeof fetch;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  maxAttempts?: number;
  /** Decides when each request may go (default: this isolate's own knowledge only). */
  limiter?: DiscordLimiter;
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
  /** Starts a public thread from a message; the thread's id (Discord: the message's id). */
  startThread(channelId: string, messageId: string, thread: ThreadStart): Promise<SentMessage>;
  /** Deletes someone's message (Manage Messages); `reason` goes to the server's audit log. */
  deleteChannelMessage(channelId: string, messageId: string, reason?: string): Promise<void>;
}

export function createDiscordRest(options: DiscordRestOptions = {}): DiscordRest {
  const base = (options.baseUrl || DEFAULT_DISCORD_API_BASE).replace(/\/+$/, "");
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const limiter = options.limiter ?? createLocalLimiter(undefined, options.now);
  const policy = resolveRetryPolicy({
    maxAttempts: options.maxAttempts ?? 5,
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  });

  /** Waits until the limiter lets `route` go; a wait past MAX_INLINE_WAIT_MS goes to the alarm. */
  const waitForTurn = async (route: DiscordRoute): Promise<DiscordApiError | undefined> => {
    let waited = 0;
    for (;;) {
      const wait = await limiter.reserve(route);
      if (wait === 0) break;
      if (waited + wait > MAX_INLINE_WAIT_MS)
        return new DiscordApiError(429, `Discord rate limit (retry after ${wait} ms)`, true);
      await sleep(wait);
      waited += wait;
    }
    if (waited > 0) log.info("discord_request_paced", { route: route.template, waitedMs: waited });
    return undefined;
  };

  /** Reports a response; awaited only when it changes what our next request does. */
  const report = async (route: DiscordRoute, seen: RateLimitSeen): Promise<void> => {
    const observed = limiter.observe(route, seen);
    if (seen.status === 429 || seen.remaining === 0) await observed;
  };

  const send = (
    method: string,
    path: string,
    body: DiscordMessageBody,
    auth?: string,
  ): Promise<SentMessage> => {
    // A reply would ping the person replied to unless replied_user says otherwise.
    const allowed = body.message_reference ? { parse: [], replied_user: false } : { parse: [] };
    return request(method, path, JSON.stringify({ ...body, allowed_mentions: allowed }), auth);
  };

  const request = async (
    method: string,
    path: string,
    payload: string | null,
    auth?: string,
    extraHeaders: Record<string, string> = {},
  ): Promise<SentMessage> => {
    // Interaction webhooks (no bot token) are not bound by the global limit.
    const route = discordRoute(method, path, !auth);
    const init = {
      method,
      headers: {
        ...(payload === null ? {} : { "content-type": "application/json" }),
        ...(auth ? { authorization: auth } : {}),
        ...extraHeaders,
      },
      ...(payload === null ? {} : { body: payload }),
    };
    const result = await retryingCall(() => doFetch(`${base}${path}`, init), adapter(route), {
      policy,
      sleep,
      random,
      now: options.now,
    });
    if (result.ok) return result.value;
    throw result.failure;
  };

  /** Discord's side of the shared caller: the limiter paces each request and learns from it. */
  const adapter = (route: DiscordRoute): ApiAdapter<SentMessage, DiscordApiError> => {
    let attempt = 0;
    return {
      async before() {
        attempt++;
        return waitForTurn(route);
      },
      async unreachable(error) {
        await report(route, rateLimitSeen(0, new Headers(), ""));
        return new DiscordApiError(
          0,
          `Discord unreachable: ${error instanceof Error ? error.message : String(error)}`,
          true,
        );
      },
      async read(response) {
        const text = await response.text();
        const seen = rateLimitSeen(response.status, response.headers, text);
        await report(route, seen);
        if (response.ok) return { ok: true, value: { id: messageId(text) } };
        if (response.status === 429) {
          // The limiter now holds the wait (this bucket's, or every global request's): ask again
          // at once and let it pace the request.
          log.warn("discord_rate_limited", {
            route: route.template,
            bucket: seen.bucket,
            scope: seen.scope ?? (seen.globalLimit ? "global" : null),
            global: seen.globalLimit,
            retryAfterMs: seen.retryAfterMs,
            attempt,
          });
          const message = `Discord rate limit (retry after ${seen.retryAfterMs} ms)`;
          return { ok: false, failure: new DiscordApiError(429, message, true), retryAfterMs: 0 };
        }
        if (response.status >= 500) {
          const message = `Discord answered ${response.status}`;
          return { ok: false, failure: new DiscordApiError(response.status, message, true) };
        }
        // The path holds the interaction token: never put it in an error.
        const message = `Discord refused the request (${response.status}): ${discordMessage(text)}`;
        const refusal = new DiscordApiError(response.status, message, false, discordCode(text));
        return { ok: false, failure: refusal };
      },
    };
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
    // Only the thread's name and archive time: a thread start takes no allowed_mentions.
    startThread: async (channelId, id, thread) =>
      request(
        "POST",
        `/channels/${channelId}/messages/${id}/threads`,
        JSON.stringify(thread),
        bot(),
      ),
    async deleteChannelMessage(channelId, id, reason) {
      // The audit log's reason travels URL-encoded (Discord docs "Audit Logs").
      const audit: Record<string, string> = reason
        ? { "x-audit-log-reason": encodeURIComponent(reason.slice(0, 400)) }
        : {};
      await request("DELETE", `/channels/${channelId}/messages/${id}`, null, bot(), audit);
    },
    async typing(channelId) {
      const path = `/channels/${channelId}/typing`;
      const route = discordRoute("POST", path);
      const authorization = bot();
      // Best effort: skipped rather than waited for when the limits are tight.
      if ((await limiter.reserve(route)) > 0) return;
      let response: Response;
      try {
        response = await doFetch(`${base}${path}`, { method: "POST", headers: { authorization } });
      } catch (error) {
        await report(route, rateLimitSeen(0, new Headers(), ""));
        throw error;
      }
      const text = await response.text();
      await report(route, rateLimitSeen(response.status, response.headers, text));
      if (!response.ok)
        throw new DiscordApiError(response.status, `Discord answered ${response.status}`, false);
    },
  };
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

/** The `code` of Discord's JSON error body, when there is one. */
function discordCode(body: string): number | null {
  try {
    const parsed = JSON.parse(body) as { code?: unknown };
    return typeof parsed.code === "number" ? parsed.code : null;
  } catch {
    return null;
  }
}
