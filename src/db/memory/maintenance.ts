// Periodic memory upkeep, run by the cron trigger (wrangler.toml [triggers]): enforces each agent's
// retention (`settings.memory.retentionDays`, else MEMORY_RETENTION_DAYS: messages and summaries
// older than that are deleted, with their vectors; facts, descriptions, lore and documents never
// are), rolls up usage records past USAGE_ROLLUP_AFTER_DAYS and samples each database's size
// (storage-upkeep.ts), removes Vectorize vectors of deleted memories, and embeds memories that
// were left pending (a failed embedding call, a room evicted before its queue ran). Rooms whose
// messages expired are told through an injected callback: src/db/memory/ knows nothing of rooms.
// Proposals too: unanswered ones expire, and answered or expired ones are deleted after a while
// (the periods are in proposal-store.ts). The turn inspector's records go after
// TURN_INSPECTION_RETENTION_MS (turn-inspection-store.ts).
import { and, isNull, lt, ne } from "drizzle-orm";
import type { Env } from "../../env.ts";
import type { AgentStore } from "../stores/agent-store.ts";
import { type AgentData, agentData, dataOn, stores } from "../stores/index.ts";
import { CATALOG_DB, type DatabaseName, memoryDatabases } from "../shards.ts";
import { deleteMemories } from "./memory-repo.ts";
import {
  DECIDED_PROPOSAL_RETENTION_MS,
  PENDING_PROPOSAL_TTL_MS,
} from "../stores/proposal-store.ts";
import { TURN_INSPECTION_RETENTION_MS } from "../stores/turn-inspection-store.ts";
import { memories } from "../schema.ts";
import { errorField, log } from "../../log.ts";
import { loadConfig } from "../../config.ts";
import { rollUpAgentUsage, sampleDatabaseSizes } from "./storage-upkeep.ts";

const DAY_MS = 86_400_000;
/** Pending memories younger than this are their room's queue's job, not the sweep's. */
const PENDING_GRACE_MS = 10 * 60_000;
const AGENTS_PER_PAGE = 100;

export interface MaintenanceReport {
  agentsChecked: number;
  expired: number;
  vectorsRemoved: number;
  embedded: number;
  /** Proposals nobody answered in time, now `expired`. */
  proposalsExpired: number;
  /** Answered or expired proposals past their retention, deleted. */
  proposalsDeleted: number;
  /** Turn inspector records past their retention, deleted. */
  inspectionsDeleted: number;
  /** Usage records summed into daily rolled-up rows (src/db/stores/usage-rollup.ts). */
  usageRolledUp: number;
  /** Databases whose size was sampled (for /health's days left). */
  databasesSampled: number;
}

export interface MaintenanceOptions {
  /** Tells the agent's rooms their messages changed, so they drop the history they cache. */
  forgetRoomHistory(agentId: string, roomIds: string[]): Promise<void>;
}

export async function runMemoryMaintenance(
  env: Env,
  now: number,
  options: MaintenanceOptions,
): Promise<MaintenanceReport> {
  const { agents, proposals, catalog } = stores(env);
  const report: MaintenanceReport = {
    agentsChecked: 0,
    expired: 0,
    vectorsRemoved: 0,
    embedded: 0,
    proposalsExpired: 0,
    proposalsDeleted: 0,
    inspectionsDeleted: 0,
    usageRolledUp: 0,
    databasesSampled: 0,
  };
  const defaultRetentionDays = loadConfig(env).memoryRetentionDays ?? undefined;

  for (let after: string | undefined, more = true; more; ) {
    const page = await agents.list({ limit: AGENTS_PER_PAGE, after });
    for (const summary of page.agents) {
      report.agentsChecked++;
      report.usageRolledUp += await rollUpAgentUsage(catalog, summary.id, now);
      const days = (await retentionDays(agents, summary.id)) ?? defaultRetentionDays;
      if (days === undefined) continue;
      try {
        // Only the conversation: facts, descriptions, lore and documents are never expired.
        const result = await deleteMemories(
          (await agentData(env, summary.id)).db,
          { agentId: summary.id, types: ["message", "summary"] },
          now - days * DAY_MS,
        );
        report.expired += result.deleted;
        if (result.rooms.length > 0) await options.forgetRoomHistory(summary.id, result.rooms);
      } catch (error) {
        // An agent being moved between databases refuses writes until the move is done.
        log.warn("maintenance_retention_failed", { agentId: summary.id, error: errorField(error) });
      }
    }
    after = page.nextCursor ?? undefined;
    more = page.nextCursor !== null;
  }

  report.databasesSampled = await sampleDatabaseSizes(env, now);

  try {
    report.proposalsExpired = await proposals.expirePending(now - PENDING_PROPOSAL_TTL_MS, now);
    report.proposalsDeleted = await proposals.deleteDecided(now - DECIDED_PROPOSAL_RETENTION_MS);
  } catch (error) {
    // The memory upkeep below must still run.
    log.warn("maintenance_proposals_failed", { error: errorField(error) });
  }
  const databases: DatabaseName[] = [CATALOG_DB, ...memoryDatabases(env)];
  for (const name of databases) {
    try {
      await upkeepDatabase(dataOn(env, name), now, report);
    } catch (error) {
      // One database that does not answer must not stop the others' upkeep.
      log.warn("maintenance_database_failed", { database: name, error: errorField(error) });
    }
  }
  log.info("memory_maintenance", { ...report });
  return report;
}

/** What each database holding agents' data needs: vector deletions, inspections, embeddings. */
async function upkeepDatabase(data: AgentData, now: number, report: MaintenanceReport) {
  const { db, pipeline, inspections } = data;
  report.vectorsRemoved += await pipeline.sweepDeletions();
  try {
    report.inspectionsDeleted += await inspections.prune(now - TURN_INSPECTION_RETENTION_MS);
  } catch (error) {
    log.warn("maintenance_inspections_failed", {
      database: data.database,
      error: errorField(error),
    });
  }
  const stale = await db
    .selectDistinct({ agentId: memories.agentId })
    .from(memories)
    .where(
      and(
        isNull(memories.embeddedAt),
        ne(memories.type, "document"),
        lt(memories.createdAt, now - PENDING_GRACE_MS),
      ),
    );
  for (const { agentId } of stale) {
    try {
      report.embedded += (await pipeline.embedPending({ agentId, maxBatches: 5 })).embedded;
    } catch (error) {
      log.warn("maintenance_embedding_failed", { agentId, error: errorField(error) });
    }
  }
}

async function retentionDays(agents: AgentStore, agentId: string): Promise<number | undefined> {
  try {
    return (await agents.get(agentId))?.character.settings.memory.retentionDays;
  } catch (error) {
    // One unreadable agent (e.g. SECRETS_KEY changed) must not stop the others' upkeep.
    log.warn("maintenance_agent_skipped", { agentId, error: errorField(error) });
    return undefined;
  }
}
