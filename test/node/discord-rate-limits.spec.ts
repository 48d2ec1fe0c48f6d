// Discord's REST rate limits as src/rate-limits/discord-buckets.ts keeps them, in plain Node with
// a clock passed in, grouped by the rules of Discord's "Rate Limits" page: routes and their major
// parameter, per-route buckets from the headers, the global limit, and 429s. The last group runs
// two senders against a simulated Discord bucket to show what sharing the state saves.
import { describe, expect, it } from "vitest";
import {
  DiscordRateLimits,
  discordRoute,
  GLOBAL_BUDGET_PER_SECOND,
  GLOBAL_REQUESTS_PER_SECOND,
  rateLimitSeen,
  type DiscordRoute,
} from "../../src/rate-limits/discord-buckets.ts";

const CHANNEL = "123456789012345678";
const post = discordRoute("POST", `/channels/${CHANNEL}/messages`);

function ok(bucket: string, remaining: number, resetAfter: number, limit = 5) {
  return rateLimitSeen(
    200,
    new Headers({
      "x-ratelimit-bucket": bucket,
      "x-ratelimit-limit": String(limit),
      "x-ratelimit-remaining": String(remaining),
      "x-ratelimit-reset-after": String(resetAfter),
    }),
    "{}",
  );
}

describe("routes and major parameters", () => {
  it("keys a channel route by its channel and hides the other ids", () => {
    expect(discordRoute("PATCH", `/channels/${CHANNEL}/messages/987654321098765432`)).toEqual({
      template: "PATCH /channels/:major/messages/:id",
      major: `channels/${CHANNEL}`,
      global: true,
    });
  });

  it("keys an interaction webhook by its id and token, outside the global limit, token not in the template", () => {
    const route = discordRoute("PATCH", "/webhooks/100/tok-secret/messages/@original", true);
    expect(route).toEqual({
      template: "PATCH /webhooks/:major/messages/@original",
      major: "webhooks/100/tok-secret",
      global: false,
    });
    expect(discordRoute("POST", "/webhooks/100/tok-secret?wait=true", true).template).toBe(
      "POST /webhooks/:major",
    );
  });
});

describe("per-route buckets (X-RateLimit-Bucket, -Remaining, -Reset-After)", () => {
  it("sends one request at a time on a route whose bucket is not known yet", () => {
    const limits = new DiscordRateLimits();
    expect(limits.reserve(post, 0)).toBe(0);
    expect(limits.reserve(post, 1)).toBeGreaterThan(0);
    limits.observe(post, ok("abc", 4, 5), 10);
    expect(limits.reserve(post, 11)).toBe(0);
  });

  it("waits for the reset once a bucket is spent, and goes again after it", () => {
    const limits = new DiscordRateLimits();
    limits.reserve(post, 0);
    limits.observe(post, ok("abc", 1, 2), 0);
    expect(limits.reserve(post, 10)).toBe(0);
    expect(limits.reserve(post, 20)).toBe(1_980);
    expect(limits.reserve(post, 2_000)).toBe(0);
  });

  it("shares a bucket between routes Discord names the same, per major parameter", () => {
    const limits = new DiscordRateLimits();
    const edit = discordRoute("PATCH", `/channels/${CHANNEL}/messages/1`);
    const other = discordRoute("POST", "/channels/222222222222222222/messages");
    limits.reserve(post, 0);
    limits.observe(post, ok("shared", 0, 3), 0);
    limits.reserve(edit, 0);
    limits.observe(edit, ok("shared", 0, 3), 0);
    expect(limits.reserve(post, 100)).toBe(2_900);
    // Another channel is another bucket, even with the same id.
    limits.reserve(other, 100);
    limits.observe(other, ok("shared", 4, 3), 100);
    expect(limits.reserve(other, 101)).toBe(0);
  });

  it("never blocks for good on a bucket whose refill no response confirmed", () => {
    const limits = new DiscordRateLimits();
    const refused = rateLimitSeen(429, new Headers(), JSON.stringify({ retry_after: 0.05 }));
    limits.reserve(post, 0);
    limits.observe(post, refused, 0);
    expect(limits.reserve(post, 10)).toBe(40);
    expect(limits.reserve(post, 50)).toBe(0);
    // A 502 carries no headers: the guessed window is dropped rather than waited on.
    limits.observe(post, rateLimitSeen(502, new Headers(), ""), 60);
    expect(limits.reserve(post, 70)).toBe(0);
    // A refill whose response never came back blocks for 5 s at most.
    limits.observe(post, ok("abc", 0, 1, 1), 70);
    expect(limits.reserve(post, 1_070)).toBe(0);
    expect(limits.reserve(post, 1_080)).toBe(4_990);
  });

  it("keeps the lowest count when responses of one window come back out of order", () => {
    const limits = new DiscordRateLimits();
    limits.reserve(post, 0);
    limits.observe(post, ok("abc", 0, 5), 0);
    limits.observe(post, ok("abc", 3, 5), 5);
    expect(limits.reserve(post, 10)).toBeGreaterThan(0);
  });
});

