// Moving an agent's data to another database while it keeps answering (docs/scaling.md). Each
// call does a bounded step and records where it stands in the catalog (agent_moves), so a move
// interrupted anywhere resumes where it stopped, or rolls back. The phases:
//   copy     every table, page by page, into the new database (the agent answers meanwhile);
//   catchup  the same pass again, for what changed during the copy;
//   sync     after the fence goes up in the old database (its triggers refuse the agent's inserts
//            and updates there), one more pass, which nothing can race;
//   verify   a read-only pass: nothing left to change, equal row counts and hash chains; else sync;
//   switch   the catalog names the new home and bumps the agent's version (rooms rebuild on it);
//   cleanup  the old rows go, page by page; the fence stays, for writers that have not noticed.
import type { Env } from "../../env.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../runtime/util/errors.ts";
import { CATALOG_DB, type DatabaseName, databaseBinding, isDatabaseName } from "../shards.ts";
import { MOVED_TABLES } from "./moved-tables.ts";
import { chain, type Key, reconcilePage } from "./reconcile.ts";

/** Rows per page: a few statements per batch at D1's 100 parameters each. */
export const MOVE_PAGE_ROWS = 200;
/** Rows per page of the read-only verification, which writes nothing. */
const VERIFY_PAGE_ROWS = 1_000;
/** Catch-up passes before the fence while each still changes more than CONVERGED_SHARE. */
const MAX_CATCHUP_PASSES = 3;
const CONVERGED_SHARE = 0.01;
/** Rows deleted per statement in clean-up and roll-back. */
const DELETE_ROWS = 500;
/** A step stops starting pages after this long, so each request stays short. */
const STEP_BUDGET_MS = 2_000;

export type MovePhase = "copy" | "catchup" | "sync" | "verify" | "cleanup" | "rollback";

interface PassState {
  after: Key | null;
  changed: number;
  sourceRows: number;
  targetRows: number;
  sourceChain: string;
  targetChain: string;
}

export interface MoveProgress {
  agentId: string;
  source: DatabaseName;
  target: DatabaseName;
  phase: MovePhase | "done";
  table: string | null;
  pass: Omit<PassState, "after">;
  startedAt: number;
  fencedAt: number | null;
  switchedAt: number | null;
}

interface MoveRow {
  agent_id: string;
  source: string;
  target: string;
  phase: MovePhase;
  table_index: number;
  cursor: string | null;
  started_at: number;
  updated_at: number;
}

interface StoredCursor extends PassState {
  fencedAt: number | null;
  switchedAt: number | null;
  /** Catch-up passes done so far. */
  catchups?: number;
}

const FRESH_PASS: PassState = {
  after: null,
  changed: 0,
  sourceRows: 0,
  targetRows: 0,
  sourceChain: "",
  targetChain: "",
};

/** Where the agent's data lives now (the catalog's `shard`). */
async function homeOf(env: Env, agentId: string): Promise<DatabaseName> {
  const row = await env.DB.prepare("SELECT shard FROM agents WHERE id = ?1")
    .bind(agentId)
    .first<{ shard: string | null }>();
  if (!row) throw new NotFoundError(`no agent with id "${agentId}"`);
  return row.shard !== null && isDatabaseName(row.shard) ? row.shard : CATALOG_DB;
}

async function loadMove(env: Env, agentId: string): Promise<MoveRow | null> {
  return env.DB.prepare("SELECT * FROM agent_moves WHERE agent_id = ?1")
    .bind(agentId)
    .first<MoveRow>();
}

/** The move's state, without doing anything; null when no move is under way. */
export async function readMove(env: Env, agentId: string): Promise<MoveProgress | null> {
  const row = await loadMove(env, agentId);
  return row ? progressOf(row, parseCursor(row.cursor)) : null;
}

/** Starts a move to `to`, or continues the one under way, by one bounded step. */
export async function stepMove(
  env: Env,
  agentId: string,
  to: string | undefined,
  /** At most this many pages in this step (default: as many as STEP_BUDGET_MS allows). */
  pages = Number.POSITIVE_INFINITY,
  now = Date.now(),
): Promise<MoveProgress> {
  let row = await loadMove(env, agentId);
  if (!row) {
    if (to === undefined) throw new NotFoundError(`agent "${agentId}" is not being moved`);
    row = await startMove(env, agentId, to, now);
  } else if (to !== undefined && to !== row.target) {
    throw new ConflictError(
      `agent "${agentId}" is being moved to ${row.target}; finish or roll back that move first`,
    );
  }
  return advance(env, row, Date.now(), pages);
}

