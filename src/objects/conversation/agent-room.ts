// AgentRoom: one Durable Object per (agent, room), named `<agentId>:<roomId>`. It owns the room's
// turn journal (its SQLite), the wake-up that resumes work after an eviction, and who waits for a
// turn; its parts (room-parts.ts) run turns (turn-queue.ts), send replies (reply-delivery.ts) and
// do the rest (room-upkeep.ts: deadlines, vectors, pruning) with the schedules and queue items it
// answers here. The caller is answered once the reply is journalled. A turn is journalled with a durable wake-up pending (a `resumeTurns`
// schedule, armed once for every turn that arrives before it fires, not once per turn), and every
// alarm of the room first finishes what the journal holds, so a turn cut off by eviction or a
// crash is resumed and answered exactly once.
import { carryTrace } from "../../telemetry/turn-spans.ts";
import { Agent, type AgentContext } from "agents";
import type { Env } from "../../env.ts";
import type { HistoryQuery } from "../../memory/message-history.ts";
import { errorField, log } from "../../log.ts";
import { createRoomRuntime, movedAway, type RoomRuntime } from "../shared/agent-wiring.ts";
import type { RoomPlatform } from "../shared/reply-surface.ts";
import type {
  AmendmentResult,
  ApprovalAnswer,
  ApprovalAnswerResult,
  EnqueueTurnRequest,
  MessageAmendment,
  RoomHistoryPage,
  StreamedTurnResult,
  SubmitTurnRequest,
  TurnResult,
} from "./room-types.ts";
import type { AgentRoomRpc } from "../../rpc.ts";
import { AfterReplyChain } from "./after-reply-chain.ts";
import { buildRoomParts, type RoomParts } from "./room-parts.ts";
import { releaseSpentKey, repeatedKeyResult, replayStream, TurnWaiters } from "./turn-waiters.ts";
import { amendMessage } from "./journal-edits.ts";
import { failedTurnsOf } from "./failed-turns.ts";
import { databaseBinding, memoryDatabases } from "../../db/shards.ts";
import { type D1Trip, sharedTrips } from "../../db/shared-trips.ts";

/**
 * How long after a turn arrives its durable wake-up fires, if the room is still in memory it finds
 * nothing to do; after an eviction it resumes the turn. Turns arriving before it fires share it.
 */
export const WAKE_AFTER_S = 5;

/** Binds to ROOMS as `AgentRoom` (src/durable-objects.ts), which plugs in the platform. */
export abstract class AgentRoomBase extends Agent<Env> implements AgentRoomRpc {
  /** The journal, the delivery of replies, the upkeep and the turn queue (room-parts.ts). */
  private parts!: RoomParts;
  private runtime: Promise<RoomRuntime> | null = null;
  private readonly waiters = new TurnWaiters();
  /** Each reply's write and evaluation, in turn order; reads of the room's history wait on it. */
  private readonly replies = new AfterReplyChain();
  /** A `resumeTurns` schedule is stored and has not started yet: new turns need no other. */
  private wakeArmed = false;
  private readonly trips: { watch: ((trip: D1Trip) => void) | null };

  protected abstract platform(): RoomPlatform;

  constructor(ctx: AgentContext, env: Env) {
    // D1 calls this room starts together (a turn's reads before the model, its writes after the
    // reply) share one round trip (src/db/shared-trips.ts). Its own binding: the rooms of an
    // isolate must not send each other's calls, and what is built per env (stores.ts) is cheap
    // where it is per room (the agents' vector caches and characters are per isolate).
    // Each trip is watched by the room's tracer, once its runtime has one (src/telemetry/).
    const trips: { watch: ((trip: D1Trip) => void) | null } = { watch: null };
    const watch = (trip: D1Trip) => trips.watch?.(trip);
    const own: Env = { ...env, DB: sharedTrips(env.DB, watch) };
    for (const name of memoryDatabases(env))
      own[name] = sharedTrips(databaseBinding(env, name), watch);
    super(ctx, own);
    this.trips = trips;
  }

