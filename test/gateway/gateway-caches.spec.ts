// The Gateway object's per-channel lookups (gateway-events.ts) against the worker's own D1: the
// agent serving a channel is cached for CHANNEL_CACHE_MS, in a cache capped at
// MAX_CACHED_CHANNELS (shrunk here), so message events from ever more channels (a DM channel per
// person who writes to the bot) do not grow the object's memory without end.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import {
  CHANNEL_CACHE_MS,
  GatewayEvents,
} from "../../src/clients/discord/gateway/gateway-events.ts";
import { stores } from "../../src/db/stores/index.ts";
import { snowflake } from "../helpers/discord.ts";

const bot = { userId: "900000000000000009", username: "bot", rolesIn: () => [] };

function eventsAt(clock: { now: number }, channels: number) {
  return new GatewayEvents({
    env,
    bot: () => bot,
    now: () => clock.now,
    maxCached: { channels, agents: 2 },
  });
}

/** A deletion in a channel no agent serves: the object looks the channel up and stops there. */
const deletion = (channelId: string) => ({ id: snowflake(), channel_id: channelId });

describe("Gateway: per-channel caches (MESSAGE_CREATE, MESSAGE_UPDATE, MESSAGE_DELETE)", () => {
  it("holds at most the cap of channels however many send events", async () => {
    const clock = { now: 1_000_000 };
    const events = eventsAt(clock, 5);
    for (let i = 0; i < 20; i++) {
      clock.now += 1;
      await events.handle("MESSAGE_DELETE", deletion(snowflake()));
    }
    expect(events.cached().channels).toBe(5);
  });

  it("asks D1 again once a channel's entry ran out or was pushed out, and not before", async () => {
    const clock = { now: 2_000_000 };
    const events = eventsAt(clock, 2);
    const lookups = vi.spyOn(stores(env).discord, "channelContext");
    try {
      const [first, second, third] = [snowflake(), snowflake(), snowflake()];
      await events.handle("MESSAGE_DELETE", deletion(first));
      await events.handle("MESSAGE_DELETE", deletion(first));
      expect(lookups).toHaveBeenCalledTimes(1);

      clock.now += CHANNEL_CACHE_MS;
      await events.handle("MESSAGE_DELETE", deletion(first));
      expect(lookups).toHaveBeenCalledTimes(2);

      // Two more channels push the first out of a cache of two.
      await events.handle("MESSAGE_DELETE", deletion(second));
      await events.handle("MESSAGE_DELETE", deletion(third));
      await events.handle("MESSAGE_DELETE", deletion(first));
      expect(lookups).toHaveBeenCalledTimes(5);
      expect(events.cached().channels).toBe(2);
    } finally {
      lookups.mockRestore();
    }
  });
});
