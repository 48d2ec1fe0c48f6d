// Model tokens spent per agent per UTC day, in D1, for the daily ceiling
// (DAILY_TOKEN_LIMIT / a character's settings.dailyTokens). One upsert per turn, off the reply path.
import { and, eq, sql } from "drizzle-orm";
import type { SpendLedger } from "../../runtime/turn/spend.ts";
import { compiled } from "../../memory/compiled.ts";
import type { Db } from "../db.ts";
import { modelUsageDaily } from "../schema.ts";

/** One turn's tokens onto the agent's day: every turn makes this write. */
const addTokens = compiled((db) =>
  db
    .insert(modelUsageDaily)
    .values({
      agentId: sql.placeholder("agentId"),
      day: sql.placeholder("day"),
      tokens: sql.placeholder("tokens"),
    })
    .onConflictDoUpdate({
      target: [modelUsageDaily.agentId, modelUsageDaily.day],
      set: { tokens: sql`${modelUsageDaily.tokens} + ${sql.placeholder("tokens")}` },
    }),
);

export function createD1SpendLedger(db: Db): SpendLedger {
  return {
    async spentOn(agentId, day) {
      const row = await db
        .select({ tokens: modelUsageDaily.tokens })
        .from(modelUsageDaily)
        .where(and(eq(modelUsageDaily.agentId, agentId), eq(modelUsageDaily.day, day)))
        .get();
      return row?.tokens ?? 0;
    },
    async add(agentId, day, tokens) {
      await addTokens.bind(db, { agentId, day, tokens }).run();
    },
  };
}
