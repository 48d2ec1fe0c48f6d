// The room's turn journal in Durable Object SQLite. A turn is written here synchronously when it
// arrives (so arrival order is journal order), and moves received -> running -> replied ->
// evaluated (or failed). The caller is answered at `replied`; `evaluated` means the reply is in D1
// and the evaluators have run. After an eviction the journal says exactly where each turn stopped.
// Finished turns are kept for IDEMPOTENCY_WINDOW_MS so a retried request finds its answer. While a
// turn runs, each tool call is journalled as it starts and each successful output as it returns:
// an attempt after a crash reuses the outputs instead of calling those tools again, and refuses
// the calls that started and never finished (one that exceeds the CPU limit would again). A chat
// turn that failed on an unreachable model goes back to `received` with a retry time
// (model-retry.ts) and runs again then, or sooner when a newer message arrives.
import { z } from "zod";
import type { SerializedError } from "../../runtime/util/errors.ts";
import type {
  ApprovalDecision,
  ToolLoopCheckpoint,
  TurnInput,
  TurnOutcome,
} from "../../runtime/turn/turn-types.ts";
import type { ToolOutput } from "../../runtime/ports/tools.ts";
import type { DeliveryTarget, PostedPrompt } from "../shared/reply-surface.ts";
import {
  CheckpointShape,
  DecisionShape,
  DeliveryTargetShape,
  PostedPromptShape,
  inObjectStorage,
  SerializedErrorShape,
  TurnInputShape,
  TurnOutcomeShape,
} from "../shared/stored-shapes.ts";
import {
  checkSaved,
  JsonColumnError,
  readSaved,
  type SavedShape,
  savedShape,
  writeSaved,
} from "../../db/json-column.ts";

export type TurnStatus =
  | "received"
  | "running"
  | "awaiting_approval"
  | "replied"
  | "evaluated"
  | "failed";
/** Where a reply goes besides the caller waiting on the RPC (a surface's delivery target). */
export type DeliveryStatus = "pending" | "delivered" | "failed";

/** A turn stopped at a tool call that needs a person's approval, and what became of it. */
export interface ApprovalPause {
  approvalId: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The turn's user (`discord:<id>`): the only person whose answer counts. */
  requesterId: string;
  requestedAt: number;
  expiresAt: number;
  checkpoint: ToolLoopCheckpoint;
  /** The message with the buttons, once posted (null until then): the surface's own data. */
  prompt: PostedPrompt | null;
  decision?: { value: ApprovalDecision; by: string | null; at: number };
}

const ApprovalPauseShape: z.ZodType<ApprovalPause> = z.looseObject({
  approvalId: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  requesterId: z.string(),
  requestedAt: z.number(),
  expiresAt: z.number(),
  checkpoint: CheckpointShape,
  prompt: PostedPromptShape.nullable(),
  decision: DecisionShape.optional(),
});

const INPUT = savedShape(TurnInputShape);
const OUTCOME = savedShape(TurnOutcomeShape);
const ERROR = savedShape(SerializedErrorShape);
const DELIVERY = savedShape(DeliveryTargetShape);
const PAUSE = savedShape(ApprovalPauseShape);

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A turn that crashed the object this many times is failed instead of retried forever. */
export const MAX_TURN_ATTEMPTS = 3;

export interface JournalEntry {
  seq: number;
  turnId: string;
  idempotencyKey: string | null;
  fingerprint: string | null;
  status: TurnStatus;
  input: TurnInput;
  outcome: TurnOutcome | null;
  error: SerializedError | null;
  attempts: number;
  createdAt: number;
  updatedAt: number;
  delivery: DeliveryTarget | null;
  deliveryStatus: DeliveryStatus | null;
  /** Messages of the reply already sent, so a resumed delivery sends none twice. */
  deliveredParts: number;
  /** Set while (and after) the turn waited for a tool approval. */
  pause: ApprovalPause | null;
  /** When a turn waiting after a model failure runs again (null: not waiting). */
  retryAt: number | null;
  /** How many times the turn was put back after a model failure (model-retry.ts). */
  retries: number;
}