describe("the global limit (50 requests a second per bot)", () => {
  it("lets at most the budget through in any second, below Discord's 50", () => {
    const limits = new DiscordRateLimits();
    const sentAt: number[] = [];
    let now = 0;
    while (sentAt.length < 200) {
      const channel = `channels/${sentAt.length % 10}`;
      const route: DiscordRoute = {
        template: "POST /channels/:major/typing",
        major: channel,
        global: true,
      };
      const wait = limits.reserve(route, now);
      if (wait === 0) {
        sentAt.push(now);
        limits.observe(route, ok(`b${channel}`, 100, 60, 100), now);
      } else now += wait;
      now += 1;
    }
    const most = Math.max(
      ...sentAt.map((t) => sentAt.filter((u) => u >= t && u < t + 1000).length),
    );
    expect(most).toBe(GLOBAL_BUDGET_PER_SECOND);
    expect(most).toBeLessThanOrEqual(GLOBAL_REQUESTS_PER_SECOND);
  });

  it("does not count interaction webhooks against it", () => {
    const limits = new DiscordRateLimits();
    for (let i = 0; i < 100; i++) {
      const route = discordRoute("PATCH", `/webhooks/1/tok-${i}/messages/@original`, true);
      expect(limits.reserve(route, 0)).toBe(0);
    }
    expect(limits.globalInWindow(0)).toBe(0);
  });
});

describe("429 Too Many Requests", () => {
  it("stops every global request for retry_after after a global 429, but not interaction webhooks", () => {
    const limits = new DiscordRateLimits();
    const seen = rateLimitSeen(
      429,
      new Headers({
        "x-ratelimit-global": "true",
        "x-ratelimit-scope": "global",
        "retry-after": "2",
      }),
      JSON.stringify({ message: "You are being rate limited.", retry_after: 1.5, global: true }),
    );
    expect(seen).toMatchObject({ globalLimit: true, retryAfterMs: 1_500 });
    limits.reserve(post, 0);
    limits.observe(post, seen, 0);
    const elsewhere = discordRoute("POST", "/channels/999/messages");
    expect(limits.reserve(elsewhere, 10)).toBe(1_490);
    expect(limits.reserve(discordRoute("POST", "/webhooks/1/t", true), 10)).toBe(0);
  });

  it("stops only its bucket after a route 429, and reads Retry-After when the body has no retry_after", () => {
    const limits = new DiscordRateLimits();
    const seen = rateLimitSeen(
      429,
      new Headers({ "x-ratelimit-bucket": "abc", "x-ratelimit-scope": "user", "retry-after": "3" }),
      "<html>",
    );
    expect(seen).toMatchObject({ globalLimit: false, retryAfterMs: 3_000, scope: "user" });
    limits.reserve(post, 0);
    limits.observe(post, seen, 0);
    expect(limits.reserve(post, 0)).toBe(3_000);
    expect(limits.reserve(discordRoute("POST", "/channels/999/messages"), 0)).toBe(0);
  });
});

/** A Discord bucket: `limit` requests per `windowMs` per channel; beyond it, a 429. */
function simulatedDiscord(limit: number, windowMs: number) {
  const windows = new Map<string, { start: number; used: number }>();
  let refusals = 0;
  return {
    get refusals() {
      return refusals;
    },
    answer(route: DiscordRoute, now: number) {
      let window = windows.get(route.major);
      if (!window || now >= window.start + windowMs) {
        window = { start: now, used: 0 };
        windows.set(route.major, window);
      }
      const resetAfter = String((window.start + windowMs - now) / 1000);
      if (window.used >= limit) {
        refusals += 1;
        return rateLimitSeen(
          429,
          new Headers({ "x-ratelimit-bucket": "msgs", "x-ratelimit-scope": "user" }),
          JSON.stringify({ retry_after: Number(resetAfter), global: false }),
        );
      }
      window.used += 1;
      return rateLimitSeen(
        200,
        new Headers({
          "x-ratelimit-bucket": "msgs",
          "x-ratelimit-limit": String(limit),
          "x-ratelimit-remaining": String(limit - window.used),
          "x-ratelimit-reset-after": resetAfter,
        }),
        "{}",
      );
    },
  };
}

/** Two senders take turns posting `each` messages to one channel; returns Discord's 429 count. */
function race(states: [DiscordRateLimits, DiscordRateLimits], each: number): number {
  const discord = simulatedDiscord(5, 5_000);
  const left = [each, each];
  const readyAt = [0, 0];
  let now = 0;
  while (left[0]! + left[1]! > 0) {
    for (const i of [0, 1]) {
      if (left[i] === 0 || readyAt[i]! > now) continue;
      const wait = states[i]!.reserve(post, now);
      if (wait > 0) {
        readyAt[i] = now + wait;
        continue;
      }
      const seen = discord.answer(post, now);
      states[i]!.observe(post, seen, now);
      if (seen.status !== 429) left[i]! -= 1;
    }
    now += 10;
  }
  return discord.refusals;
}

describe("what sharing the state across rooms saves", () => {
  it("two rooms on one bucket are refused less often with one shared state than with one each", () => {
    const shared = new DiscordRateLimits();
    const withSharing = race([shared, shared], 12);
    const withoutSharing = race([new DiscordRateLimits(), new DiscordRateLimits()], 12);
    expect(withSharing).toBe(0);
    expect(withoutSharing).toBeGreaterThan(withSharing);
  });
});
