import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { sql } from "drizzle-orm";
import { it } from "vitest";

it("probe", async () => {
  const raw = await env.DB.prepare("select x'01020304' as b").raw();
  const all = await env.DB.prepare("select x'01020304' as b").all();
  const first = await env.DB.prepare("select x'01020304' as b").first();
  const db = drizzle(env.DB);
  const d = await db.all(sql`select x'01020304' as b`);
  const describe = (v: unknown) => Object.prototype.toString.call(v) + " " + JSON.stringify(v);
  console.log("raw", describe((raw[0] as unknown[])[0]), "all", describe((all.results[0] as Record<string, unknown>).b), "first", describe((first as Record<string, unknown>).b), "drizzle.all", describe((d[0] as Record<string, unknown>)));
  console.log("Buffer", typeof Buffer);
  // Insert with Uint8Array and with Buffer, read both ways
  await env.DB.exec("create table if not exists probe (b blob)");
  await env.DB.prepare("insert into probe values (?), (?), (?)").bind(new Uint8Array([5, 6]), new Uint8Array([7, 8]).buffer, Buffer.from([9, 10])).run();
  const back = await env.DB.prepare("select b, hex(b) h, typeof(b) t from probe").all();
  console.log(JSON.stringify(back.results), back.results.map((r) => Object.prototype.toString.call((r as Record<string, unknown>).b)));
});
