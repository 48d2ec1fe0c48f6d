// What the bot knows of Discord's REST rate limits, pure so it is tested in Node with a clock
// passed in. Discord (docs "Rate Limits"): a route's requests draw from a bucket named by the
// `X-RateLimit-Bucket` header, one per bucket and major parameter (channel_id, guild_id,
// webhook_id + token); `-Remaining` requests are left until `-Reset-After` seconds pass. Apart
// from that, a bot may send 50 requests a second in all (the global limit), which interaction
// endpoints (`/webhooks/<application>/<token>`) do not count against. A 429 says which limit it
// was (`X-RateLimit-Global`, `X-RateLimit-Scope: user | global | shared`) and how long to wait
// (`retry_after` seconds in the body, `Retry-After` header).

/** Discord's global limit per bot. */
export const GLOBAL_REQUESTS_PER_SECOND = 50;
/**
 * What we let through per second: below Discord's 50, because our clock is not Discord's and
 * requests spend a while in flight, so 50 sent in our second can land in one of Discord's.
 */
export const GLOBAL_BUDGET_PER_SECOND = 45;
const GLOBAL_WINDOW_MS = 1_000;
/** A route whose bucket is unknown sends one request at a time until a response names it. */
const PROBE_WAIT_MS = 50;
/** A probe whose response never came back (a lost report) stops blocking its route after this. */
const PROBE_TIMEOUT_MS = 5_000;
/** Buckets and routes remembered at most; the least recently used go first. */
const MAX_BUCKETS = 5_000;

/** A request as rate limits see it: its route (ids but the major one hidden) and major parameter. */
export interface DiscordRoute {
  /** e.g. `POST /channels/:major/messages`: which bucket it draws from is learned from headers. */
  template: string;
  /** e.g. `channels/123`; an interaction webhook's is `webhooks/<app>/<token>`, never logged. */
  major: string;
  /** False for interaction webhooks: they do not count against the global limit. */
  global: boolean;
}

/** The rate-limit facts of one response. */
export interface RateLimitSeen {
  status: number;
  bucket: string | null;
  limit: number | null;
  remaining: number | null;
  resetAfterMs: number | null;
  /** On a 429: how long Discord asked us to wait. */
  retryAfterMs: number | null;
  /** A 429 of the global limit (`X-RateLimit-Global: true` or scope `global`). */
  globalLimit: boolean;
  scope: string | null;
}

interface Bucket {
  limit: number;
  remaining: number;
  resetAt: number;
  /** Refilled by us at its reset, not yet confirmed by a response's headers. */
  provisional: boolean;
}

const SNOWFLAKE = /^\d{1,20}$/;

/** The route of `method path` (path below the API base, query allowed). */
export function discordRoute(method: string, path: string, interaction = false): DiscordRoute {
  const parts = path.split("?")[0]!.split("/").filter(Boolean);
  const [resource, id, token] = parts;
  let majorParts = 0;
  if ((resource === "channels" || resource === "guilds") && id) majorParts = 2;
  // A webhook's token is part of its major parameter (each interaction is its own bucket).
  else if (resource === "webhooks" && id) majorParts = token ? 3 : 2;
  const major = parts.slice(0, majorParts).join("/");
  const rest = parts.slice(majorParts).map((part) => (SNOWFLAKE.test(part) ? ":id" : part));
  const template = `${method} /${[parts[0] ?? "", ...(majorParts ? [":major"] : []), ...rest]
    .filter(Boolean)
    .join("/")}`;
  return { template, major, global: !interaction };
}

/** Reads the rate-limit headers (and a 429's body) of a response. */
export function rateLimitSeen(status: number, headers: Headers, body: string): RateLimitSeen {
  const number = (name: string): number | null => {
    const value = headers.get(name);
    if (value === null || value.trim() === "") return null;
    const parsed = Number(value);
    return Number.isFinite(parsed) && parsed >= 0 ? parsed : null;
  };
  const resetAfter = number("x-ratelimit-reset-after");
  const scope = headers.get("x-ratelimit-scope");
  let retryAfterMs: number | null = null;
  let bodyGlobal = false;
  if (status === 429) {
    try {
      const parsed = JSON.parse(body) as { retry_after?: unknown; global?: unknown };
      if (typeof parsed.retry_after === "number" && parsed.retry_after >= 0)
        retryAfterMs = Math.ceil(parsed.retry_after * 1000);
      bodyGlobal = parsed.global === true;
    } catch {
      // Not JSON (a proxy's page): the header below.
    }
    const header = number("retry-after");
    retryAfterMs ??= header === null ? 1_000 : Math.ceil(header * 1000);
  }
  return {
    status,
    bucket: headers.get("x-ratelimit-bucket"),
    limit: number("x-ratelimit-limit"),
    remaining: number("x-ratelimit-remaining"),
    resetAfterMs: resetAfter === null ? null : Math.ceil(resetAfter * 1000),
    retryAfterMs,
    globalLimit:
      status === 429 &&
      (headers.get("x-ratelimit-global")?.toLowerCase() === "true" ||
        scope === "global" ||
        bodyGlobal),
    scope,
  };
}