const Row = z.object({
  seq: z.number(),
  turn_id: z.string(),
  idempotency_key: z.string().nullable(),
  fingerprint: z.string().nullable(),
  status: z.enum(["received", "running", "awaiting_approval", "replied", "evaluated", "failed"]),
  input: z.string(),
  outcome: z.string().nullable(),
  error: z.string().nullable(),
  attempts: z.number(),
  created_at: z.number(),
  updated_at: z.number(),
  delivery: z.string().nullable(),
  delivery_status: z.enum(["pending", "delivered", "failed"]).nullable(),
  delivered_parts: z.number(),
  pause: z.string().nullable(),
  retry_at: z.number().nullable(),
  retries: z.number(),
});

export class TurnJournal {
  private readonly sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  migrate(): void {
    this.sql.exec(`CREATE TABLE IF NOT EXISTS turn_journal (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      turn_id TEXT NOT NULL UNIQUE,
      idempotency_key TEXT UNIQUE,
      fingerprint TEXT,
      status TEXT NOT NULL,
      input TEXT NOT NULL,
      outcome TEXT,
      error TEXT,
      attempts INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    )`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS turn_journal_status ON turn_journal (status, seq)");
    // Added with the Discord client: rooms created before it get the columns on their next start.
    const columns = new Set(
      this.sql
        .exec("SELECT name FROM pragma_table_info('turn_journal')")
        .toArray()
        .map((row) => String(row.name)),
    );
    if (!columns.has("delivery"))
      this.sql.exec("ALTER TABLE turn_journal ADD COLUMN delivery TEXT");
    if (!columns.has("delivery_status"))
      this.sql.exec("ALTER TABLE turn_journal ADD COLUMN delivery_status TEXT");
    if (!columns.has("delivered_parts"))
      this.sql.exec(
        "ALTER TABLE turn_journal ADD COLUMN delivered_parts INTEGER NOT NULL DEFAULT 0",
      );
    // Added with tool approval.
    if (!columns.has("pause")) this.sql.exec("ALTER TABLE turn_journal ADD COLUMN pause TEXT");
    // Added with retries after a model failure.
    if (!columns.has("retry_at"))
      this.sql.exec("ALTER TABLE turn_journal ADD COLUMN retry_at INTEGER");
    if (!columns.has("retries"))
      this.sql.exec("ALTER TABLE turn_journal ADD COLUMN retries INTEGER NOT NULL DEFAULT 0");
    this.sql.exec(
      "CREATE INDEX IF NOT EXISTS turn_journal_delivery ON turn_journal (delivery_status, seq)",
    );
    this.sql.exec(`CREATE TABLE IF NOT EXISTS turn_tool_outputs (
      turn_id TEXT NOT NULL,
      call_key TEXT NOT NULL,
      output TEXT NOT NULL,
      PRIMARY KEY (turn_id, call_key)
    )`);
  }

  /**
   * What a running turn's earlier attempts did, by call key: a successful output, or "started"
   * for a call that began and never finished.
   */
  toolOutputs(turnId: string): Map<string, ToolOutput | "started"> {
    const calls = new Map<string, ToolOutput | "started">();
    for (const row of this.sql.exec(
      "SELECT call_key, output FROM turn_tool_outputs WHERE turn_id = ?",
      turnId,
    )) {
      const call = readToolCall(String(row.output));
      // An unreadable row only costs a repeat of that call.
      if (call) calls.set(String(row.call_key), call);
    }
    return calls;
  }

  /**
   * Synchronous, so it is written before the tool's first request or the turn's next model call
   * leaves (the room's output gate holds them until it is stored): "started" as a call begins,
   * its output when it succeeds; a failure clears the start, and a later attempt may try again.
   */
  recordToolOutput(turnId: string, key: string, entry: ToolOutput | "started"): void {
    if (entry !== "started" && !entry.ok) {
      this.sql.exec(
        "DELETE FROM turn_tool_outputs WHERE turn_id = ? AND call_key = ?",
        turnId,
        key,
      );
      return;
    }
    const stored: StoredToolCall =
      entry === "started" ? { call: "started" } : { call: "finished", output: entry };
    this.sql.exec(
      "INSERT OR REPLACE INTO turn_tool_outputs (turn_id, call_key, output) VALUES (?, ?, ?)",
      turnId,
      key,
      writeSaved(TOOL_CALL, stored),
    );
  }

  /**
   * Synchronous on purpose: callers rely on nothing interleaving between check and insert. A
   * newer message releases the turns waiting to retry on the model: they run first, in order.
   */
  insert(entry: {
    input: TurnInput;
    idempotencyKey?: string;
    fingerprint?: string;
    delivery?: DeliveryTarget;
    now: number;
  }): void {
    this.sql.exec(
      `INSERT INTO turn_journal (turn_id, idempotency_key, fingerprint, status, input, created_at, updated_at, delivery, delivery_status)
       VALUES (?, ?, ?, 'received', ?, ?, ?, ?, ?)`,
      entry.input.turnId,
      entry.idempotencyKey ?? null,
      entry.fingerprint ?? null,
      writeSaved(INPUT, entry.input),
      entry.now,
      entry.now,
      entry.delivery ? writeSaved(DELIVERY, entry.delivery) : null,
      entry.delivery ? "pending" : null,
    );
    this.sql.exec(
      "UPDATE turn_journal SET retry_at = ? WHERE status = 'received' AND retry_at > ?",
      entry.now,
      entry.now,
    );
  }

  /**
   * What still has to reach the turn's surface, oldest first: finished replies, and approval
   * prompts not posted yet.
   */
  undelivered(): JournalEntry[] {
    return this.sql
      .exec(
        `SELECT * FROM turn_journal WHERE delivery_status = 'pending'
           AND (status IN ('replied', 'evaluated', 'failed') OR (status = 'awaiting_approval' AND json_extract(pause, '$.prompt') IS NULL))
         ORDER BY seq`,
      )
      .toArray()
      .map(toEntry);
  }

  /** running -> awaiting_approval. The crash counter restarts: the pause is not a crash. */
  markAwaitingApproval(turnId: string, pause: ApprovalPause, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET status = 'awaiting_approval', pause = ?, attempts = 0, updated_at = ? WHERE turn_id = ?",
      writeSaved(PAUSE, pause),
      now,
      turnId,
    );
  }