  override onStart(): void {
    this.parts = buildRoomParts({
      name: this.name,
      env: this.env,
      sql: this.ctx.storage.sql,
      platform: this.platform(),
      waiters: this.waiters,
      replies: this.replies,
      runtime: () => this.getRuntime(),
      forgetHistory: () => this.forgetHistory(),
      expireApproval: (payload) => this.expireApproval(payload),
      queue: (callback, payload, item) => this.queue(callback, payload, item),
      expireAt: (at, payload) => this.schedule(at, "expireApproval", payload, { idempotent: true }),
      wakeAt: (at) => this.schedule(at, "resumeTurns", {}),
    });
    const { journal, turns, upkeep } = this.parts;
    // Work left by an earlier instance (eviction, crash, deploy) resumes on first contact.
    turns.finishReplied();
    if (journal.nextToRun(Date.now())) void turns.drain();
    if (journal.undelivered().length > 0) upkeep.deliver();
    for (const entry of journal.awaitingApproval()) upkeep.paused(entry);
  }

  /** Runs one turn (or finds the one its Idempotency-Key started) and waits for its reply. */
  async submitTurn(request: SubmitTurnRequest): Promise<TurnResult> {
    const { input, idempotencyKey, fingerprint } = request;
    carryTrace(input.turnId, request.traceparent);
    releaseSpentKey(this.parts.journal, request, Date.now());
    const existing = idempotencyKey ? this.parts.journal.byKey(idempotencyKey) : null;
    if (existing) {
      const known = repeatedKeyResult(existing, fingerprint);
      if (known) return known;
      const result = this.waiters.wait(existing.turnId, true);
      void this.parts.turns.drain();
      return result;
    }
    // Journal first, synchronously: arrival order is journal order, and nothing can interleave.
    this.parts.journal.insert({ input, idempotencyKey, fingerprint, now: Date.now() });
    const result = this.waiters.wait(input.turnId, false);
    this.resume();
    return result;
  }

  /**
   * Like submitTurn, but answers once the turn has started, with a stream of what it does: the
   * memories it uses, text as the model writes it, tool calls, then the outcome. The turn does
   * not depend on the stream: if the client leaves, it still completes and is stored. A repeat
   * of an Idempotency-Key gets only the outcome, once there is one.
   */
  async streamTurn(request: SubmitTurnRequest): Promise<StreamedTurnResult> {
    const { input, idempotencyKey, showMemories } = request;
    releaseSpentKey(this.parts.journal, request, Date.now());
    if (!idempotencyKey || !this.parts.journal.byKey(idempotencyKey)) {
      return this.waiters.stream(input, showMemories === true, () => this.submitTurn(request));
    }
    const result = await this.submitTurn(request);
    return result.ok ? replayStream(result.outcome, input.roomId, showMemories === true) : result;
  }

  /**
   * Journals a turn whose reply goes to a webhook surface (Discord) and returns at once: the
   * caller acknowledges the webhook, and the reply is delivered when the turn is done. A second
   * delivery of the same webhook (same idempotency key) is recognised and changes nothing.
   */
  async enqueueTurn(request: EnqueueTurnRequest): Promise<{ turnId: string; duplicate: boolean }> {
    const { input, idempotencyKey, delivery } = request;
    carryTrace(input.turnId, request.traceparent);
    const existing = this.parts.journal.byKey(idempotencyKey);
    if (existing) return { turnId: existing.turnId, duplicate: true };
    this.parts.journal.insert({ input, idempotencyKey, delivery, now: Date.now() });
    this.resume();
    return { turnId: input.turnId, duplicate: false };
  }

  /** The message behind a turn was edited or deleted on its platform (Discord's Gateway). */
  async amendMessage(amendment: MessageAmendment): Promise<AmendmentResult> {
    const result = await amendMessage(
      {
        journal: this.parts.journal,
        db: (await this.getRuntime()).memoryDb,
        forgetHistory: () => this.forgetHistory(),
      },
      amendment,
    );
    log.info("message_amended", { room: this.name, result, change: amendment.change.kind });
    return result;
  }

  /** A person answered an approval prompt: the turn resumes at once with the decision. */
  async resolveApproval(answer: ApprovalAnswer): Promise<ApprovalAnswerResult> {
    const result = this.parts.turns.answer(answer);
    if (result.status === "resolved") this.resume();
    return result;
  }

