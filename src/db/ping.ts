// A cheap round trip to D1 for /health.
import { sql } from "drizzle-orm";
import type { Db } from "./db.ts";

export async function databaseReachable(db: Db): Promise<boolean> {
  try {
    await db.run(sql`SELECT 1`);
    return true;
  } catch {
    return false;
  }
}
