// The one handle on D1: drizzle over the DB binding. Built once per environment object by
// src/db/stores/index.ts; every store and query in src/db/ (memory/ included) takes it. Nothing outside
// those two folders sees drizzle (test/node/boundaries.spec.ts holds that).
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";

/** With its D1 binding (`$client`), for the few reads that skip drizzle's row mapping. */
export type Db = DrizzleD1Database<Record<string, never>> & { $client: D1Database };

export function openDb(binding: D1Database): Db {
  return drizzle(binding);
}