  /**
   * A page of the room's conversation from D1, read after the room's pending reply writes land,
   * so a client that just got a reply always finds it in the history; with the turns of its
   * messages that failed (no reply was stored for them), from the journal while it keeps them.
   */
  async readHistory(query: HistoryQuery): Promise<RoomHistoryPage> {
    await this.replies.settled();
    const page = await (await this.getRuntime()).messages.page(query);
    return { ...page, failedTurns: failedTurnsOf(this.parts.journal, page.messages) };
  }

  /** The memory API changed this room's messages: drop the history kept in memory. */
  async forgetHistory(): Promise<void> {
    await this.replies.settled();
    (await this.getRuntime()).history.reset();
  }

  /** Schedule callback: nobody answered in time, so the turn goes on without the tool. */
  async expireApproval(payload: { turnId: string; approvalId: string }): Promise<void> {
    const pause = this.parts.turns.expire(payload);
    if (!pause) return;
    this.resume();
    // The buttons would still look answerable: say what happened (best effort, the reply follows).
    if (pause.prompt)
      this.parts.delivery.closeExpiredPrompt(payload.turnId, pause.prompt, pause.tool);
  }

  /**
   * Schedule callback (and queue callback of items an older version left): the durable wake-up.
   * Turns that arrive from now on arm the next one.
   */
  async resumeTurns(): Promise<void> {
    this.wakeArmed = false;
    await this.finishJournal();
  }

  /** Every alarm of the room (a wake-up, an approval deadline, a retry) finishes the journal first. */
  override async onAlarm(): Promise<void> {
    await this.finishJournal();
  }

  /** Queue callback: retries replies that could not reach their surface yet (throws to retry). */
  async deliverReplies(): Promise<void> {
    await this.parts.delivery.pending();
  }

  /**
   * Queue callback: gives this room's new memories (messages, facts, summaries) their vectors,
   * after the replies. A failure throws, so the queue retries; until then text search finds them.
   */
  async embedPending(payload: { agentId: string; roomId: string }): Promise<void> {
    await this.parts.upkeep.embedPending(payload);
  }

  /** Replied turns stored and evaluated, waiting ones run; resolves when all of it is done. */
  private async finishJournal(): Promise<void> {
    this.parts.turns.finishReplied();
    await this.parts.turns.drain();
    await this.replies.settled();
  }

  /**
   * Rooms named `<agentId>:~instagram` published Instagram posts before PostPublisher: a step
   * still scheduled on one is handed over. Kept while `legacy_publish_forwarded` is logged.
   */
  async publishPost(postId: string): Promise<void> {
    log.info("legacy_publish_forwarded", { room: this.name, postId });
    await this.env.PUBLISHER.getByName(this.agentId()).publishPost(postId);
  }

  /** Schedule callback of those rooms (a later step, or the watchdog): forwarded the same way. */
  async publishStep(payload: { postId: string }): Promise<void> {
    await this.publishPost(payload.postId);
  }

  /** Makes sure a durable wake-up is pending, and runs what the journal holds. */
  private resume(): void {
    if (!this.wakeArmed) {
      // Stored in the same event as the journal write, so both commit together.
      this.wakeArmed = true;
      this.schedule(WAKE_AFTER_S, "resumeTurns", {}).catch((error: unknown) => {
        this.wakeArmed = false;
        log.error("resume_wake_failed", { room: this.name, error: errorField(error) });
      });
    }
    void this.parts.turns.drain();
  }

  private agentId(): string {
    // Room names are `<agentId>:<roomId>`; agent ids contain no ':'.
    return this.name.split(":")[0]!;
  }

  /** The room's runtime, built again when its agent's memories moved to another database. */
  private async getRuntime(): Promise<RoomRuntime> {
    const runtime = await this.builtRuntime();
    if (!(await movedAway(this.env, this.agentId(), runtime))) return runtime;
    this.runtime = null;
    return this.builtRuntime();
  }

  private builtRuntime(): Promise<RoomRuntime> {
    const settled = () => this.replies.settled();
    const waitUntil = (work: Promise<unknown>) => this.ctx.waitUntil(work);
    this.runtime ??= createRoomRuntime(this.env, this.agentId(), { settled, waitUntil }).then(
      (runtime) => {
        this.trips.watch = runtime.tracer?.d1Trip ?? null;
        return runtime;
      },
      (error) => {
        this.runtime = null;
        throw error;
      },
    );
    return this.runtime;
  }
}
