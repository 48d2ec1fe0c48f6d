// Which database holds an agent's data (src/db/shards.ts): the catalog's `agents.shard`, null for
// DB. A new agent goes to the emptiest memory database by D1's own size figure (`size_after`),
// the one with fewer agents on a tie; a database that does not answer takes none. The answer for
// an agent is kept for a minute per isolate: every turn and memory call needs it, and it changes
// only when an operator moves the agent.
import { eq, isNotNull, sql } from "drizzle-orm";
import type { Env } from "../../env.ts";
import { errorField, log } from "../../log.ts";
import { NotConfiguredError } from "../../runtime/util/errors.ts";
import type { Db } from "../db.ts";
import { agentMoves, agents } from "../schema.ts";
import {
  CATALOG_DB,
  type DatabaseName,
  databaseBinding,
  isDatabaseName,
  memoryDatabases,
} from "../shards.ts";

/** How long an isolate trusts what it read of an agent's database. */
export const PLACEMENT_CACHE_MS = 60_000;

export interface AgentPlacement {
  /** Where a new agent's data goes. */
  choose(): Promise<DatabaseName>;
  /**
   * Where an agent's data is (DB for an agent the catalog does not know: it has none). `fresh`
   * reads the catalog even when this isolate read it within PLACEMENT_CACHE_MS.
   */
  of(agentId: string, options?: { fresh?: boolean }): Promise<DatabaseName>;
  /**
   * Where the agent's data is, read now, and whether a move holds its writes there (the fence of
   * src/db/moves/agent-move.ts, between the last catch-up and the switch).
   */
  current(agentId: string): Promise<{ home: DatabaseName; fenced: boolean }>;
  /** Drops what this isolate remembers of the agent (it was deleted or moved). */
  forget(agentId: string): void;
}

const known = new Map<string, { name: DatabaseName; at: number }>();

/** For tests that empty the databases under a running isolate. */
export function forgetPlacements(): void {
  known.clear();
}

export function createAgentPlacement(env: Env, catalog: Db): AgentPlacement {
  return {
    async choose() {
      const candidates = memoryDatabases(env);
      if (candidates.length === 0) return CATALOG_DB;
      const [sizes, counts] = await Promise.all([
        Promise.all(candidates.map((name) => sizeOf(env, name))),
        agentsPerDatabase(catalog),
      ]);
      let best: { name: DatabaseName; size: number; agents: number } | null = null;
      for (const [i, name] of candidates.entries()) {
        const size = sizes[i];
        if (size === null || size === undefined) continue;
        const agentCount = counts.get(name) ?? 0;
        if (!best || size < best.size || (size === best.size && agentCount < best.agents))
          best = { name, size, agents: agentCount };
      }
      if (!best) {
        throw new NotConfiguredError(
          "no memory database answers, so a new agent has nowhere to keep its memories; see /health",
        );
      }
      return best.name;
    },

    async of(agentId, options) {
      const now = Date.now();
      const cached = known.get(agentId);
      if (cached && !options?.fresh && now - cached.at < PLACEMENT_CACHE_MS) return cached.name;
      const row = await catalog
        .select({ shard: agents.shard })
        .from(agents)
        .where(eq(agents.id, agentId))
        .get();
      if (!row) return CATALOG_DB;
      const name = row.shard !== null && isDatabaseName(row.shard) ? row.shard : CATALOG_DB;
      known.set(agentId, { name, at: now });
      return name;
    },

    async current(agentId) {
      const row = await catalog
        .select({ shard: agents.shard, phase: agentMoves.phase })
        .from(agents)
        .leftJoin(agentMoves, eq(agentMoves.agentId, agents.id))
        .where(eq(agents.id, agentId))
        .get();
      const home = row?.shard && isDatabaseName(row.shard) ? row.shard : CATALOG_DB;
      if (row) known.set(agentId, { name: home, at: Date.now() });
      return { home, fenced: row?.phase === "sync" || row?.phase === "verify" };
    },

    forget(agentId) {
      known.delete(agentId);
    },
  };
}

/** The database's size in bytes, as D1 reports it after a trivial read; null if it fails. */
async function sizeOf(env: Env, name: DatabaseName): Promise<number | null> {
  try {
    const result = await databaseBinding(env, name).prepare("SELECT 1").run();
    return Number(result.meta.size_after ?? 0);
  } catch (error) {
    log.warn("memory_database_unreachable", { database: name, error: errorField(error) });
    return null;
  }
}

async function agentsPerDatabase(catalog: Db): Promise<Map<string, number>> {
  const rows = await catalog
    .select({ shard: agents.shard, count: sql<number>`count(*)` })
    .from(agents)
    .where(isNotNull(agents.shard))
    .groupBy(agents.shard);
  return new Map(rows.map((row) => [row.shard ?? CATALOG_DB, Number(row.count)]));
}
