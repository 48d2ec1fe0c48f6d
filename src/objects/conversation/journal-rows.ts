// How the room's turn journal is kept in Durable Object SQLite: its tables (created, and given
// the columns later versions added, on the room's start), a row read back as a JournalEntry with
// its JSON columns checked (src/db/json-column.ts), and the saved-state version of each JSON column
// (docs/architecture.md, "Saved state"). turn-journal.ts reads and writes the rows.
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

/** Creates the journal's tables, and adds the columns later versions brought to older rooms. */
export function migrateJournal(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS turn_journal (
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
  sql.exec("CREATE INDEX IF NOT EXISTS turn_journal_status ON turn_journal (status, seq)");
  // Added with the Discord client: rooms created before it get the columns on their next start.
  const columns = new Set(
    sql
      .exec("SELECT name FROM pragma_table_info('turn_journal')")
      .toArray()
      .map((row) => String(row.name)),
  );
  if (!columns.has("delivery")) sql.exec("ALTER TABLE turn_journal ADD COLUMN delivery TEXT");
  if (!columns.has("delivery_status"))
    sql.exec("ALTER TABLE turn_journal ADD COLUMN delivery_status TEXT");
  if (!columns.has("delivered_parts"))
    sql.exec("ALTER TABLE turn_journal ADD COLUMN delivered_parts INTEGER NOT NULL DEFAULT 0");
  // Added with tool approval.
  if (!columns.has("pause")) sql.exec("ALTER TABLE turn_journal ADD COLUMN pause TEXT");
  // Added with retries after a model failure.
  if (!columns.has("retry_at")) sql.exec("ALTER TABLE turn_journal ADD COLUMN retry_at INTEGER");
  if (!columns.has("retries"))
    sql.exec("ALTER TABLE turn_journal ADD COLUMN retries INTEGER NOT NULL DEFAULT 0");
  sql.exec(
    "CREATE INDEX IF NOT EXISTS turn_journal_delivery ON turn_journal (delivery_status, seq)",
  );
  sql.exec(`CREATE TABLE IF NOT EXISTS turn_tool_outputs (
    turn_id TEXT NOT NULL,
    call_key TEXT NOT NULL,
    output TEXT NOT NULL,
    PRIMARY KEY (turn_id, call_key)
  )`);
}

export function toEntry(raw: unknown): JournalEntry {
  const row = Row.parse(raw);
  // Written by turn-journal.ts only, and checked again on the way back (src/db/json-column.ts).
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
export type StoredToolCall = z.infer<typeof StoredToolCallShape>;
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