/**
 * The global window and the route buckets of one bot. `reserve` decides a request: 0 means go
 * (the request is counted), else how many ms to wait before asking again. `observe` learns from
 * the response.
 */
export class DiscordRateLimits {
  /** Route template -> bucket id, as Discord named it. */
  private readonly bucketOf = new Map<string, string>();
  /** `<bucket id>|<major>` (or `<template>|<major>` before the id is known) -> its state. */
  private readonly buckets = new Map<string, Bucket>();
  /** Routes whose bucket is unknown and which have a request out: when it was sent. */
  private readonly probes = new Map<string, number>();
  /** Times of the global-bound requests of the last second, oldest first. */
  private sent: number[] = [];
  private globalUntil = 0;

  reserve(route: DiscordRoute, now: number): number {
    let wait = 0;
    if (route.global) {
      wait = Math.max(wait, this.globalUntil - now);
      this.sent = this.sent.filter((at) => at > now - GLOBAL_WINDOW_MS);
      if (this.sent.length >= GLOBAL_BUDGET_PER_SECOND)
        wait = Math.max(wait, this.sent[0]! + GLOBAL_WINDOW_MS - now);
    }
    const key = this.keyOf(route);
    const bucket = this.buckets.get(key);
    const probeKey = `${route.template}|${route.major}`;
    if (bucket) {
      if (now >= bucket.resetAt) {
        // A new window: Discord refilled it. Its reset comes with the next response; until then
        // (or if that response is lost) a provisional one, so a bucket never blocks for good.
        bucket.remaining = bucket.limit;
        bucket.resetAt = now + PROBE_TIMEOUT_MS;
        bucket.provisional = true;
      }
      if (bucket.remaining <= 0) wait = Math.max(wait, bucket.resetAt - now);
    } else if (!this.bucketOf.has(route.template)) {
      const probe = this.probes.get(probeKey);
      if (probe !== undefined && now - probe < PROBE_TIMEOUT_MS)
        wait = Math.max(wait, PROBE_WAIT_MS);
    }
    if (wait > 0) return Math.ceil(wait);
    if (bucket) bucket.remaining -= 1;
    else if (!this.bucketOf.has(route.template)) this.remember(this.probes, probeKey, now);
    if (route.global) this.sent.push(now);
    return 0;
  }

  observe(route: DiscordRoute, seen: RateLimitSeen, now: number): void {
    this.probes.delete(`${route.template}|${route.major}`);
    if (seen.globalLimit) {
      this.globalUntil = Math.max(this.globalUntil, now + (seen.retryAfterMs ?? 1_000));
      return;
    }
    if (seen.bucket) this.remember(this.bucketOf, route.template, seen.bucket);
    const key = this.keyOf(route);
    const known = this.buckets.get(key);
    if (seen.status === 429) {
      // A route or shared-resource limit: this bucket waits; the others go on.
      const until = now + (seen.retryAfterMs ?? 1_000);
      const limit = seen.limit ?? known?.limit ?? 1;
      this.remember(this.buckets, key, {
        limit,
        remaining: 0,
        resetAt: Math.max(until, known && !known.provisional ? known.resetAt : 0),
        provisional: false,
      });
      return;
    }
    if (seen.remaining === null || seen.resetAfterMs === null) {
      // No headers (a 5xx, a proxy, a network error): a guessed window is not kept on a guess.
      if (known?.provisional) this.buckets.delete(key);
      return;
    }
    const resetAt = now + seen.resetAfterMs;
    // Responses can come back out of order: within one window the lowest count is the true one.
    const sameWindow =
      known && !known.provisional && Math.abs(known.resetAt - resetAt) < GLOBAL_WINDOW_MS;
    this.remember(this.buckets, key, {
      limit: seen.limit ?? known?.limit ?? seen.remaining + 1,
      remaining: sameWindow ? Math.min(known.remaining, seen.remaining) : seen.remaining,
      resetAt,
      provisional: false,
    });
  }

  /** How many global-bound requests went out in the second before `now` (for logs and tests). */
  globalInWindow(now: number): number {
    return this.sent.filter((at) => at > now - GLOBAL_WINDOW_MS).length;
  }

  private keyOf(route: DiscordRoute): string {
    return `${this.bucketOf.get(route.template) ?? route.template}|${route.major}`;
  }

  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > MAX_BUCKETS) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }
}
