// Turns whose model failed for good (after retries and fallbacks), counted per agent, UTC day, model
// and cause in D1, so GET /health can say the model is failing, since when, why and what to check,
// where before it said "ok" while every turn answered 502. The room records each failure off the
// turn's path. Model names, causes and times only: never a failure's message (a remote body).
import { desc, eq, sql } from "drizzle-orm";
import { utcDay } from "../../runtime/turn/spend.ts";
import type { ModelFailureCause } from "../../runtime/util/errors.ts";
import type { Db } from "../db.ts";
import { modelFailuresDaily } from "../schema.ts";

export interface ModelFailures {
  record(failure: {
    agentId: string;
    model: string;
    cause: ModelFailureCause;
    at: number;
  }): Promise<void>;
  /** The UTC day of `now`: how many turns failed on their model, and the last one. */
  today(now: number): Promise<ModelFailureDay>;
}

export interface ModelFailureDay {
  failed: number;
  last: { model: string; cause: string; at: number } | null;
}

export function createModelFailures(db: Db): ModelFailures {
  const t = modelFailuresDaily;
  return {
    async record({ agentId, model, cause, at }) {
      await db
        .insert(t)
        .values({ agentId, day: utcDay(at), model, cause, count: 1, lastAt: at })
        .onConflictDoUpdate({
          target: [t.agentId, t.day, t.model, t.cause],
          set: { count: sql`${t.count} + 1`, lastAt: sql`max(${t.lastAt}, excluded.last_at)` },
        });
    },
    async today(now) {
      const rows = await db
        .select({ model: t.model, cause: t.cause, count: t.count, lastAt: t.lastAt })
        .from(t)
        .where(eq(t.day, utcDay(now)))
        .orderBy(desc(t.lastAt))
        .limit(500);
      const failed = rows.reduce((sum, row) => sum + row.count, 0);
      const newest = rows[0];
      return {
        failed,
        last: newest ? { model: newest.model, cause: newest.cause, at: newest.lastAt } : null,
      };
    },
  };
}
