// A room's D1 binding (src/db/shared-trips.ts): calls started together go to D1 as one batch,
// each caller gets what its own call would have given, a call alone is sent as it was made, and
// a failing statement fails only its own caller, with nothing of the shared batch left written.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { type D1Trip, sharedTrips } from "../../src/db/shared-trips.ts";
import { countTrips } from "../helpers/d1-trips.ts";

beforeAll(async () => {
  await env.DB.exec(
    "CREATE TABLE IF NOT EXISTS shared_trips_rows (id TEXT PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0))",
  );
});

async function rowsLike(prefix: string): Promise<Array<{ id: string; n: number }>> {
  const { results } = await env.DB.prepare(
    "SELECT id, n FROM shared_trips_rows WHERE id LIKE ? ORDER BY id",
  )
    .bind(`${prefix}%`)
    .all<{ id: string; n: number }>();
  return results;
}

describe("shared D1 trips", () => {
  it("sends calls started together as one batch, and gives each caller its own result", async () => {
    const counter = countTrips(env.DB);
    const db = sharedTrips(counter.db);
    const insert = db.prepare("INSERT INTO shared_trips_rows (id, n) VALUES (?, ?)");
    const [ran, batched, first, column, none, all] = await Promise.all([
      insert.bind("together-a", 1).run(),
      db.batch([insert.bind("together-b", 2), insert.bind("together-c", 3)]),
      db.prepare("SELECT 7 AS seven, 'x' AS letter").first(),
      db.prepare("SELECT 7 AS seven").first("seven"),
      db.prepare("SELECT 1 AS one WHERE 0").first(),
      db.prepare("SELECT id FROM shared_trips_rows WHERE id LIKE 'together-%' ORDER BY id").all(),
    ]);
    expect(counter.calls()).toBe(1);
    expect(ran.meta.changes).toBe(1);
    expect(batched.map((result) => result.meta.changes)).toEqual([1, 1]);
    expect(first).toEqual({ seven: 7, letter: "x" });
    expect(column).toBe(7);
    expect(none).toBeNull();
    // Statements run in the order they were started: the read sees the writes before it.
    expect(all.results).toEqual([{ id: "together-a" }, { id: "together-b" }, { id: "together-c" }]);
    expect(await rowsLike("together-")).toHaveLength(3);
  });

  it("sends a call made alone as it was made, and later calls as later trips", async () => {
    const counter = countTrips(env.DB);
    const db = sharedTrips(counter.db);
    const insert = db.prepare("INSERT INTO shared_trips_rows (id, n) VALUES (?, ?)");
    await insert.bind("alone-a", 1).run();
    const read = db.prepare("SELECT n FROM shared_trips_rows WHERE id = ?");
    expect(await read.bind("alone-a").first("n")).toBe(1);
    expect(counter.calls()).toBe(2);
    expect(counter.depth()).toBe(2);
    // raw() is not collected: drizzle's mapped selects go straight to the binding.
    expect(await read.bind("alone-a").raw()).toEqual([[1]]);
    expect(counter.calls()).toBe(3);
  });

  it("fails only the caller whose statement failed, and leaves its own batch unwritten", async () => {
    const counter = countTrips(env.DB);
    const db = sharedTrips(counter.db);
    const insert = db.prepare("INSERT INTO shared_trips_rows (id, n) VALUES (?, ?)");
    const results = await Promise.allSettled([
      insert.bind("fail-a", 1).run(),
      // Its second statement breaks the CHECK: neither of its rows may stay.
      db.batch([insert.bind("fail-b", 2), insert.bind("fail-c", -1)]),
      db.prepare("SELECT 1 AS one").first("one"),
      db.prepare("SELECT nope FROM shared_trips_rows").all(),
    ]);
    expect(results.map((result) => result.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
    ]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/CHECK constraint/);
    expect(String((results[3] as PromiseRejectedResult).reason)).toMatch(/no such column: nope/);
    expect((results[2] as PromiseFulfilledResult<unknown>).value).toBe(1);
    // The shared batch, then each caller's own statements again.
    expect(counter.calls()).toBe(5);
    expect(await rowsLike("fail-")).toEqual([{ id: "fail-a", n: 1 }]);
  });

  it("tells its watcher of each trip: how many statements, whether it went through", async () => {
    const trips: D1Trip[] = [];
    const db = sharedTrips(env.DB, (trip) => trips.push(trip));
    const insert = db.prepare("INSERT INTO shared_trips_rows (id, n) VALUES (?, ?)");
    await Promise.all([
      insert.bind("watched-a", 1).run(),
      db.batch([insert.bind("watched-b", 2), insert.bind("watched-c", 3)]),
    ]);
    await insert.bind("watched-d", 4).run();
    await expect(insert.bind("watched-e", -1).run()).rejects.toThrow();
    expect(trips.map(({ statements, ok }) => ({ statements, ok }))).toEqual([
      { statements: 3, ok: true },
      { statements: 1, ok: true },
      { statements: 1, ok: false },
    ]);
    for (const trip of trips) expect(trip.end).toBeGreaterThanOrEqual(trip.start);
  });

  it("refuses a column the row does not have, as D1's first(column) does", async () => {
    await expect(env.DB.prepare("SELECT 1 AS one").first("two")).rejects.toThrow(/two/);
    const db = sharedTrips(env.DB);
    await expect(db.prepare("SELECT 1 AS one").first("two")).rejects.toThrow(/two/);
  });
});
