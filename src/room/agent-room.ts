// AgentRoom: one Durable Object per (agent, room), named `<agentId>:<roomId>`. It owns the room's
// turn journal and runs turns one at a time in arrival order; the turn logic itself lives in
// src/runtime/. A durable queue item (`resumeTurns`) stays pending while turns are in flight, so a
// turn cut off by eviction or a crash is picked up again by the alarm and answered exactly once.
import { Agent } from "agents";
import { drizzle } from "drizzle-orm/d1";
import type { Env } from "../config.ts";
import { createAgentStore } from "../memory/agent-store.ts";
import { createSecretBox } from "../memory/secret-box.ts";
import type { Character } from "../runtime/character.ts";
import { AppError, NotFoundError, type SerializedError } from "../runtime/errors.ts";
import type { TurnInput, TurnOutcome } from "../runtime/turn-types.ts";
import { createRoomRuntime, type RoomRuntime } from "./room-runtime.ts";
import { MAX_TURN_ATTEMPTS, TurnJournal, type JournalEntry } from "./turn-journal.ts";

export interface SubmitTurnRequest {
  input: TurnInput;
  idempotencyKey?: string;
  /** Hash of what the request asked for; a reused key with another fingerprint is a conflict. */
  fingerprint?: string;
  /** The agent's `updatedAt` as the worker saw it, so the room knows whether its copy is current. */
  agentVersion: number;
}

export type TurnResult =
  | { ok: true; replayed: boolean; outcome: TurnOutcome }
  | { ok: false; replayed: boolean; turnId: string; error: SerializedError };

const RESUME_ITEM_ID = "resume-turns";

export class AgentRoom extends Agent<Env> {
  private journal!: TurnJournal;
  private runtime: Promise<RoomRuntime> | null = null;
  private cachedCharacter: { version: number; character: Character } | null = null;
  private draining: Promise<void> | null = null;
  private readonly waiters = new Map<string, Array<(result: TurnResult) => void>>();

  override onStart(): void {
    this.journal = new TurnJournal(this.ctx.storage.sql);
    this.journal.migrate();
    // Work left by an earlier instance (eviction, crash, deploy) resumes on first contact.
    if (this.journal.hasPending()) void this.drain();
  }

  /** Runs one turn (or finds the one its Idempotency-Key already started) and waits for its reply. */
  async submitTurn(request: SubmitTurnRequest): Promise<TurnResult> {
    if (request.idempotencyKey) {
      const existing = this.journal.byKey(request.idempotencyKey);
      if (existing) {
        if (existing.fingerprint !== (request.fingerprint ?? null)) {
          const error = new AppError("conflict", 409, "this Idempotency-Key was already used for a different request");
          return { ok: false, replayed: true, turnId: existing.turnId, error: error.toJSON() };
        }
        return this.resultOf(existing, true);
      }
    }
    // Journal first, synchronously: arrival order is journal order, and nothing can interleave.
    this.journal.insert({
      input: request.input,
      idempotencyKey: request.idempotencyKey,
      fingerprint: request.fingerprint,
      agentVersion: request.agentVersion,
      now: Date.now(),
    });
    const result = this.waitFor(request.input.turnId, false);
    this.armResume();
    void this.drain();
    return result;
  }

  /** Queue callback: holds a durable wake-up while turns are pending, and resumes them. */
  async resumeTurns(): Promise<void> {
    await this.drain();
  }

  private armResume(): void {
    // Pushed in the same synchronous block as the journal insert, so both commit together.
    this.queue("resumeTurns", {}, { id: RESUME_ITEM_ID }).catch((error: unknown) => {
      console.error(JSON.stringify({ level: "error", msg: "resume_item_failed", room: this.name, error: String(error) }));
    });
  }

  private drain(): Promise<void> {
    if (!this.draining) {
      let completed = false;
      this.draining = (async () => {
        for (let entry = this.journal.nextPending(); entry; entry = this.journal.nextPending()) {
          await this.process(entry);
        }
        completed = true;
      })().finally(() => {
        this.draining = null;
        // A turn journalled while the loop was finishing would otherwise wait for the alarm.
        if (completed && this.journal.hasPending()) void this.drain();
      });
    }
    return this.draining;
  }

  private async process(entry: JournalEntry): Promise<void> {
    const { turnId } = entry.input;
    let outcome = entry.outcome;
    let character: Character;
    let runtime: RoomRuntime;
    try {
      if (entry.status !== "replied" && entry.attempts >= MAX_TURN_ATTEMPTS) {
        throw new AppError("internal", 500, `the turn was interrupted ${entry.attempts} times and was given up`);
      }
      runtime = await this.getRuntime();
      character = await this.characterFor(entry.input.agentId, entry.agentVersion);
      if (entry.status === "received" || entry.status === "running") {
        this.journal.markRunning(turnId, Date.now());
        await runtime.runner.receive(entry.input);
        outcome = await runtime.runner.respond(character, entry.input);
        this.journal.markReplied(turnId, outcome, Date.now());
        this.settle(turnId, { ok: true, replayed: false, outcome });
      }
    } catch (error) {
      const serialized = serializeError(error);
      this.journal.markFailed(turnId, serialized, Date.now());
      this.settle(turnId, { ok: false, replayed: false, turnId, error: serialized });
      return;
    }
    if (!outcome) return;
    // The reply is out; evaluation failures are logged by the runtime and never undo it.
    try {
      await runtime.runner.evaluate(character, entry.input, outcome);
    } finally {
      this.journal.markEvaluated(turnId, Date.now());
    }
  }

  private resultOf(entry: JournalEntry, replayed: boolean): Promise<TurnResult> {
    if ((entry.status === "replied" || entry.status === "evaluated") && entry.outcome) {
      return Promise.resolve({ ok: true, replayed, outcome: entry.outcome });
    }
    if (entry.status === "failed" && entry.error) {
      return Promise.resolve({ ok: false, replayed, turnId: entry.turnId, error: entry.error });
    }
    const result = this.waitFor(entry.turnId, replayed);
    void this.drain();
    return result;
  }

  private waitFor(turnId: string, replayed: boolean): Promise<TurnResult> {
    return new Promise((resolve) => {
      const list = this.waiters.get(turnId) ?? [];
      list.push((result) => resolve({ ...result, replayed }));
      this.waiters.set(turnId, list);
    });
  }

  private settle(turnId: string, result: TurnResult): void {
    const list = this.waiters.get(turnId);
    this.waiters.delete(turnId);
    for (const resolve of list ?? []) resolve(result);
  }

  private getRuntime(): Promise<RoomRuntime> {
    this.runtime ??= createRoomRuntime(this.env).catch((error: unknown) => {
      this.runtime = null;
      throw error;
    });
    return this.runtime;
  }

  private async characterFor(agentId: string, version: number | null): Promise<Character> {
    if (version !== null && this.cachedCharacter?.version === version) return this.cachedCharacter.character;
    const config = (await this.getRuntime()).config;
    const store = createAgentStore(drizzle(this.env.DB), config.secretsKey ? createSecretBox(config.secretsKey) : null);
    const record = await store.get(agentId);
    if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
    this.cachedCharacter = { version: record.updatedAt, character: record.character };
    return record.character;
  }
}

function serializeError(error: unknown): SerializedError {
  if (error instanceof AppError) return error.toJSON();
  console.error(JSON.stringify({ level: "error", msg: "turn_failed", error: error instanceof Error ? error.stack : String(error) }));
  return { code: "internal", status: 500, message: "the turn failed unexpectedly; see the worker logs" };
}