  /** Records where the prompt went (and that the deferred response now holds it). */
  markPromptPosted(
    turnId: string,
    pause: ApprovalPause,
    delivery: DeliveryTarget,
    now: number,
  ): void {
    this.sql.exec(
      "UPDATE turn_journal SET pause = ?, delivery = ?, updated_at = ? WHERE turn_id = ?",
      writeSaved(PAUSE, pause),
      writeSaved(DELIVERY, delivery),
      now,
      turnId,
    );
  }

  /** awaiting_approval -> received with the decision: the next drain resumes the turn. */
  markDecided(
    turnId: string,
    pause: ApprovalPause,
    delivery: DeliveryTarget | null,
    now: number,
  ): void {
    this.sql.exec(
      "UPDATE turn_journal SET status = 'received', pause = ?, delivery = ?, updated_at = ? WHERE turn_id = ? AND status = 'awaiting_approval'",
      writeSaved(PAUSE, pause),
      delivery ? writeSaved(DELIVERY, delivery) : null,
      now,
      turnId,
    );
  }

  awaitingApproval(): JournalEntry[] {
    return this.sql
      .exec("SELECT * FROM turn_journal WHERE status = 'awaiting_approval' ORDER BY seq")
      .toArray()
      .map(toEntry);
  }

  byApprovalId(approvalId: string): JournalEntry | null {
    return this.one(
      "SELECT * FROM turn_journal WHERE status = 'awaiting_approval' AND json_extract(pause, '$.approvalId') = ?",
      approvalId,
    );
  }

