// AgentRoom: one Durable Object per (agent, room), named `<agentId>:<roomId>`. It owns the room's
// turn journal (its SQLite), the wake-up that resumes work after an eviction, and who waits for a
// turn; its parts (room-parts.ts) run turns (turn-queue.ts), send replies (reply-delivery.ts) and
// do the rest (room-upkeep.ts: deadlines, vectors, pruning) with the schedules and queue items it
// answers here. The caller is answered once the reply is journalled. A turn is journalled with a
// durable wake-up pending (a `resumeTurns` schedule, armed once for every turn that arrives
// before it fires, not once per turn), and every alarm of the room first finishes what the
// journal holds, so a turn cut off by eviction or a crash is resumed and answered exactly once.
import { carryTrace } from "../../telemetry/turn-spans.ts";
import { Agent, type AgentContext } from "agents";
import type { Env } from "../../env.ts";
import type { HistoryQuery } from "../../db/memory/message-history.ts";
import { log } from "../../log.ts";
import type { RoomPluginsFactory } from "../shared/plugin-port.ts";
import type { RuntimeCell } from "../shared/runtime-cell.ts";
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
import { buildRoomParts, type RoomParts, resumeLeftWork } from "./room-parts.ts";
import { releaseSpentKey, repeatedKeyResult, replayStream, TurnWaiters } from "./turn-waiters.ts";
import { failedTurnsOf } from "./failed-turns.ts";
import { roomBindings, roomRuntimeCell } from "./room-runtime.ts";

/** Binds to ROOMS as `AgentRoom` (src/durable-objects.ts), which plugs in platform and plugins. */
export abstract class AgentRoomBase extends Agent<Env> implements AgentRoomRpc {
  /** The journal, the delivery of replies, the upkeep, the turn queue, edits (room-parts.ts). */
  private parts!: RoomParts;
  private readonly runtime: RuntimeCell;
  private readonly waiters = new TurnWaiters();
  /** Each reply's write and evaluation, in turn order; reads of the room's history wait on it. */
  private readonly replies = new AfterReplyChain();

  protected abstract platform(): RoomPlatform;
  /** The deployment's plugins (src/plugins/), handed in so that no object imports them. */
  protected abstract plugins(): RoomPluginsFactory;

  constructor(ctx: AgentContext, env: Env) {
    // The room's own D1 bindings, whose shared trips its runtime watches (room-runtime.ts).
    const { env: own, trips } = roomBindings(env);
    super(ctx, own);
    this.runtime = roomRuntimeCell({
      env: this.env,
      trips,
      agentId: () => this.agentId(),
      plugins: this.plugins(),
      settled: () => this.replies.settled(),
      waitUntil: (work) => this.ctx.waitUntil(work),
    });
  }

  override onStart(): void {
    this.parts = buildRoomParts({
      name: this.name,
      env: this.env,
      sql: this.ctx.storage.sql,
      platform: this.platform(),
      waiters: this.waiters,
      replies: this.replies,
      runtime: () => this.runtime.get(),
      forgetHistory: () => this.forgetHistory(),
      expireApproval: (payload) => this.expireApproval(payload),
      queue: (callback, payload, item) => this.queue(callback, payload, item),
      expireAt: (at, payload) => this.schedule(at, "expireApproval", payload, { idempotent: true }),
      wake: (when) => this.schedule(when, "resumeTurns", {}),
    });
    resumeLeftWork(this.parts);
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
    const result = await this.parts.amend(amendment);
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
    const page = await (await this.runtime.get()).messages.page(query);
    return { ...page, failedTurns: failedTurnsOf(this.parts.journal, page.messages) };
  }

  /** The memory API changed this room's messages: drop the history kept in memory. */
  async forgetHistory(): Promise<void> {
    await this.replies.settled();
    (await this.runtime.get()).history.reset();
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
    this.parts.upkeep.woke();
    await this.parts.turns.finishJournal();
  }

  /** Every alarm (a wake-up, an approval deadline, a retry) first finishes the journal. */
  override async onAlarm(): Promise<void> {
    await this.parts.turns.finishJournal();
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
    this.parts.upkeep.armWake();
    void this.parts.turns.drain();
  }

  private agentId(): string {
    // Room names are `<agentId>:<roomId>`; agent ids contain no ':'.
    return this.name.split(":")[0]!;
  }
}
