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
import type { SerializedError } from "../../runtime/util/errors.ts";
import type { TurnInput, TurnOutcome } from "../../runtime/turn/turn-types.ts";
import type { ToolOutput } from "../../runtime/ports/tools.ts";
import type { DeliveryTarget } from "../shared/reply-surface.ts";
import { writeSaved } from "../../db/json-column.ts";
import {
  type ApprovalPause,
  JOURNAL_SAVED_STATE,
  type JournalEntry,
  migrateJournal,
  readToolCall,
  type StoredToolCall,
  toEntry,
} from "./journal-rows.ts";

/** The journal's JSON columns, written with their saved-state versions (journal-rows.ts). */
const COLUMN = JOURNAL_SAVED_STATE.turn_journal;

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A turn that crashed the object this many times is failed instead of retried forever. */
export const MAX_TURN_ATTEMPTS = 3;

export class TurnJournal {
  private readonly sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  migrate(): void {
    migrateJournal(this.sql);
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
      writeSaved(JOURNAL_SAVED_STATE.turn_tool_outputs.output, stored),
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
      writeSaved(COLUMN.input, entry.input),
      entry.now,
      entry.now,
      entry.delivery ? writeSaved(COLUMN.delivery, entry.delivery) : null,
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
      writeSaved(COLUMN.pause, pause),
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
      writeSaved(COLUMN.pause, pause),
      writeSaved(COLUMN.delivery, delivery),
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
      writeSaved(COLUMN.pause, pause),
      delivery ? writeSaved(COLUMN.delivery, delivery) : null,
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
      writeSaved(COLUMN.outcome, outcome),
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
      writeSaved(COLUMN.error, error),
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
      writeSaved(COLUMN.error, error),
      retryAt,
      now,
      turnId,
    );
  }

  /** The message as the room rewrote it before its turn went on (a voice note's transcript). */
  reviseInput(turnId: string, input: TurnInput, now: number): void {
    this.sql.exec(
      "UPDATE turn_journal SET input = ?, updated_at = ? WHERE turn_id = ?",
      writeSaved(COLUMN.input, input),
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
        writeSaved(COLUMN.error, error),
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
