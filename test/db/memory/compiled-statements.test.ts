// Statements compiled once with placeholders (src/db/memory/compiled.ts) must send what drizzle would
// have sent for the same values: the same SQL text, and rows that read back the same. A value left
// out is refused before anything reaches D1.
import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { compiled } from "../../../src/db/memory/compiled.ts";
import type { Db } from "../../../src/db/db.ts";
import { users } from "../../../src/db/schema.ts";

const db = drizzle(env.DB) as Db;

const upsertUser = compiled((d) =>
  d
    .insert(users)
    .values({
      id: sql.placeholder("id"),
      name: sql.placeholder("name"),
      source: sql.placeholder("source"),
      createdAt: sql.placeholder("at"),
      updatedAt: sql.placeholder("at"),
    })
    .onConflictDoUpdate({
      target: users.id,
      set: {
        name: sql`coalesce(excluded.name, ${users.name})`,
        updatedAt: sql`${sql.placeholder("at")}`,
      },
    }),
);

const direct = (id: string, name: string | null, at: number) =>
  db
    .insert(users)
    .values({ id, name, source: "api", createdAt: at, updatedAt: at })
    .onConflictDoUpdate({
      target: users.id,
      set: { name: sql`coalesce(excluded.name, ${users.name})`, updatedAt: at },
    });

describe("compiled statements", () => {
  it("send drizzle's SQL text and write what drizzle's statement writes", async () => {
    expect(upsertUser.sql(db)).toBe(direct("x", null, 0).toSQL().sql);
    await upsertUser.bind(db, { id: "c-1", name: "Ann", source: "api", at: 10 }).run();
    await direct("c-2", "Ann", 10);
    // The update branch: a null name keeps the stored one.
    await upsertUser.bind(db, { id: "c-1", name: null, source: "api", at: 20 }).run();
    await direct("c-2", null, 20);
    const read = async (id: string) => {
      const [row] = await db.select().from(users).where(eq(users.id, id));
      return { ...row, id: undefined };
    };
    expect(await read("c-1")).toEqual(await read("c-2"));
    expect(await read("c-1")).toMatchObject({ name: "Ann", createdAt: 10, updatedAt: 20 });
  });

  it("refuses a statement with a value left out before it is sent", () => {
    expect(() => upsertUser.bind(db, { id: "c-3", name: "Bo", source: "api" })).toThrow(
      /No value for placeholder "at"/,
    );
  });
});
