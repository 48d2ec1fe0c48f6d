// A thread's parent channel, learnt from the Guilds intent's events (src/clients/discord/gateway/
// thread-parents.ts): pure, so in plain Node.
import { describe, expect, it } from "vitest";
import { MAX_THREADS, ThreadParents } from "../../src/clients/discord/gateway/thread-parents.ts";

const GUILD = "900000000000000001";

describe("thread parents", () => {
  it("learns threads from THREAD_CREATE, GUILD_CREATE and THREAD_LIST_SYNC, and forgets them on delete", () => {
    const threads = new ThreadParents();
    expect(threads.note("THREAD_CREATE", { id: "11", parent_id: "1", guild_id: GUILD })).toBe(true);
    expect(threads.parentOf("11")).toBe("1");
    // The same again changes nothing (nothing to store).
    expect(threads.note("THREAD_UPDATE", { id: "11", parent_id: "1", guild_id: GUILD })).toBe(
      false,
    );
    expect(
      threads.note("GUILD_CREATE", {
        id: GUILD,
        threads: [{ id: "12", parent_id: "2" }, { bad: 1 }],
      }),
    ).toBe(true);
    expect(threads.parentOf("12")).toBe("2");
    threads.note("THREAD_LIST_SYNC", { guild_id: GUILD, threads: [{ id: "13", parent_id: "3" }] });
    expect(threads.parentOf("13")).toBe("3");
    expect(threads.note("THREAD_DELETE", { id: "11" })).toBe(true);
    expect(threads.parentOf("11")).toBeNull();
    expect(threads.note("GUILD_DELETE", { id: GUILD })).toBe(true);
    expect(threads.parentOf("12")).toBeNull();
    expect(threads.parentOf("13")).toBeNull();
  });

  it("notes a thread the bot opened itself (autoThread) before Discord's THREAD_CREATE", () => {
    const threads = new ThreadParents();
    expect(threads.opened("21", "2", GUILD)).toBe(true);
    expect(threads.parentOf("21")).toBe("2");
    // Discord's own THREAD_CREATE then changes nothing; GUILD_DELETE forgets it like the others.
    expect(threads.note("THREAD_CREATE", { id: "21", parent_id: "2", guild_id: GUILD })).toBe(
      false,
    );
    expect(threads.note("GUILD_DELETE", { id: GUILD })).toBe(true);
    expect(threads.parentOf("21")).toBeNull();
  });

  it("ignores other events and malformed ones, survives a round trip through storage, and stays bounded", () => {
    const threads = new ThreadParents();
    expect(threads.note("MESSAGE_CREATE", { id: "1", channel_id: "2" })).toBe(false);
    expect(threads.note("THREAD_CREATE", { id: "x", parent_id: "1", guild_id: GUILD })).toBe(false);
    expect(threads.note("THREAD_CREATE", { id: "14", parent_id: null, guild_id: GUILD })).toBe(
      false,
    );
    threads.note("THREAD_CREATE", { id: "15", parent_id: "5", guild_id: GUILD });
    expect(new ThreadParents(threads.toJSON()).parentOf("15")).toBe("5");
    for (let i = 0; i <= MAX_THREADS; i++)
      threads.note("THREAD_CREATE", { id: String(100_000 + i), parent_id: "6", guild_id: GUILD });
    expect(Object.keys(threads.toJSON())).toHaveLength(MAX_THREADS);
    expect(threads.parentOf("15")).toBeNull();
  });
});
