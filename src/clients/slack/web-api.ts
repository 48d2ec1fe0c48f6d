// Slack's Web API for what the bot does: who it is (auth.test), who a member is (users.info, for
// workspace admins), and its messages (chat.postMessage in a thread, chat.update, chat.postEphemeral).
// Slack answers HTTP 200 with `{ok: false, error}` for most failures; those are final, except its
// own server-side codes. 429 waits the Retry-After Slack gives (up to 30 s inline); 5xx and network
// errors back off (the shared caller, src/net/retrying-call.ts). `text` is always escaped here (Slack's `&`, `<`, `>` rule), so nothing the model
// writes can become `<!channel>` or `<@U…>`; only `blocks`, built by blocks.ts, carry markup.
import { z } from "zod";
import { DEFAULT_SLACK_API_BASE } from "../../settings.ts";
import { splitMessage } from "../chat/split.ts";
import { resolveRetryPolicy, serverRetryDelayMs, type Sleep } from "../../runtime/util/retry.ts";
import { retryingCall, type ApiAdapter } from "../../net/retrying-call.ts";

export { DEFAULT_SLACK_API_BASE };
/** Slack's advice for one message (it truncates at 40,000); a reply is split at this length. */
export const SLACK_MESSAGE_LIMIT = 4_000;
/** Codes Slack gives with HTTP 200 for its own trouble: worth another attempt. */
const RETRYABLE_CODES = new Set([
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
  "ratelimited",
]);

export class SlackApiError extends Error {
  /** Slack's short error code (`invalid_auth`, `channel_not_found`, …) or ours (`http_502`). */
  readonly error: string;
  readonly method: string;
  /** The HTTP status, 0 when Slack was not reached. */
  readonly status: number;
  readonly retryable: boolean;
  /** How long Slack asked us to wait (429), when it said. */
  readonly retryAfterMs: number | null;
  constructor(
    method: string,
    error: string,
    status: number,
    retryable: boolean,
    retryAfterMs: number | null = null,
  ) {
    super(`Slack ${method} failed: ${error}${status ? ` (HTTP ${status})` : ""}`);
    this.name = "SlackApiError";
    this.method = method;
    this.error = error;
    this.status = status;
    this.retryable = retryable;
    this.retryAfterMs = retryAfterMs;
  }
}

export interface SlackWebApiOptions {
  /** The bot token (`xoxb-…`). */
  token: string;
  baseUrl?: string;
  fetch?: typeof fetch;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  maxAttempts?: number;
}

export interface PostMessageInput {
  channel: string;
  /** Plain text (escaped here); with blocks, what notifications and screen readers show. */
  text: string;
  /** The thread's root ts (not a reply's): the message goes into that thread. */
  thread_ts?: string;
  blocks?: readonly object[];
}

export interface UpdateInput {
  channel: string;
  ts: string;
  text: string;
  blocks?: readonly object[];
}

export interface PostEphemeralInput {
  channel: string;
  user: string;
  text: string;
  thread_ts?: string;
}

const SlackId = z.string().regex(/^[A-Z0-9]{2,32}$/);
const Ts = z.string().regex(/^\d{1,12}\.\d{1,9}$/);

const AuthTest = z.object({
  user_id: SlackId,
  bot_id: SlackId.optional(),
  team_id: SlackId,
  team: z.string().max(255).optional(),
  user: z.string().max(255).optional(),
});
export type SlackAuthTest = z.infer<typeof AuthTest>;

const SentMessage = z.object({ channel: SlackId, ts: Ts });
export type SlackSentMessage = z.infer<typeof SentMessage>;

const SlackUser = z.object({
  id: SlackId,
  name: z.string().max(255),
  real_name: z.string().max(255).optional(),
  is_admin: z.boolean().optional(),
  is_owner: z.boolean().optional(),
  is_bot: z.boolean().optional(),
  deleted: z.boolean().optional(),
});
export type SlackUser = z.infer<typeof SlackUser>;

const Ephemeral = z.object({ message_ts: Ts });

const Failure = z.object({ ok: z.literal(false), error: z.string() });

export interface SlackWebApi {
  authTest(): Promise<SlackAuthTest>;
  postMessage(input: PostMessageInput): Promise<SlackSentMessage>;
  update(input: UpdateInput): Promise<SlackSentMessage>;
  usersInfo(user: string): Promise<SlackUser>;
  postEphemeral(input: PostEphemeralInput): Promise<{ message_ts: string }>;
}

/**
 * Slack's rule for text: `&`, `<` and `>` are control characters and must be sent as `&amp;`,
 * `&lt;`, `&gt;`. Escaped, `<!channel>` or `<@U1>` from the model is shown, not acted on.
 */
export function escapeSlackText(text: string): string {
  return text.replace(/[&<>]/g, (ch) => (ch === "&" ? "&amp;" : ch === "<" ? "&lt;" : "&gt;"));
}

