// Periodic memory upkeep, run by the cron trigger (wrangler.toml [triggers]): enforces each agent's
// retention (`settings.memory.retentionDays`: messages and summaries older than that are deleted,
// with their vectors), removes Vectorize vectors of deleted memories, and embeds memories that
// were left pending (a failed embedding call, a room evicted before its queue ran). Rooms whose
// messages expired are told through an injected callback: src/memory/ knows nothing of rooms.
// Proposals too: unanswered ones expire, and answered or expired ones are deleted after a while
// (the periods are in proposal-store.ts). The turn inspector's records go after
// TURN_INSPECTION_RETENTION_MS (turn-inspection-store.ts).
import { and, isNull, lt, ne } from "drizzle-orm";
import type { Env } from "../env.ts";
import type { AgentStore } from "../db/stores/agent-store.ts";
import { stores } from "../db/stores/index.ts";
import { deleteMemories } from "./memory-repo.ts";
import {
  DECIDED_PROPOSAL_RETENTION_MS,
  PENDING_PROPOSAL_TTL_MS,
} from "../db/stores/proposal-store.ts";
import { TURN_INSPECTION_RETENTION_MS } from "../db/stores/turn-inspection-store.ts";
import { memories } from "../db/schema.ts";
import { errorField, log } from "../log.ts";

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
  const { db, pipeline, agents, proposals, inspections } = stores(env);
  const report: MaintenanceReport = {
    agentsChecked: 0,
    expired: 0,
    vectorsRemoved: 0,
    embedded: 0,
    proposalsExpired: 0,
    proposalsDeleted: 0,
    inspectionsDeleted: 0,
  };

  for (let after: string | undefined, more = true; more; ) {
    const page = await agents.list({ limit: AGENTS_PER_PAGE, after });
    for (const summary of page.agents) {
      report.agentsChecked++;
      const days = await retentionDays(agents, summary.id);
      if (days === undefined) continue;
      const result = await deleteMemories(
        db,
        { agentId: summary.id, types: ["message", "summary"] },
        now - days * DAY_MS,
      );
      report.expired += result.deleted;
      if (result.rooms.length > 0) await options.forgetRoomHistory(summary.id, result.rooms);
    }
    after = page.nextCursor ?? undefined;
    more = page.nextCursor !== null;
  }

  report.vectorsRemoved = await pipeline.sweepDeletions();

  try {
    report.proposalsExpired = await proposals.expirePending(now - PENDING_PROPOSAL_TTL_MS, now);
    report.proposalsDeleted = await proposals.deleteDecided(now - DECIDED_PROPOSAL_RETENTION_MS);
  } catch (error) {
    // The memory upkeep below must still run.
    log.warn("maintenance_proposals_failed", { error: errorField(error) });
  }
  try {
    report.inspectionsDeleted = await inspections.prune(now - TURN_INSPECTION_RETENTION_MS);
  } catch (error) {
    log.warn("maintenance_inspections_failed", { error: errorField(error) });
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
  log.info("memory_maintenance", { ...report });
  return report;
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
