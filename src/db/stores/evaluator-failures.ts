// After-reply evaluators (fact extraction, summaries) that failed, counted per agent, UTC day and
// evaluator in D1. A reply looks fine while nothing is remembered (a SMALL_MODEL the endpoint does
// not serve, say): the room records each failure off the reply path, and `/health` reports the
// day's count so the operator and the playground see it. Evaluator names and times only: never a
// failure's message, which may carry a remote body.
import { desc, eq, sql } from "drizzle-orm";
import { utcDay } from "../../runtime/turn/spend.ts";
import type { Db } from "../db.ts";
import { evaluatorFailuresDaily } from "../schema.ts";

export interface EvaluatorFailures {
  record(failure: {
    agentId: string;
    evaluator: string;
    at: number;
    /** Why its model call failed (ModelFailureCause), null when something else failed. */
    cause: string | null;
  }): Promise<void>;
  /** The UTC day of `now`: how many failed, and the last one. */
  today(now: number): Promise<EvaluatorFailureDay>;
}

export interface EvaluatorFailureDay {
  failed: number;
  last: { evaluator: string; at: number; cause: string | null } | null;
}

export function createEvaluatorFailures(db: Db): EvaluatorFailures {
  const t = evaluatorFailuresDaily;
  return {
    async record({ agentId, evaluator, at, cause }) {
      await db
        .insert(t)
        .values({ agentId, day: utcDay(at), evaluator, count: 1, lastAt: at, lastCause: cause })
        .onConflictDoUpdate({
          target: [t.agentId, t.day, t.evaluator],
          set: {
            count: sql`${t.count} + 1`,
            // The newest failure's cause: kept with its time.
            lastCause: sql`CASE WHEN excluded.last_at >= ${t.lastAt} THEN excluded.last_cause ELSE ${t.lastCause} END`,
            lastAt: sql`max(${t.lastAt}, excluded.last_at)`,
          },
        });
    },
    async today(now) {
      const rows = await db
        .select({
          evaluator: t.evaluator,
          count: t.count,
          lastAt: t.lastAt,
          lastCause: t.lastCause,
        })
        .from(t)
        .where(eq(t.day, utcDay(now)))
        .orderBy(desc(t.lastAt))
        .limit(500);
      const failed = rows.reduce((sum, row) => sum + row.count, 0);
      const newest = rows[0];
      return {
        failed,
        last: newest
          ? { evaluator: newest.evaluator, at: newest.lastAt, cause: newest.lastCause }
          : null,
      };
    },
  };
}
