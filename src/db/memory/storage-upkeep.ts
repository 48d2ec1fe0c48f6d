// The upkeep's share of keeping D1 under its ceiling (docs/memory.md#watching-the-ceiling): an
// agent's usage records past USAGE_ROLLUP_AFTER_DAYS rolled up into daily rows, and each
// database's size sampled once a day for /health's days left. Neither failing stops the rest of
// the upkeep: both pick up where they stopped on the next run.
import type { Env } from "../../env.ts";
import type { Db } from "../db.ts";
import { deploymentDatabases, sampleDatabaseSize } from "../stores/database-size.ts";
import {
  rollUpUsage,
  USAGE_ROLLUP_AFTER_DAYS,
  type UsageRollupOptions,
} from "../stores/usage-rollup.ts";
import { utcDay } from "../../runtime/turn/spend.ts";
import { errorField, log } from "../../log.ts";

const DAY_MS = 86_400_000;

/** The UTC day before which usage records are rolled up at `now`. */
export function usageRollupCutoff(now: number): string {
  return utcDay(now - USAGE_ROLLUP_AFTER_DAYS * DAY_MS);
}

/** Rolls up one agent's old usage records (in the catalog); 0 when it fails (logged). */
export async function rollUpAgentUsage(
  catalog: Db,
  agentId: string,
  now: number,
  options?: UsageRollupOptions,
): Promise<number> {
  try {
    return await rollUpUsage(catalog, agentId, usageRollupCutoff(now), options);
  } catch (error) {
    log.warn("maintenance_usage_rollup_failed", { agentId, error: errorField(error) });
    return 0;
  }
}

/** Today's size sample of the catalog and of each memory database; how many were taken. */
export async function sampleDatabaseSizes(env: Env, now: number): Promise<number> {
  let sampled = 0;
  for (const { name, db } of deploymentDatabases(env)) {
    try {
      if ((await sampleDatabaseSize(db, now)) !== null) sampled++;
    } catch (error) {
      log.warn("maintenance_size_sample_failed", { database: name, error: errorField(error) });
    }
  }
  return sampled;
}
