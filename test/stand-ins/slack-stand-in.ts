// Slack's Web API as a fetch handler for tests and benchmarks, speaking the wire format: POST
// /api/<method>, a bearer token, JSON or form bodies, and HTTP 200 with `{ok: false, error}` for
// refusals (a wrong token is `invalid_auth`, none is `not_authed`, as Slack answers). It records
// every call, keeps the bot's messages per channel (posted, then updated), and answers a scripted
// failure (429 with Retry-After, 5xx, an error code) for a method's next calls. Also: a request
// signed as Slack signs events, interactions and slash commands (`signedSlackRequest`).
import { signSlackRequest } from "../../src/clients/slack/signature.ts";

export interface SlackStandInUser {
  id: string;
  name?: string;
  real_name?: string;
  is_admin?: boolean;
  is_owner?: boolean;
  is_bot?: boolean;
  deleted?: boolean;
}

export interface SlackStandInOptions {
  token: string;
  botUserId: string;
  botId: string;
  teamId: string;
  users?: SlackStandInUser[];
}

export interface SlackCall {
  method: string;
  /** The arguments, from the JSON body or the form fields. */
  body: Record<string, unknown>;
  contentType: string;
  authorization: string | null;
  /** What the stand-in answered. */
  status: number;
  ok: boolean;
  error: string | null;
}

export interface SlackFailure {
  /** HTTP status (default 200 with an error code, 429 when retryAfterSeconds is set). */
  status?: number;
  /** Slack's error code in `{ok: false, error}` (default `ratelimited` for 429, none for 5xx). */
  error?: string;
  retryAfterSeconds?: number;
}

export interface SlackStandInMessage {
  ts: string;
  text: string;
  thread_ts?: string;
  blocks?: unknown[];
  /** Arguments as sent (unfurl_links, …) by the last post or update. */
  args: Record<string, unknown>;
  updates: number;
}

export interface SlackStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Every call, failed ones included, in order. */
  readonly calls: readonly SlackCall[];
  callsTo(method: string): SlackCall[];
  /** The next call to `method` fails like this (several: in order). */
  failNext(method: string, failure: SlackFailure): void;
  /** The bot's messages in a channel as they are now, oldest first. */
  posted(channel: string): SlackStandInMessage[];
  /** Ephemeral messages shown to one person (not kept in the channel). */
  ephemerals(channel: string): Array<{ user: string; text: string; thread_ts?: string }>;
  /** Resolves once `count` calls to `method` have succeeded. */
  waitFor(method: string, count: number, timeoutMs?: number): Promise<SlackCall[]>;
  reset(): void;
}

const FORM = "application/x-www-form-urlencoded";
/** Slack truncates longer text; chat.postMessage refuses far longer (msg_too_long). */
const MAX_TEXT_CHARS = 40_000;

