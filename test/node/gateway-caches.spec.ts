// The Gateway object's caches (src/clients/discord/gateway/expiring-cache.ts) in plain Node: an
// entry is reused until its time runs out, and past the size cap the least recently used goes,
// so a bot that sees ever more channels (a DM channel per person who writes) holds a bounded few.
import { describe, expect, it } from "vitest";
import { ExpiringCache } from "../../src/clients/discord/gateway/expiring-cache.ts";

describe("Gateway caches: per-channel lookups stay bounded", () => {
  it("reuses an entry until its time runs out", () => {
    const cache = new ExpiringCache<string, number>({ ttlMs: 10_000, maxEntries: 10 });
    cache.set("a", 1, 0);
    expect(cache.get("a", 9_999)).toBe(1);
    expect(cache.get("a", 10_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("keeps at most maxEntries, dropping the least recently used first", () => {
    const cache = new ExpiringCache<string, number>({ ttlMs: 10_000, maxEntries: 3 });
    cache.set("a", 1, 0);
    cache.set("b", 2, 0);
    cache.set("c", 3, 0);
    expect(cache.get("a", 1)).toBe(1);
    cache.set("d", 4, 2);
    expect(cache.size).toBe(3);
    expect(cache.get("b", 3)).toBeUndefined();
    expect([cache.get("a", 3), cache.get("c", 3), cache.get("d", 3)]).toEqual([1, 3, 4]);
  });

  it("drops entries whose time ran out when another is set, before the cap is reached", () => {
    const cache = new ExpiringCache<string, number>({ ttlMs: 10_000, maxEntries: 100 });
    for (let i = 0; i < 50; i++) cache.set(`old-${i}`, i, 0);
    cache.set("new", 1, 10_000);
    expect(cache.size).toBe(1);
  });

  it("holds the cap however many keys go through it", () => {
    const cache = new ExpiringCache<string, number>({ ttlMs: 60_000, maxEntries: 1_000 });
    for (let i = 0; i < 50_000; i++) cache.set(`channel-${i}`, i, i);
    expect(cache.size).toBe(1_000);
    expect(cache.get("channel-49999", 50_000)).toBe(49_999);
    expect(cache.get("channel-0", 50_000)).toBeUndefined();
  });
});
