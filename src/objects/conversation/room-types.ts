// What callers hand an AgentRoom over RPC and what it answers: plain data, so it crosses the
// boundary intact (class identity does not survive RPC).
import type { SerializedError } from "../../runtime/util/errors.ts";
import type { TurnInput, TurnOutcome } from "../../runtime/turn/turn-types.ts";
import type { DeliveryTarget } from "../shared/reply-surface.ts";
import type { HistoryPage } from "../../db/memory/message-history.ts";

export interface SubmitTurnRequest {
  input: TurnInput;
  idempotencyKey?: string;
  /** Hash of what the request asked for; a reused key with another fingerprint is a conflict. */
  fingerprint?: string;
  /** Whether the stream may carry the memories the turn used (the caller may read memories). */
  showMemories?: boolean;
  /**
   * For a key derived from the request rather than chosen by the client (the OpenAI-compatible
   * route): how long after its turn replied the key still replays it. Later, or once the turn
   * failed, the key is let go and the request is a new turn. Unset: the key holds while the
   * journal keeps the turn (IDEMPOTENCY_WINDOW_MS).
   */
  replayWindowMs?: number;
  /** The worker request's trace context (W3C traceparent): the turn's spans continue its trace. */
  traceparent?: string;
}

export interface EnqueueTurnRequest {
  input: TurnInput;
  /** Required: a webhook delivered twice must produce one turn (e.g. `discord:<interaction id>`). */
  idempotencyKey: string;
  /** Where the reply goes (the surface's target: a Discord interaction). */
  delivery: DeliveryTarget;
  /** The worker request's trace context (W3C traceparent): the turn's spans continue its trace. */
  traceparent?: string;
}

/** A click on an approval prompt's button, as the worker hands it to the room. */
export interface ApprovalAnswer {
  approvalId: string;
  approve: boolean;
  /** Who clicked, as a turn user id (`discord:<id>`), and their display name. */
  userId: string;
  userName: string;
  /** The answer's own handle on the surface (a click's fresh interaction, whose @original is the prompt). */
  via: DeliveryTarget;
  /**
   * The surface vouches that this person may answer for whoever asked (a Telegram owner, a Slack
   * workspace admin), checked by the platform before it asks; absent: only the requester counts.
   */
  onBehalf?: boolean;
}

export type ApprovalAnswerResult =
  | { status: "resolved"; tool: string; decision: "approved" | "denied" }
  | { status: "not_yours" }
  | { status: "gone" };

export type TurnResult =
  | { ok: true; replayed: boolean; outcome: TurnOutcome }
  | { ok: false; replayed: boolean; turnId: string; error: SerializedError };

/**
 * A streamed turn: the events as server-sent-event bytes once the turn has started, or, when it
 * failed before starting (no model, spend ceiling, unknown agent, a reused key), the failure.
 */
/**
 * The last event of a room's turn stream: the bare TurnOutcome, which the worker turns into the
 * client's `done` event (src/http/turn-body.ts), so what a client is told is built at the edge.
 */
export const TURN_OUTCOME_EVENT = "outcome";

export type StreamedTurnResult =
  /** `stream`: the turn's server-sent events, ending with TURN_OUTCOME_EVENT when it replied. */
  | { ok: true; replayed: boolean; stream: ReadableStream<Uint8Array> }
  | { ok: false; replayed: boolean; turnId: string; error: SerializedError };

/** A chat platform says a message changed after it arrived (keyed like the message's turn). */
export interface MessageAmendment {
  idempotencyKey: string;
  change: { kind: "edit"; text: string } | { kind: "delete" };
  at: number;
}

/**
 * What became of it: the waiting turn got the new text (`revised`) or was dropped; the stored
 * message was edited or deleted (its turn had run); or no turn has that key (`unknown`).
 */
export type AmendmentResult = "revised" | "dropped" | "edited" | "deleted" | "unknown";

/** A turn of the room that failed, as its journal still holds it (for 24 hours). */
export interface FailedTurn {
  turnId: string;
  /** The person's stored message whose turn it was. */
  messageId: string;
  error: { code: string; message: string };
  /** When it failed, ms since the epoch. */
  failedAt: number;
}

/** A page of the room's conversation, and which turns of its messages failed. */
export interface RoomHistoryPage extends HistoryPage {
  failedTurns: FailedTurn[];
}
