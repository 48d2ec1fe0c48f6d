// SchemaGate: one Durable Object (named "schema") through which every isolate brings D1 up to the
// migrations bundled with its code, so a deploy's pending migrations run exactly once however many
// isolates start at the same moment (a Durable Object runs one call at a time here, and a run in
// progress is shared). A finished run is remembered for the object's life: the next isolates of
// the same deploy get the answer without a D1 read. On the very first start of a deployment whose
// database holds no agent, it also seeds the shipped characters (SEED_CHARACTERS=false skips it).
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { MIGRATIONS } from "./migrations-bundle.ts";
import { applyPendingMigrations, schemaCurrent, type SchemaState } from "./schema-migrator.ts";
import { loadConfig } from "../config.ts";
import type { SchemaGateRpc } from "../rpc.ts";
import { errorField, log } from "../log.ts";
import { SHIPPED_CHARACTERS } from "../characters/shipped-characters.ts";
import { agentData, stores } from "./stores/index.ts";
import { databaseBinding, memoryDatabases } from "./shards.ts";
import { seedShippedCharacters } from "./seed-characters.ts";
import { loadTokenCounter } from "../runtime/util/tokens.ts";

const SEEDED_KEY = "seeded-at";

/** After a failed migration, callers within this time get the same answer without a new attempt. */
export const SCHEMA_RETRY_MS = 30_000;

export class SchemaGate extends DurableObject<Env> implements SchemaGateRpc {
  private run: Promise<SchemaState> | null = null;
  private last: { state: SchemaState; at: number } | null = null;

  /** Brings the schema up to date (or says why it could not) and answers where it stands. */
  async ensure(): Promise<SchemaState> {
    const last = this.last;
    if (last && (schemaCurrent(last.state) || Date.now() - last.at < SCHEMA_RETRY_MS))
      return last.state;
    this.run ??= this.migrateAll()
      .then(async (state) => {
        if (state.error === null) await this.seedOnce();
        this.last = { state, at: Date.now() };
        return state;
      })
      .finally(() => {
        this.run = null;
      });
    return this.run;
  }

  /**
   * The catalog, then each memory database on its own: one that fails keeps its error (and its
   * agents get 503s) while the others serve.
   */
  private async migrateAll(): Promise<SchemaState> {
    const state = await applyPendingMigrations(this.env.DB, MIGRATIONS);
    const databases = await Promise.all(
      memoryDatabases(this.env).map(async (name) => {
        try {
          const own = await applyPendingMigrations(databaseBinding(this.env, name), MIGRATIONS);
          return { name, version: own.version, error: own.error };
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log.error("memory_database_migration_failed", { database: name, error: message });
          return { name, version: null, error: { migration: "(none)", message } };
        }
      }),
    );
    return { ...state, databases };
  }

  /** The first start of a deployment with no agent gets the shipped characters (never again). */
  private async seedOnce(): Promise<void> {
    if (this.ctx.storage.kv.get(SEEDED_KEY) !== undefined) return;
    const config = loadConfig(this.env);
    try {
      const { agents } = stores(this.env);
      const existing = await agents.list({ limit: 1 });
      if (config.seedCharacters && existing.agents.length === 0) {
        const created = await seedShippedCharacters(
          {
            agents,
            dataOf: (agentId) => agentData(this.env, agentId),
            tokens: await loadTokenCounter(),
          },
          SHIPPED_CHARACTERS,
          Date.now(),
        );
        log.info("characters_seeded", { agents: created });
      }
      this.ctx.storage.kv.put(SEEDED_KEY, Date.now());
    } catch (error) {
      // Not fatal: the API works without them; the next start tries again.
      log.error("character_seeding_failed", { error: errorField(error) });
    }
  }
}