  markDeliveredParts(turnId: string, parts: number, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET delivered_parts = ?, updated_at = ? WHERE turn_id = ?",
      parts,
      now,
      turnId,
    );
  }

  markDelivery(turnId: string, status: "delivered" | "failed", now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET delivery_status = ?, updated_at = ? WHERE turn_id = ?",
      status,
      now,
      turnId,
    );
  }

  /**
   * Lets go of a key whose turn failed, or replied before `repliedBefore`: the turn stays, and the
   * key may start a new one (SubmitTurnRequest.replayWindowMs). A turn still running keeps it.
   */
  releaseKey(idempotencyKey: string, repliedBefore: number): void {
    this.sql.exec(
      `UPDATE turn_journal SET idempotency_key = NULL WHERE idempotency_key = ?
         AND (status = 'failed' OR (status IN ('replied', 'evaluated') AND updated_at < ?))`,
      idempotencyKey,
      repliedBefore,
    );
  }

  byKey(idempotencyKey: string): JournalEntry | null {
    return this.one("SELECT * FROM turn_journal WHERE idempotency_key = ?", idempotencyKey);
  }

  byTurnId(turnId: string): JournalEntry | null {
    return this.one("SELECT * FROM turn_journal WHERE turn_id = ?", turnId);
  }

  /** Which of these turns failed, while the journal keeps them (IDEMPOTENCY_WINDOW_MS). */
  failedAmong(turnIds: string[]): JournalEntry[] {
    if (turnIds.length === 0) return [];
    return this.sql
      .exec(
        "SELECT * FROM turn_journal WHERE status = 'failed' AND turn_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(turnIds),
      )
      .toArray()
      .map(toEntry);
  }

  /** The oldest turn still waiting for its reply, and not for a later retry. */
  nextToRun(now: number): JournalEntry | null {
    return this.one(
      "SELECT * FROM turn_journal WHERE status IN ('received', 'running') AND coalesce(retry_at, 0) <= ? ORDER BY seq LIMIT 1",
      now,
    );
  }

  /** Turns answered but not yet stored in D1 and evaluated, oldest first. */
  replied(): JournalEntry[] {
    return this.sql
      .exec("SELECT * FROM turn_journal WHERE status = 'replied' ORDER BY seq")
      .toArray()
      .map(toEntry);
  }

  markRunning(turnId: string, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET status = 'running', attempts = attempts + 1, retry_at = NULL, updated_at = ? WHERE turn_id = ?",
      now,
      turnId,
    );
  }

  markReplied(turnId: string, outcome: TurnOutcome, now: number): void {
    this.sql.exec("DELETE FROM turn_tool_outputs WHERE turn_id = ?", turnId);
    this.sql.exec(
      "UPDATE turn_journal SET status = 'replied', outcome = ?, error = NULL, updated_at = ? WHERE turn_id = ?",
      writeSaved(OUTCOME, outcome),
      now,
      turnId,
    );
  }

  markEvaluated(turnId: string, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET status = 'evaluated', updated_at = ? WHERE turn_id = ?",
      now,
      turnId,
    );
  }

  markFailed(turnId: string, error: SerializedError, now: number): void {
    this.sql.exec("DELETE FROM turn_tool_outputs WHERE turn_id = ?", turnId);
    this.sql.exec(
      "UPDATE turn_journal SET status = 'failed', error = ?, updated_at = ? WHERE turn_id = ?",
      writeSaved(ERROR, error),
      now,
      turnId,
    );
  }

  /**
   * running -> received, to run again at `retryAt` after a model failure (model-retry.ts). The
   * error stays for the operator; the tools' journalled outputs stay, so the retry reuses them;
   * the crash counter restarts, as a failure the turn saw is not a crash.
   */
  markRetrying(turnId: string, error: SerializedError, retryAt: number, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET status = 'received', error = ?, retry_at = ?, retries = retries + 1, attempts = 0, updated_at = ? WHERE turn_id = ?",
      writeSaved(ERROR, error),
      retryAt,
      now,
      turnId,
    );
  }

  /** The message as the room rewrote it before its turn went on (a voice note's transcript). */
  reviseInput(turnId: string, input: TurnInput, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET input = ?, updated_at = ? WHERE turn_id = ?",
      writeSaved(INPUT, input),
      now,
      turnId,
    );
  }

  /** The message was edited before its turn started: the turn answers the new text. */
  reviseText(turnId: string, text: string, now: number): boolean {
    return (
      this.sql.exec(
        "UPDATE turn_journal SET input = json_set(input, '$.text', ?), updated_at = ? WHERE turn_id = ? AND status = 'received' AND attempts = 0 AND pause IS NULL",
        text,
        now,
        turnId,
      ).rowsWritten > 0
    );
  }

  /**
   * The message was deleted before its turn started: the turn is dropped, stored as failed with
   * why, with nothing to deliver. False when it had already started.
   */
  markDropped(turnId: string, error: SerializedError, now: number): boolean {
    return (
      this.sql.exec(
        "UPDATE turn_journal SET status = 'failed', error = ?, delivery_status = NULL, updated_at = ? WHERE turn_id = ? AND status = 'received' AND attempts = 0 AND pause IS NULL",
        writeSaved(ERROR, error),
        now,
        turnId,
      ).rowsWritten > 0
    );
  }

  /** Drops finished turns older than the idempotency window. */
  prune(now: number): number {
    return this.sql.exec(
      "DELETE FROM turn_journal WHERE status IN ('evaluated', 'failed') AND coalesce(delivery_status, '') <> 'pending' AND updated_at < ?",
      now - IDEMPOTENCY_WINDOW_MS,
    ).rowsWritten;
  }

  private one(query: string, ...bindings: unknown[]): JournalEntry | null {
    const rows = this.sql.exec(query, ...bindings).toArray();
    const row = rows[0];
    return row ? toEntry(row) : null;
  }
}

