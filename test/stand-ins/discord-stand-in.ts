// Discord's REST API as a fetch handler for tests and benchmarks: records every request the bot
// makes (edits of the deferred response, follow-ups, channel messages, threads started from a
// message) and answers 200, or a scripted failure (429 with retry_after, 5xx, 404) for the next
// requests. A thread started from a message has the message's id, and a second start from the same
// message is refused as Discord refuses it (400, code 160004). `GET /applications/@me`
// (who owns the bot) answers the application set with `setApplication`, counted apart from `calls`;
// so does `GET /gateway/bot`, which points at the Gateway stand-in set with `setGateway`.
// `emulateRateLimits` makes it enforce Discord's limits with Discord's headers: a bucket per route
// and major parameter (`X-RateLimit-Bucket`, `-Limit`, `-Remaining`, `-Reset-After`, a 429 with
// scope `user`) and the global limit for bot-token requests (a 429 with `X-RateLimit-Global`),
// counting what it refused.

/** The owner of the stand-in's application (a personal app, no team) unless a test sets another. */
export const STAND_IN_APP_OWNER_ID = "620000000000000001";

export interface StandInApplication {
  id: string;
  name: string;
  owner?: { id: string; username: string };
  team: {
    id: string;
    owner_user_id: string;
    members: Array<{
      membership_state: number;
      role: string;
      team_id: string;
      user: { id: string; username: string };
    }>;
  } | null;
}

const DEFAULT_APPLICATION: StandInApplication = {
  id: "100000000000000001",
  name: "Test bot",
  owner: { id: STAND_IN_APP_OWNER_ID, username: "bot-owner" },
  team: null,
};

export interface DiscordCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  at: number;
}

export interface DiscordFailure {
  status: number;
  /** Only a request whose path ends so fails (default: the next request, whatever its path). */
  path?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Discord's limits as the stand-in enforces them (windows by the stand-in's own clock). */
export interface RateLimitEmulation {
  /** Requests per bucket window, per route and major parameter (channel, webhook + token). */
  bucketLimit: number;
  bucketWindowMs: number;
  /** Bot-token requests in any second before a global 429 (Discord: 50). */
  globalPerSecond: number;
}

export interface DiscordStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** The next requests fail like this, in order. */
  failNext(...failures: DiscordFailure[]): void;
  /** Successful requests only. */
  readonly calls: readonly DiscordCall[];
  /** Every request, failed ones included. */
  readonly attempts: readonly DiscordCall[];
  /** Resolves once `count` requests have succeeded. */
  waitForCalls(count: number, timeoutMs?: number): Promise<DiscordCall[]>;
  /** What `GET /applications/@me` answers from now on: an application, or a failure status. */
  setApplication(application: StandInApplication | DiscordFailure): void;
  /** How many times the bot asked `GET /applications/@me` (with its `Bot` token). */
  readonly applicationLookups: number;
  /** Where `GET /gateway/bot` points (kept across reset), and its session-start budget. */
  setGateway(url: string, remaining?: number): void;
  readonly gatewayLookups: number;
  /** Enforce Discord's rate limits from now on, counting afresh (null: answer every request). */
  emulateRateLimits(limits: RateLimitEmulation | null): void;
  /** 429s the emulated limits sent, by kind. */
  readonly refused: { readonly bucket: number; readonly global: number };
  /** The most bot-token requests that reached the stand-in within any 1,000 ms. */
  busiestSecond(): number;
  reset(): void;
}

const SNOWFLAKE = /^\d{1,20}$/;

/** Discord's bucket key: the route with ids hidden, plus the major parameter. */
function bucketOf(method: string, path: string): { bucket: string; major: string } {
  const parts = path
    .replace(/^\/api\/v\d+/, "")
    .split("/")
    .filter(Boolean);
  const majorParts = parts[0] === "webhooks" && parts[2] ? 3 : 2;
  const route = parts.slice(majorParts).map((p) => (SNOWFLAKE.test(p) ? ":id" : p));
  // Like Discord, one bucket id for a message's creation and its edits in a channel.
  const name = `${parts[0]}-${route[0] ?? ""}-${method === "GET" ? "read" : "write"}`;
  return { bucket: name, major: parts.slice(0, majorParts).join("/") };
}