/** A reply cut into messages of at most SLACK_MESSAGE_LIMIT characters (before escaping). */
export function slackReplyParts(text: string): string[] {
  return splitMessage(text, SLACK_MESSAGE_LIMIT);
}

export function createSlackWebApi(options: SlackWebApiOptions): SlackWebApi {
  const base = (options.baseUrl || DEFAULT_SLACK_API_BASE).replace(/\/+$/, "");
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const now = options.now ?? Date.now;
  const policy = resolveRetryPolicy({
    maxAttempts: options.maxAttempts ?? 5,
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  });

  async function call<T>(
    method: string,
    args: Record<string, unknown>,
    schema: z.ZodType<T>,
    // Slack's read methods (users.info, auth.test) take form fields, not JSON.
    encoding: "json" | "form" = "json",
  ): Promise<T> {
    const body =
      encoding === "json"
        ? JSON.stringify(args)
        : new URLSearchParams(
            Object.entries(args).map(([key, value]) => [key, String(value)]),
          ).toString();
    const headers = {
      authorization: `Bearer ${options.token}`,
      "content-type":
        encoding === "json"
          ? "application/json; charset=utf-8"
          : "application/x-www-form-urlencoded",
    };
    const result = await retryingCall(
      () => doFetch(`${base}/${method}`, { method: "POST", headers, body }),
      slackAdapter(method, schema, now),
      { policy, sleep: options.sleep, random: options.random, now },
    );
    if (result.ok) return result.value;
    throw result.failure;
  }

  return {
    authTest: () => call("auth.test", {}, AuthTest, "form"),
    postMessage: (input) =>
      call(
        "chat.postMessage",
        {
          channel: input.channel,
          text: escapeSlackText(input.text),
          ...(input.thread_ts ? { thread_ts: input.thread_ts } : {}),
          ...(input.blocks ? { blocks: input.blocks } : {}),
          // A link in a reply would otherwise unfurl a preview of whatever the model linked to.
          unfurl_links: false,
          unfurl_media: false,
          // Bare @names and #channels stay text (Slack's default, stated so it cannot drift).
          link_names: false,
        },
        SentMessage,
      ),
    update: (input) =>
      call(
        "chat.update",
        {
          channel: input.channel,
          ts: input.ts,
          text: escapeSlackText(input.text),
          // chat.update keeps the old blocks unless told otherwise: [] removes the buttons.
          blocks: input.blocks ?? [],
          link_names: false,
        },
        SentMessage,
      ),
    usersInfo: async (user) =>
      (await call("users.info", { user }, z.object({ user: SlackUser }), "form")).user,
    postEphemeral: (input) =>
      call(
        "chat.postEphemeral",
        {
          channel: input.channel,
          user: input.user,
          text: escapeSlackText(input.text),
          ...(input.thread_ts ? { thread_ts: input.thread_ts } : {}),
          link_names: false,
        },
        Ephemeral,
      ),
  };
}

/** Slack's side of the shared caller: 429 with Retry-After, `{ok: false}` with HTTP 200. */
function slackAdapter<T>(
  method: string,
  schema: z.ZodType<T>,
  now: () => number,
): ApiAdapter<T, SlackApiError> {
  return {
    async read(response) {
      if (response.status === 429) {
        await response.body?.cancel();
        const wait = serverRetryDelayMs(response.headers, now()) ?? 1_000;
        const failure = new SlackApiError(method, "ratelimited", 429, true, wait);
        return { ok: false, failure, retryAfterMs: wait };
      }
      if (response.status >= 500) {
        await response.body?.cancel();
        const failure = new SlackApiError(method, `http_${response.status}`, response.status, true);
        return { ok: false, failure };
      }
      const answer = await readJson(response);
      const failed = Failure.safeParse(answer);
      const code = failed.success ? errorCode(failed.data.error) : `http_${response.status}`;
      if (!response.ok)
        return { ok: false, failure: new SlackApiError(method, code, response.status, false) };
      if (failed.success) {
        const retryable = RETRYABLE_CODES.has(code);
        const failure = new SlackApiError(method, code, response.status, retryable);
        return { ok: false, failure, retryable };
      }
      const ok = z.object({ ok: z.literal(true) }).safeParse(answer);
      const parsed = schema.safeParse(answer);
      if (!ok.success || !parsed.success)
        return {
          ok: false,
          failure: new SlackApiError(method, "invalid_response", response.status, false),
        };
      return { ok: true, value: parsed.data };
    },
    // The thrown error's text is not ours to repeat; the code says what happened.
    unreachable: () => new SlackApiError(method, "network_error", 0, true),
  };
}

async function readJson(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return undefined;
  }
}

/** Slack's codes are short snake_case words; anything else is not repeated. */
function errorCode(code: string): string {
  return /^[a-z0-9_]{1,64}$/.test(code) ? code : "unknown_error";
}
