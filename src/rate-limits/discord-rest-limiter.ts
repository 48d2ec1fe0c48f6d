// DiscordRestLimiter: one Durable Object per bot (`discord-rest:<application id>`, binding
// DISCORD_LIMITS) holding what every room and task object has learned of Discord's rate limits:
// the global window (50 requests a second per bot) and the route buckets named by Discord's
// headers. A sender asks `reserve` before a request ("go", or "wait N ms") and reports the
// response's headers with `observe`. State is kept in memory only: Discord's windows last seconds,
// and an object evicted after a quiet spell has nothing worth keeping (the next response teaches
// the buckets again). The arithmetic is src/rate-limits/discord-buckets.ts.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import type { DiscordRestLimiterRpc } from "../rpc.ts";
import { DiscordRateLimits, type DiscordRoute, type RateLimitSeen } from "./discord-buckets.ts";

export class DiscordRestLimiter extends DurableObject<Env> implements DiscordRestLimiterRpc {
  private readonly limits = new DiscordRateLimits();

  /** 0: send now (the request is counted); otherwise the ms to wait before asking again. */
  reserve(route: DiscordRoute): number {
    return this.limits.reserve(route, Date.now());
  }

  /** Learns from a response (its bucket headers, or the 429 it was). */
  observe(route: DiscordRoute, seen: RateLimitSeen): void {
    this.limits.observe(route, seen, Date.now());
  }
}
