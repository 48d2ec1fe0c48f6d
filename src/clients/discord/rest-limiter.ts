// Who decides when a Discord request may go: the bot's DiscordRestLimiter object, shared by every
// room and task object, for requests with the bot token (they count against the global limit and
// share channel buckets across rooms); an isolate-local copy of the same arithmetic for interaction
// webhooks (exempt from the global limit, one bucket per interaction token, so one room's alone:
// asking a Durable Object about them would cost a round trip and share nothing). If the shared
// object cannot be reached, the local copy decides: an outage of the limiter must not stop replies.
import type { Env } from "../../env.ts";
import { errorField, log } from "../../log.ts";
import {
  DiscordRateLimits,
  type DiscordRoute,
  type RateLimitSeen,
} from "../../rate-limits/discord-buckets.ts";

export interface DiscordLimiter {
  /** 0: send now (the request is counted); otherwise the ms to wait before asking again. */
  reserve(route: DiscordRoute): Promise<number>;
  /** Learns from a response; never fails. */
  observe(route: DiscordRoute, seen: RateLimitSeen): Promise<void>;
}

/** This isolate's own knowledge: interaction webhooks, and the fallback when the object is away. */
const local = new DiscordRateLimits();

/** A limiter over one in-memory state (tests and benchmarks pass their own state and clock). */
export function createLocalLimiter(
  state: DiscordRateLimits = local,
  now: () => number = Date.now,
): DiscordLimiter {
  return {
    reserve: async (route) => state.reserve(route, now()),
    observe: async (route, seen) => state.observe(route, seen, now()),
  };
}

/** The bot's shared limiter (DISCORD_LIMITS); the isolate's own for interaction webhooks. */
export function createSharedLimiter(env: Env): DiscordLimiter {
  const fallback = createLocalLimiter();
  const namespace = env.DISCORD_LIMITS;
  if (!namespace) return fallback;
  const name = `discord-rest:${env.DISCORD_APPLICATION_ID || "bot"}`;
  return {
    async reserve(route) {
      if (!route.global) return fallback.reserve(route);
      try {
        // A fresh stub per call: a stub whose object was reset stays broken.
        return await namespace.getByName(name).reserve(route);
      } catch (error) {
        log.warn("discord_limiter_unreachable", {
          route: route.template,
          error: errorField(error),
        });
        return fallback.reserve(route);
      }
    },
    async observe(route, seen) {
      if (!route.global) return fallback.observe(route, seen);
      try {
        await namespace.getByName(name).observe(route, seen);
      } catch (error) {
        log.warn("discord_limiter_unreachable", {
          route: route.template,
          error: errorField(error),
        });
        await fallback.observe(route, seen);
      }
    },
  };
}
