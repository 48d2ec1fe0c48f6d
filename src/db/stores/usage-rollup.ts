// Usage records older than USAGE_ROLLUP_AFTER_DAYS are summed into one row per agent, UTC day and
// (kind, room, user, guild, source, model, error): a busy agent writes one row per unit of work, and
// after a month nobody asks which turn of a day spent what, only what the day spent. The rows keep
// every figure GET /agents/:id/usage shows (by any grouping, at day granularity): `units` counts the
// units a row stands for, `tools` becomes [{name, units, calls, failed}], and the error code stays in
// the key, so failures are still counted per unit. Budgets read only today's rows: never rolled up.
//
// One batch (D1 runs it atomically) sums a bounded slice of an agent's oldest raw rows into their
// rolled-up rows and deletes exactly that slice: an interrupted rollup loses nothing and counts
// nothing twice, and running it again picks up where it stopped.
import type { Db } from "../db.ts";

/** Raw usage records are kept this long (by UTC day) before their day is rolled up. */
export const USAGE_ROLLUP_AFTER_DAYS = 30;
/** Raw rows summed per batch: one statement's work stays well inside D1's time limit. */
export const USAGE_ROLLUP_BATCH_ROWS = 1000;
/** Batches per agent and upkeep run; what is left waits for the next run (hourly). */
export const USAGE_ROLLUP_MAX_BATCHES = 10;

/**
 * The slice of the agent's raw rows older than the cutoff, oldest day first, in the order of the
 * partial index usage_records_unrolled_idx (agent_id, day, rowid): both statements of a batch
 * pick the same rows, since the rows the first one writes are rolled_up and out of it.
 */
export const ROLLUP_SLICE = `SELECT rowid AS rid FROM usage_records
  WHERE agent_id = ?1 AND rolled_up = 0 AND day < ?2 ORDER BY day, rowid LIMIT ?3`;

/** A rolled-up tool entry, per tool name: units that called it, calls, calls that failed. */
const TOOL_ENTRY = `json_object('name', name, 'units', units, 'calls', calls, 'failed', failed)`;

const ROLL_UP = `WITH picked AS (
    SELECT r.rowid AS rid,
      'rollup:' || json_array(r.kind, r.day, r.room_id, r.user_id, r.guild_id, r.source, r.model, r.error)
        AS rolled_id,
      r.*
    FROM usage_records r WHERE r.rowid IN (${ROLLUP_SLICE})
  ),
  unit_tools AS (
    SELECT p.rolled_id, p.rid, json_extract(t.value, '$.name') AS name, count(*) AS calls,
      sum(json_extract(t.value, '$.ok') = 0) AS failed
    FROM picked p, json_each(p.tools) t GROUP BY p.rid, name
  ),
  group_tools AS (
    SELECT rolled_id, json_group_array(${TOOL_ENTRY}) AS tools FROM (
      SELECT rolled_id, name, count(*) AS units, sum(calls) AS calls, sum(failed) AS failed
      FROM unit_tools GROUP BY rolled_id, name
    ) GROUP BY rolled_id
  )
  INSERT INTO usage_records (id, agent_id, kind, day, room_id, user_id, guild_id, source, model,
    error, input_tokens, cached_input_tokens, output_tokens, model_calls, tool_calls,
    late_embeddings, units, tools, rolled_up, created_at)
  SELECT p.rolled_id, ?1, p.kind, p.day, p.room_id, p.user_id, p.guild_id, p.source, p.model,
    p.error, sum(p.input_tokens), sum(p.cached_input_tokens), sum(p.output_tokens),
    sum(p.model_calls), sum(p.tool_calls), sum(p.late_embeddings), sum(p.units),
    coalesce((SELECT g.tools FROM group_tools g WHERE g.rolled_id = p.rolled_id), '[]'),
    1, min(p.created_at)
  FROM picked p WHERE true GROUP BY p.rolled_id
  ON CONFLICT (agent_id, id) DO UPDATE SET
    input_tokens = input_tokens + excluded.input_tokens,
    cached_input_tokens = cached_input_tokens + excluded.cached_input_tokens,
    output_tokens = output_tokens + excluded.output_tokens,
    model_calls = model_calls + excluded.model_calls,
    tool_calls = tool_calls + excluded.tool_calls,
    late_embeddings = late_embeddings + excluded.late_embeddings,
    units = units + excluded.units,
    tools = (SELECT json_group_array(${TOOL_ENTRY}) FROM (
      SELECT json_extract(value, '$.name') AS name, sum(json_extract(value, '$.units')) AS units,
        sum(json_extract(value, '$.calls')) AS calls, sum(json_extract(value, '$.failed')) AS failed
      FROM (SELECT value FROM json_each(usage_records.tools)
        UNION ALL SELECT value FROM json_each(excluded.tools))
      GROUP BY name)),
    created_at = min(created_at, excluded.created_at)`;

const DELETE_PICKED = `DELETE FROM usage_records WHERE rowid IN (${ROLLUP_SLICE})`;

export interface UsageRollupOptions {
  /** Rows per batch (tests make it small to stop a rollup half-way). */
  batchRows?: number;
  maxBatches?: number;
}

/**
 * Rolls up the agent's raw usage rows of days before `beforeDay` (YYYY-MM-DD), batch by batch;
 * returns how many raw rows were summed away. Idempotent: rolled-up rows are never picked again.
 */
export async function rollUpUsage(
  db: Db,
  agentId: string,
  beforeDay: string,
  options: UsageRollupOptions = {},
): Promise<number> {
  const batchRows = options.batchRows ?? USAGE_ROLLUP_BATCH_ROWS;
  const maxBatches = options.maxBatches ?? USAGE_ROLLUP_MAX_BATCHES;
  const client = db.$client;
  let rolled = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const params = [agentId, beforeDay, batchRows];
    const [, deleted] = await client.batch([
      client.prepare(ROLL_UP).bind(...params),
      client.prepare(DELETE_PICKED).bind(...params),
    ]);
    const count = deleted?.meta.changes ?? 0;
    rolled += count;
    if (count < batchRows) break;
  }
  return rolled;
}