/** Rolls back a move that has not switched yet: the new database forgets the agent again. */
export async function abortMove(env: Env, agentId: string): Promise<MoveProgress> {
  let row = await loadMove(env, agentId);
  if (!row) throw new NotFoundError(`agent "${agentId}" is not being moved`);
  if (row.phase === "cleanup") {
    throw new ConflictError(
      `agent "${agentId}" already lives in ${row.target}; let the move finish, then move it back`,
    );
  }
  if (row.phase !== "rollback") {
    const source = databaseBinding(env, row.source as DatabaseName);
    await source.prepare("DELETE FROM agent_fences WHERE agent_id = ?1").bind(agentId).run();
    row = { ...row, phase: "rollback", table_index: 0 };
    await save(env, row, { ...parseCursor(row.cursor), ...FRESH_PASS });
  }
  return advance(env, row, Date.now());
}

async function startMove(env: Env, agentId: string, to: string, now: number): Promise<MoveRow> {
  if (!isDatabaseName(to)) {
    throw new ValidationError(`"${to}" is not a database name (DB or MEMORY_DB_<n>)`);
  }
  const target = databaseBinding(env, to);
  const source = await homeOf(env, agentId);
  if (source === to) throw new ConflictError(`agent "${agentId}" already lives in ${to}`);
  // A fence left in the new home by an earlier move away from it must not hold the agent; a
  // memory database needs the agent's anchor row for its foreign keys (agent-store.ts).
  const statements = [target.prepare("DELETE FROM agent_fences WHERE agent_id = ?1").bind(agentId)];
  if (to !== CATALOG_DB) {
    statements.push(
      target
        .prepare(
          "INSERT OR IGNORE INTO agents (id, name, format, character, created_at, updated_at) SELECT ?1, ?1, 'v1', ?2, ?3, ?3",
        )
        .bind(agentId, JSON.stringify({ anchor: crypto.randomUUID() }), now),
    );
  }
  await target.batch(statements);
  const row: MoveRow = {
    agent_id: agentId,
    source,
    target: to,
    phase: "copy",
    table_index: 0,
    cursor: JSON.stringify({ ...FRESH_PASS, fencedAt: null, switchedAt: null }),
    started_at: now,
    updated_at: now,
  };
  await env.DB.prepare(
    "INSERT INTO agent_moves (agent_id, source, target, phase, table_index, cursor, started_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
  )
    .bind(agentId, source, to, row.phase, 0, row.cursor, now, now)
    .run();
  return row;
}

async function advance(
  env: Env,
  start: MoveRow,
  began: number,
  pages = Number.POSITIVE_INFINITY,
): Promise<MoveProgress> {
  let row = start;
  let cursor = parseCursor(row.cursor);
  for (let done = 0; done < pages && Date.now() - began < STEP_BUDGET_MS; done++) {
    const next = await advanceOnce(env, row, cursor);
    if (next === "done") return { ...progressOf(row, cursor), phase: "done", table: null };
    ({ row, cursor } = next);
    await save(env, row, cursor);
  }
  return progressOf(row, cursor);
}

type Advanced = { row: MoveRow; cursor: StoredCursor } | "done";

async function advanceOnce(env: Env, row: MoveRow, cursor: StoredCursor): Promise<Advanced> {
  if (row.phase === "cleanup" || row.phase === "rollback") return removeOnce(env, row, cursor);
  const table = MOVED_TABLES[row.table_index]!;
  const page = await reconcilePage({
    source: databaseBinding(env, row.source as DatabaseName),
    target: databaseBinding(env, row.target as DatabaseName),
    table,
    agentId: row.agent_id,
    after: cursor.after,
    limit: row.phase === "verify" ? VERIFY_PAGE_ROWS : MOVE_PAGE_ROWS,
    write: row.phase !== "verify",
  });
  const pass: StoredCursor = {
    ...cursor,
    after: page.next,
    changed: cursor.changed + page.changed,
    sourceRows: cursor.sourceRows + page.sourceRows,
    targetRows: cursor.targetRows + page.targetRows,
    sourceChain: await chain(cursor.sourceChain, page.sourceHash),
    targetChain: await chain(cursor.targetChain, page.targetHash),
  };
  if (page.next !== null) return { row, cursor: pass };
  if (row.table_index + 1 < MOVED_TABLES.length)
    return { row: { ...row, table_index: row.table_index + 1 }, cursor: pass };
  return finishPass(env, row, pass);
}

