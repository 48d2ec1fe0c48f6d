// Failures the replies do not show, counted per agent and UTC day in D1 for GET /health (and the
// playground): after-reply evaluators (fact extraction, summaries) that failed, by evaluator, with
// the last one's cause (a reply looks fine while nothing is remembered: a SMALL_MODEL the endpoint
// does not serve, say); and turns whose model failed for good, by model and cause (/health said
// "ok" while every turn answered 502). The room records each failure off the reply path. Names,
// causes and times only: never a failure's message, which may carry a remote body.
import { desc, eq, sql } from "drizzle-orm";
import { utcDay } from "../../runtime/turn/spend.ts";
import type { ModelFailureCause } from "../../runtime/util/errors.ts";
import type { Db } from "../db.ts";
import { evaluatorFailuresDaily, modelFailuresDaily } from "../schema.ts";

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

/** At most this many rows of a day are read (agents x evaluators, or agents x models x causes). */
const DAY_ROWS = 500;

/** A day's rows, newest first: how many failures they count, and the newest row. */
function dayTotal<Row extends { count: number }>(rows: Row[]): { failed: number; newest?: Row } {
  return { failed: rows.reduce((sum, row) => sum + row.count, 0), newest: rows[0] };
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
      const { failed, newest } = dayTotal(
        await db
          .select({
            evaluator: t.evaluator,
            count: t.count,
            lastAt: t.lastAt,
            lastCause: t.lastCause,
          })
          .from(t)
          .where(eq(t.day, utcDay(now)))
          .orderBy(desc(t.lastAt))
          .limit(DAY_ROWS),
      );
      return {
        failed,
        last: newest
          ? { evaluator: newest.evaluator, at: newest.lastAt, cause: newest.lastCause }
          : null,
      };
    },
  };
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
      const { failed, newest } = dayTotal(
        await db
          .select({ model: t.model, cause: t.cause, count: t.count, lastAt: t.lastAt })
          .from(t)
          .where(eq(t.day, utcDay(now)))
          .orderBy(desc(t.lastAt))
          .limit(DAY_ROWS),
      );
      return {
        failed,
        last: newest ? { model: newest.model, cause: newest.cause, at: newest.lastAt } : null,
      };
    },
  };
}
