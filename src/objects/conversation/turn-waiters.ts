// Who waits for a room's turns in this instance: RPC callers of submitTurn, and streaming clients
// of streamTurn. Kept in memory only: after an eviction the caller's RPC is gone too, and a retry
// with the same Idempotency-Key finds the result in the journal.
import { AppError } from "../../runtime/util/errors.ts";
import type { TurnInput, TurnObserver, TurnOutcome } from "../../runtime/turn/turn-types.ts";
import type { StreamedTurnResult, SubmitTurnRequest, TurnResult } from "./room-types.ts";
import type { JournalEntry } from "./journal-rows.ts";
import type { TurnJournal } from "./turn-journal.ts";
import { TurnStream } from "./turn-stream.ts";

export class TurnWaiters {
  private readonly waiters = new Map<string, Array<(result: TurnResult) => void>>();
  /** Streaming clients, by turn id. */
  private readonly streams = new Map<string, TurnStream>();

  /** Resolves with the turn's result once settle() is called for it. */
  wait(turnId: string, replayed: boolean): Promise<TurnResult> {
    return new Promise((resolve) => {
      const list = this.waiters.get(turnId) ?? [];
      list.push((result) => resolve({ ...result, replayed }));
      this.waiters.set(turnId, list);
    });
  }

  /**
   * Streams the turn `submit` starts, answering once it has started. A failure before it starts
   * answers as a plain error instead (a proper status, no stream).
   */
  async stream(
    input: TurnInput,
    showMemories: boolean,
    submit: () => Promise<TurnResult>,
  ): Promise<StreamedTurnResult> {
    const { turnId, roomId } = input;
    const stream = new TurnStream(turnId, roomId, showMemories);
    this.streams.set(turnId, stream);
    const result = submit();
    const first = await Promise.race([stream.started.then(() => null), result]);
    if (first && !first.ok) {
      this.streams.delete(turnId);
      stream.close();
      return first;
    }
    return { ok: true, replayed: false, stream: stream.readable };
  }

  observer(turnId: string): TurnObserver | undefined {
    return this.streams.get(turnId)?.observer;
  }

  settle(turnId: string, result: TurnResult): void {
    const list = this.waiters.get(turnId);
    this.waiters.delete(turnId);
    for (const resolve of list ?? []) resolve(result);
    const stream = this.streams.get(turnId);
    this.streams.delete(turnId);
    if (!stream) return;
    if (result.ok) stream.done(result.outcome);
    else stream.fail(result.error);
  }
}

/** A finished turn replayed to a streaming client: only its outcome, as the last event. */
export function replayStream(
  outcome: TurnOutcome,
  roomId: string,
  showMemories: boolean,
): StreamedTurnResult {
  const replay = new TurnStream(outcome.turnId, roomId, showMemories);
  replay.done(outcome);
  return { ok: true, replayed: true, stream: replay.readable };
}

/**
 * A key derived from the request (it carries replayWindowMs) replays only a turn that replied
 * within the window: a failed turn, or one that replied earlier, lets the key go first, so the
 * request runs as a new turn. Synchronous, before the key is looked up.
 */
export function releaseSpentKey(
  journal: Pick<TurnJournal, "releaseKey">,
  { idempotencyKey, replayWindowMs }: SubmitTurnRequest,
  now: number,
): void {
  if (idempotencyKey && replayWindowMs !== undefined)
    journal.releaseKey(idempotencyKey, now - replayWindowMs);
}

/**
 * What a repeated Idempotency-Key gets: the journalled result, a conflict when the key came with
 * another request, or null while the turn is still to come.
 */
export function repeatedKeyResult(
  entry: JournalEntry,
  fingerprint: string | undefined,
): TurnResult | null {
  const { status, outcome, error, turnId } = entry;
  if (entry.fingerprint !== (fingerprint ?? null)) {
    const message = "this Idempotency-Key was already used for a different request";
    return {
      ok: false,
      replayed: true,
      turnId,
      error: new AppError("conflict", 409, message).toJSON(),
    };
  }
  if ((status === "replied" || status === "evaluated") && outcome)
    return { ok: true, replayed: true, outcome };
  if (status === "failed" && error) return { ok: false, replayed: true, turnId, error };
  return null;
}