/** A pass over every table ended: on to the next phase. */
async function finishPass(env: Env, row: MoveRow, pass: StoredCursor): Promise<Advanced> {
  const fresh = { ...pass, ...FRESH_PASS };
  const at = (phase: MovePhase) => ({ row: { ...row, phase, table_index: 0 }, cursor: fresh });
  if (row.phase === "copy") return at("catchup");
  // Under load each catch-up finds what arrived during the last; the fence waits until little does.
  const catchups = (pass.catchups ?? 0) + 1;
  if (
    row.phase === "catchup" &&
    catchups < MAX_CATCHUP_PASSES &&
    pass.changed > CONVERGED_SHARE * pass.sourceRows
  ) {
    return { row: { ...row, table_index: 0 }, cursor: { ...fresh, catchups } };
  }
  if (row.phase === "catchup") {
    const fencedAt = Date.now();
    await databaseBinding(env, row.source as DatabaseName)
      .prepare("INSERT OR REPLACE INTO agent_fences (agent_id, since) VALUES (?1, ?2)")
      .bind(row.agent_id, fencedAt)
      .run();
    return { row: { ...row, phase: "sync", table_index: 0 }, cursor: { ...fresh, fencedAt } };
  }
  if (row.phase === "sync") return at("verify");
  const equal =
    pass.changed === 0 &&
    pass.sourceRows === pass.targetRows &&
    pass.sourceChain === pass.targetChain;
  if (!equal) return at("sync");
  const switchedAt = Date.now();
  // The new home, and a new version: rooms and tasks see it on their next turn and rebuild.
  await env.DB.batch([
    env.DB.prepare(
      "UPDATE agents SET shard = ?2, updated_at = max(?3, updated_at + 1) WHERE id = ?1",
    ).bind(row.agent_id, row.target === CATALOG_DB ? null : row.target, switchedAt),
    env.DB.prepare(
      "UPDATE agent_moves SET phase = 'cleanup', table_index = 0, updated_at = ?2 WHERE agent_id = ?1",
    ).bind(row.agent_id, switchedAt),
  ]);
  return {
    row: { ...row, phase: "cleanup", table_index: 0 },
    // The verification's figures stay on show through the clean-up.
    cursor: { ...pass, after: null, switchedAt },
  };
}

/**
 * Clean-up (the old database, after the switch) and roll-back (the new one, before it): the
 * agent's rows go a page at a time, newest tables first. Deleting an embedded memory queues its
 * Vectorize vector for deletion (migration 0002's trigger); the vectors are the other copy's
 * too, so those queue rows go in the same batch.
 */
async function removeOnce(env: Env, row: MoveRow, cursor: StoredCursor): Promise<Advanced> {
  const name = (row.phase === "cleanup" ? row.source : row.target) as DatabaseName;
  const db = databaseBinding(env, name);
  const tables = MOVED_TABLES.filter((table) => table.scope === "agent").reverse();
  const table = tables[row.table_index];
  if (!table) {
    // A memory database's anchor row goes last; the catalog's row is the agent itself.
    if (name !== CATALOG_DB)
      await db.prepare("DELETE FROM agents WHERE id = ?1").bind(row.agent_id).run();
    await env.DB.prepare("DELETE FROM agent_moves WHERE agent_id = ?1").bind(row.agent_id).run();
    return "done";
  }
  const results = await db.batch([
    db
      .prepare(
        `DELETE FROM "${table.name}" WHERE rowid IN (SELECT rowid FROM "${table.name}" WHERE agent_id = ?1 LIMIT ${DELETE_ROWS})`,
      )
      .bind(row.agent_id),
    db.prepare("DELETE FROM vector_deletions WHERE agent_id = ?1").bind(row.agent_id),
  ]);
  const removed = results[0]?.meta.changes ?? 0;
  if (removed > 0) return { row, cursor };
  return { row: { ...row, table_index: row.table_index + 1 }, cursor };
}

async function save(env: Env, row: MoveRow, cursor: StoredCursor): Promise<void> {
  await env.DB.prepare(
    "UPDATE agent_moves SET phase = ?2, table_index = ?3, cursor = ?4, updated_at = ?5 WHERE agent_id = ?1",
  )
    .bind(row.agent_id, row.phase, row.table_index, JSON.stringify(cursor), Date.now())
    .run();
}

function parseCursor(text: string | null): StoredCursor {
  const parsed = text ? (JSON.parse(text) as Partial<StoredCursor>) : {};
  return { ...FRESH_PASS, fencedAt: null, switchedAt: null, ...parsed };
}

function progressOf(row: MoveRow, cursor: StoredCursor): MoveProgress {
  const { after: _after, fencedAt, switchedAt, catchups: _catchups, ...pass } = cursor;
  const removing = row.phase === "cleanup" || row.phase === "rollback";
  const tables = removing
    ? MOVED_TABLES.filter((table) => table.scope === "agent").reverse()
    : MOVED_TABLES;
  return {
    agentId: row.agent_id,
    source: row.source as DatabaseName,
    target: row.target as DatabaseName,
    phase: row.phase,
    table: tables[row.table_index]?.name ?? null,
    pass,
    startedAt: row.started_at,
    fencedAt,
    switchedAt,
  };
}