function toEntry(raw: unknown): JournalEntry {
  const row = Row.parse(raw);
  // Written by this class only, and checked again on the way back (src/db/json-column.ts).
  const where = (name: string) => inObjectStorage(`turn ${row.turn_id}: ${name}`);
  const column = <T extends object>(
    saved: SavedShape<T>,
    json: string | null,
    name: string,
  ): T | null => (json ? readSaved(saved, json, where(name)) : null);
  return {
    seq: row.seq,
    turnId: row.turn_id,
    idempotencyKey: row.idempotency_key,
    fingerprint: row.fingerprint,
    status: row.status,
    input: readSaved(INPUT, row.input, where("input")),
    outcome: column(OUTCOME, row.outcome, "outcome"),
    error: column(ERROR, row.error, "error"),
    attempts: row.attempts,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    delivery: column(DELIVERY, row.delivery, "delivery"),
    deliveryStatus: row.delivery_status,
    deliveredParts: row.delivered_parts,
    pause: column(PAUSE, row.pause, "pause"),
    retryAt: row.retry_at,
    retries: row.retries,
  };
}

const StoredToolOutput = z.union([
  z.object({ ok: z.literal(true), content: z.string(), data: z.unknown().optional() }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);

/**
 * A journalled tool call (turn_tool_outputs.output). Version 1, written before calls were
 * journalled as they start, is the bare output of a successful call and still reads as one;
 * version 2 says whether the call has started or finished.
 */
const StoredToolCallShape = z.discriminatedUnion("call", [
  z.object({ call: z.literal("started") }),
  z.object({ call: z.literal("finished"), output: StoredToolOutput }),
]);
type StoredToolCall = z.infer<typeof StoredToolCallShape>;
const TOOL_CALL = savedShape(StoredToolCallShape, {
  version: 2,
  upgrades: { 1: (output) => ({ call: "finished", output }) },
});

/**
 * The journal's JSON columns and their saved-state versions (src/db/json-column.ts says how they
 * are read; docs/architecture.md, "Saved state", lists them). A row written before versions were
 * recorded has none and reads as version 1.
 */
export const JOURNAL_SAVED_STATE = {
  turn_journal: {
    input: INPUT,
    outcome: OUTCOME,
    error: ERROR,
    delivery: DELIVERY,
    pause: PAUSE,
  },
  turn_tool_outputs: { output: TOOL_CALL },
};

/**
 * A journalled call as the executor takes it, or null when the row cannot be read (one from a
 * newer version included): that call only runs again.
 */
export function readToolCall(text: string): ToolOutput | "started" | null {
  try {
    const stored = checkSaved(TOOL_CALL, safeJson(text), "a journalled tool call");
    return stored.call === "started" ? "started" : stored.output;
  } catch (error) {
    if (error instanceof JsonColumnError) return null;
    throw error;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