export function createSlackStandIn(options: SlackStandInOptions): SlackStandIn {
  let calls: SlackCall[] = [];
  let failures = new Map<string, SlackFailure[]>();
  let channels = new Map<string, SlackStandInMessage[]>();
  let ephemeral = new Map<string, Array<{ user: string; text: string; thread_ts?: string }>>();
  let waiters: Array<() => void> = [];
  let clock = 1_712_000_000;
  let seq = 0;
  const nextTs = () =>
    `${clock + Math.floor(++seq / 1000)}.${String(seq % 1_000_000).padStart(6, "0")}`;

  const users = new Map<string, SlackStandInUser>(
    [{ id: options.botUserId, name: "agent", is_bot: true }, ...(options.users ?? [])].map(
      (user) => [user.id, user],
    ),
  );

  const methods: Record<string, (args: Record<string, unknown>) => Record<string, unknown>> = {
    "auth.test": () => ({
      url: "https://stand-in.slack.test/",
      team: "Stand-in team",
      user: "agent",
      team_id: options.teamId,
      user_id: options.botUserId,
      bot_id: options.botId,
    }),
    "chat.postMessage": (args) => {
      const channel = stringArg(args.channel);
      const text = stringArg(args.text);
      if (!channel) return { ok: false, error: "channel_not_found" };
      if (!text && !Array.isArray(args.blocks)) return { ok: false, error: "no_text" };
      if (text.length > MAX_TEXT_CHARS) return { ok: false, error: "msg_too_long" };
      const message: SlackStandInMessage = {
        ts: nextTs(),
        text,
        ...(typeof args.thread_ts === "string" ? { thread_ts: args.thread_ts } : {}),
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
        args,
        updates: 0,
      };
      channels.set(channel, [...(channels.get(channel) ?? []), message]);
      return { channel, ts: message.ts, message: { type: "message", text, bot_id: options.botId } };
    },
    "chat.update": (args) => {
      const channel = stringArg(args.channel);
      const message = channels.get(channel)?.find((m) => m.ts === args.ts);
      if (!message) return { ok: false, error: "message_not_found" };
      message.text = stringArg(args.text);
      // Slack keeps the old blocks unless the update sends some ([] removes them).
      if (Array.isArray(args.blocks)) message.blocks = args.blocks;
      message.args = args;
      message.updates += 1;
      return { channel, ts: message.ts, text: message.text };
    },
    "chat.postEphemeral": (args) => {
      const channel = stringArg(args.channel);
      const user = stringArg(args.user);
      if (!channel) return { ok: false, error: "channel_not_found" };
      if (!users.has(user)) return { ok: false, error: "user_not_in_channel" };
      const shown = {
        user,
        text: stringArg(args.text),
        ...(typeof args.thread_ts === "string" ? { thread_ts: args.thread_ts } : {}),
      };
      ephemeral.set(channel, [...(ephemeral.get(channel) ?? []), shown]);
      return { message_ts: nextTs() };
    },
    "users.info": (args) => {
      const id = stringArg(args.user);
      if (!id) return { ok: false, error: "invalid_arguments" };
      const user = users.get(id);
      if (!user) return { ok: false, error: "user_not_found" };
      return { user: { name: user.id.toLowerCase(), team_id: options.teamId, ...user } };
    },
  };

  const record = (call: SlackCall): void => {
    calls.push(call);
    for (const wake of waiters) wake();
  };

  const standIn: SlackStandIn = {
    async fetch(input, init) {
      const request =
        input instanceof Request && init === undefined ? input : new Request(input, init);
      const url = new URL(request.url);
      const method = /\/api\/([A-Za-z.]+)$/.exec(url.pathname)?.[1] ?? url.pathname;
      const contentType = request.headers.get("content-type") ?? "";
      // Read as bytes: workerd warns when .text() meets a form body.
      const raw = new TextDecoder().decode(await request.arrayBuffer());
      const args = readArgs(raw, contentType, url);
      const authorization = request.headers.get("authorization");
      const answer = (status: number, body: Record<string, unknown>, headers = {}): Response => {
        const ok = body.ok === true;
        record({
          method,
          body: args,
          contentType,
          authorization,
          status,
          ok: ok && status === 200,
          error:
            typeof body.error === "string" ? body.error : status === 200 ? null : `http_${status}`,
        });
        return Response.json(body, { status, headers });
      };

      if (request.method !== "POST" && request.method !== "GET")
        return answer(405, { ok: false, error: "method_not_supported" });
      const queued = failures.get(method);
      const failure = queued?.shift();
      if (failure) {
        const status = failure.status ?? (failure.retryAfterSeconds !== undefined ? 429 : 200);
        const error = failure.error ?? (status === 429 ? "ratelimited" : undefined);
        const headers =
          failure.retryAfterSeconds !== undefined
            ? { "retry-after": String(failure.retryAfterSeconds) }
            : {};
        return answer(status, error ? { ok: false, error } : { ok: false }, headers);
      }
      const bearer = /^Bearer (.+)$/.exec(authorization ?? "")?.[1];
      if (!bearer) return answer(200, { ok: false, error: "not_authed" });
      if (bearer !== options.token) return answer(200, { ok: false, error: "invalid_auth" });
      const handler = methods[method];
      if (!handler) return answer(200, { ok: false, error: "unknown_method" });
      const result = handler(args);
      return answer(200, result.ok === false ? result : { ok: true, ...result });
    },
    get calls() {
      return calls;
    },
    callsTo(method) {
      return calls.filter((call) => call.method === method);
    },
    failNext(method, failure) {
      failures.set(method, [...(failures.get(method) ?? []), failure]);
    },
    posted(channel) {
      return (channels.get(channel) ?? []).map((message) => ({ ...message }));
    },
    ephemerals(channel) {
      return [...(ephemeral.get(channel) ?? [])];
    },
    waitFor(method, count, timeoutMs = 10_000) {
      const done = () => calls.filter((call) => call.method === method && call.ok);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`expected ${count} ${method} calls, saw ${done().length}`)),
          timeoutMs,
        );
        const check = () => {
          if (done().length >= count) {
            clearTimeout(timer);
            waiters = waiters.filter((w) => w !== check);
            resolve(done());
          }
        };
        waiters.push(check);
        check();
      });
    },
    reset() {
      calls = [];
      failures = new Map();
      channels = new Map();
      ephemeral = new Map();
      waiters = [];
      clock += 1_000;
    },
  };
  return standIn;
}

function stringArg(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Slack reads JSON bodies (write methods), form bodies, and query parameters. */
function readArgs(raw: string, contentType: string, url: URL): Record<string, unknown> {
  const args: Record<string, unknown> = Object.fromEntries(url.searchParams);
  if (contentType.startsWith("application/json") && raw) {
    const parsed: unknown = JSON.parse(raw);
    if (parsed && typeof parsed === "object") Object.assign(args, parsed);
  } else if (contentType.startsWith(FORM) || (!contentType && raw)) {
    Object.assign(args, Object.fromEntries(new URLSearchParams(raw)));
  }
  return args;
}

export interface SignedSlackRequestOptions {
  /** The signed time, Unix seconds (default now). */
  timestampSec?: number;
  /** Default: JSON for a body starting with `{`, else a form (interactions, slash commands). */
  contentType?: string;
  /** Slack's redelivery: `X-Slack-Retry-Num` (1..3) with `X-Slack-Retry-Reason`. */
  retryNum?: number;
  retryReason?: string;
  /** Sign with this secret instead (a forged request). */
  signature?: string;
}

/** A POST as Slack sends it: the body signed with the signing secret, v0 HMAC-SHA256. */
export async function signedSlackRequest(
  url: string,
  rawBody: string,
  signingSecret: string,
  options: SignedSlackRequestOptions = {},
): Promise<Request> {
  const timestamp = String(options.timestampSec ?? Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    "content-type":
      options.contentType ?? (rawBody.trimStart().startsWith("{") ? "application/json" : FORM),
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature":
      options.signature ?? (await signSlackRequest(signingSecret, timestamp, rawBody)),
    "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
  };
  if (options.retryNum !== undefined) {
    headers["x-slack-retry-num"] = String(options.retryNum);
    headers["x-slack-retry-reason"] = options.retryReason ?? "http_timeout";
  }
  return new Request(url, { method: "POST", headers, body: rawBody });
}