export function createDiscordStandIn(): DiscordStandIn {
  let calls: DiscordCall[] = [];
  let attempts: DiscordCall[] = [];
  let failures: DiscordFailure[] = [];
  let waiters: Array<() => void> = [];
  let nextId = 1;
  let application: StandInApplication | DiscordFailure = DEFAULT_APPLICATION;
  let applicationLookups = 0;
  let gateway: { url: string; remaining: number } | null = null;
  let gatewayLookups = 0;
  let emulation: RateLimitEmulation | null = null;
  /** Messages a thread was started from. */
  let threads = new Set<string>();
  let windows = new Map<string, { start: number; used: number }>();
  let botSends: number[] = [];
  const refused = { bucket: 0, global: 0 };

  /** Discord's answer under the emulated limits: a 429, or the headers of a success. */
  const limitsFor = (
    method: string,
    path: string,
    bot: boolean,
  ): { refusal: Response | null; headers: Record<string, string> } => {
    if (!emulation) return { refusal: null, headers: {} };
    const now = Date.now();
    if (bot) {
      botSends = botSends.filter((at) => at > now - 1000);
      if (botSends.length >= emulation.globalPerSecond) {
        refused.global += 1;
        const retryAfter = (botSends[0]! + 1000 - now) / 1000;
        return {
          refusal: Response.json(
            { message: "You are being rate limited.", retry_after: retryAfter, global: true },
            {
              status: 429,
              headers: {
                "x-ratelimit-global": "true",
                "x-ratelimit-scope": "global",
                "retry-after": String(Math.ceil(retryAfter)),
              },
            },
          ),
          headers: {},
        };
      }
    }
    const { bucket, major } = bucketOf(method, path);
    const key = `${bucket}|${major}`;
    let window = windows.get(key);
    if (!window || now >= window.start + emulation.bucketWindowMs) {
      window = { start: now, used: 0 };
      windows.set(key, window);
    }
    const resetAfter = (window.start + emulation.bucketWindowMs - now) / 1000;
    const common = {
      "x-ratelimit-bucket": bucket,
      "x-ratelimit-limit": String(emulation.bucketLimit),
      "x-ratelimit-reset-after": resetAfter.toFixed(3),
    };
    if (window.used >= emulation.bucketLimit) {
      refused.bucket += 1;
      return {
        refusal: Response.json(
          { message: "You are being rate limited.", retry_after: resetAfter, global: false },
          {
            status: 429,
            headers: {
              ...common,
              "x-ratelimit-remaining": "0",
              "x-ratelimit-scope": "user",
              "retry-after": String(Math.ceil(resetAfter)),
            },
          },
        ),
        headers: {},
      };
    }
    window.used += 1;
    if (bot) botSends.push(now);
    return {
      refusal: null,
      headers: { ...common, "x-ratelimit-remaining": String(emulation.bucketLimit - window.used) },
    };
  };

  const standIn: DiscordStandIn = {
    async fetch(input, init) {
      const request =
        input instanceof Request && init === undefined ? input : new Request(input, init);
      const url = new URL(request.url);
      const text = await request.text();
      if (request.method === "GET" && url.pathname.endsWith("/applications/@me")) {
        applicationLookups += 1;
        // Discord answers this only to the bot's own token.
        if (!request.headers.get("authorization")?.startsWith("Bot "))
          return Response.json({ message: "401: Unauthorized", code: 0 }, { status: 401 });
        if ("status" in application)
          return Response.json(application.body ?? { message: "stand-in failure", code: 0 }, {
            status: application.status,
          });
        return Response.json(application);
      }
      if (request.method === "GET" && url.pathname.endsWith("/gateway/bot")) {
        gatewayLookups += 1;
        if (request.headers.get("authorization") !== "Bot test-bot-token-not-real" || !gateway)
          return Response.json({ message: "401: Unauthorized", code: 0 }, { status: 401 });
        return Response.json({
          url: gateway.url,
          shards: 1,
          session_start_limit: {
            total: 1000,
            remaining: gateway.remaining,
            reset_after: 60_000,
            max_concurrency: 1,
          },
        });
      }
      const call: DiscordCall = {
        method: request.method,
        path: url.pathname,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        headers: Object.fromEntries([...request.headers].map(([k, v]) => [k.toLowerCase(), v])),
        at: Date.now(),
      };
      attempts.push(call);
      const index = failures.findIndex((f) => !f.path || url.pathname.endsWith(f.path));
      const failure = index >= 0 ? failures.splice(index, 1)[0] : undefined;
      if (failure) {
        return new Response(
          JSON.stringify(
            failure.body ?? { message: `stand-in failure ${failure.status}`, code: 0 },
          ),
          {
            status: failure.status,
            headers: { "content-type": "application/json", ...failure.headers },
          },
        );
      }
      const limited = limitsFor(
        request.method,
        url.pathname,
        request.headers.get("authorization")?.startsWith("Bot ") === true,
      );
      if (limited.refusal) return limited.refusal;
      const thread = /\/channels\/(\d+)\/messages\/(\d+)\/threads$/.exec(url.pathname);
      if (request.method === "POST" && thread) {
        const [, parentId, messageId] = thread;
        if (threads.has(messageId!))
          return Response.json(
            { message: "A thread has already been created for this message", code: 160004 },
            { status: 400 },
          );
        threads.add(messageId!);
        calls.push(call);
        for (const wake of waiters) wake();
        return Response.json({
          id: messageId,
          parent_id: parentId,
          type: 11,
          name: call.body.name,
        });
      }
      calls.push(call);
      for (const wake of waiters) wake();
      return Response.json(
        { id: String(nextId++), content: call.body.content ?? "" },
        { headers: limited.headers },
      );
    },
    failNext(...more) {
      failures.push(...more);
    },
    get calls() {
      return calls;
    },
    get attempts() {
      return attempts;
    },
    setApplication(next) {
      application = next;
    },
    get applicationLookups() {
      return applicationLookups;
    },
    setGateway(next, remaining = 1000) {
      gateway = { url: next, remaining };
    },
    get gatewayLookups() {
      return gatewayLookups;
    },
    emulateRateLimits(limits) {
      emulation = limits;
      windows = new Map();
      botSends = [];
      refused.bucket = 0;
      refused.global = 0;
    },
    get refused() {
      return refused;
    },
    busiestSecond() {
      const times = attempts
        .filter((a) => a.headers.authorization?.startsWith("Bot "))
        .map((a) => a.at)
        .sort((a, b) => a - b);
      let most = 0;
      let first = 0;
      for (let last = 0; last < times.length; last++) {
        while (times[last]! - times[first]! >= 1000) first += 1;
        most = Math.max(most, last - first + 1);
      }
      return most;
    },
    waitForCalls(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`expected ${count} Discord calls, saw ${calls.length}`)),
          timeoutMs,
        );
        const check = () => {
          if (calls.length >= count) {
            clearTimeout(timer);
            waiters = waiters.filter((w) => w !== check);
            resolve(calls.slice());
          }
        };
        waiters.push(check);
        check();
      });
    },
    reset() {
      calls = [];
      attempts = [];
      failures = [];
      waiters = [];
      application = DEFAULT_APPLICATION;
      applicationLookups = 0;
      emulation = null;
      windows = new Map();
      botSends = [];
      threads = new Set();
      refused.bucket = 0;
      refused.global = 0;
    },
  };
  return standIn;
}
