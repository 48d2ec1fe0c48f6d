// AgentRoom: one Durable Object per (agent, room), named `<agentId>:<roomId>`. It owns the room's
// turn journal (its SQLite), the wake-up that resumes work after an eviction, and who waits for a
// turn; turn-queue.ts runs turns, reply-delivery.ts sends replies. The caller is answered once the
// reply is journalled. A turn is journalled with a durable wake-up pending (a `resumeTurns`
// schedule, armed once for every turn that arrives before it fires, not once per turn), and every
// alarm of the room first finishes what the journal holds, so a turn cut off by eviction or a
// crash is resumed and answered exactly once.
import { Agent, type AgentContext } from "agents";
import type { Env } from "../../env.ts";
import type { HistoryPage, HistoryQuery } from "../../memory/message-history.ts";
import { errorField, log } from "../../log.ts";
import { createRoomRuntime, type RoomRuntime } from "../shared/agent-wiring.ts";
import { TurnJournal, type JournalEntry } from "./turn-journal.ts";
import { RoomDelivery } from "./reply-delivery.ts";
import type { RoomPlatform } from "../shared/reply-surface.ts";
import type {
  AmendmentResult,
  ApprovalAnswer,
  ApprovalAnswerResult,
  EnqueueTurnRequest,
  MessageAmendment,
  StreamedTurnResult,
  SubmitTurnRequest,
  TurnResult,
} from "./room-types.ts";
import type { AgentRoomRpc } from "../../rpc.ts";
import { TurnDriver, type TurnDriverHost } from "./turn-queue.ts";
import { turnServicesFor } from "./turn-services.ts";
import { repeatedKeyResult, replayStream, TurnWaiters } from "./turn-waiters.ts";
import { amendMessage } from "./journal-edits.ts";
import { sharedTrips } from "../../db/shared-trips.ts";
import { stores } from "../../db/stores/index.ts";
import { pruneUnansweredMessages } from "../../memory/message-amendments.ts";

/**
 * How long after a turn arrives its durable wake-up fires, if the room is still in memory it finds
 * nothing to do; after an eviction it resumes the turn. Turns arriving before it fires share it.
 */
export const WAKE_AFTER_S = 5;
const EMBED_ITEM_ID = "embed-pending";
const DELIVER_ITEM_ID = "deliver-replies";
/** Unanswered messages a Discord room keeps for context (channel chatter read on the Gateway). */
export const MAX_UNANSWERED_PER_ROOM = 200;
/** How many finished turns between two prunes of a Discord room's unanswered messages. */
const PRUNE_EVERY_TURNS = 50;
/** Delivery retries (Discord 429/5xx beyond what one attempt waits): about 10 minutes in all. */
const DELIVERY_RETRY = { maxAttempts: 8, baseDelayMs: 5_000, maxDelayMs: 120_000 };
type QueueCallback = "deliverReplies" | "embedPending";
type QueueItem = { id: string; retry?: typeof DELIVERY_RETRY };

/** Binds to ROOMS as `AgentRoom` (src/durable-objects.ts), which plugs in the platform. */
export abstract class AgentRoomBase extends Agent<Env> implements AgentRoomRpc {
  private journal!: TurnJournal;
  private driver!: TurnDriver;
  /** Replies on their way to the surface that asked. */
  private delivery!: RoomDelivery;
  private runtime: Promise<RoomRuntime> | null = null;
  private readonly waiters = new TurnWaiters();
  private evaluatedSincePrune = 0;
  /** A `resumeTurns` schedule is stored and has not started yet: new turns need no other. */
  private wakeArmed = false;
  /** The room's new memories are being given vectors in this instance (null: idle). */
  private embedding: Promise<void> | null = null;
  /** More memories arrived while `embedding` ran: one more pass follows it. */
  private embedAgain = false;

  protected abstract platform(): RoomPlatform;

  constructor(ctx: AgentContext, env: Env) {
    // D1 calls this room starts together (a turn's reads before the model, its writes after the
    // reply) share one round trip (src/db/shared-trips.ts). Its own binding: the rooms of an
    // isolate must not send each other's calls, and what is built per env (stores.ts) is cheap
    // where it is per room (the agents' vector caches and characters are per isolate).
    super(ctx, { ...env, DB: sharedTrips(env.DB) });
  }

  override onStart(): void {
    const { surface, attachments } = this.platform();
    this.journal = new TurnJournal(this.ctx.storage.sql);
    const journal = this.journal;
    journal.migrate();
    journal.prune(Date.now());
    this.delivery = new RoomDelivery({
      surface,
      journal,
      room: this.name,
      agentName: (agentId) => this.agentName(agentId),
      expireApproval: (payload) => this.expireApproval(payload),
    });
    const services = async () => turnServicesFor(await this.getRuntime());
    this.driver = new TurnDriver({ journal, services, attachments, surface, host: this.host() });
    // Work left by an earlier instance (eviction, crash, deploy) resumes on first contact.
    this.driver.finishReplied();
    if (journal.nextToRun()) void this.driver.drain();
    if (journal.undelivered().length > 0) this.deliver();
    for (const entry of journal.awaitingApproval()) this.armApprovalExpiry(entry);
  }

  /** Runs one turn (or finds the one its Idempotency-Key started) and waits for its reply. */
  async submitTurn(request: SubmitTurnRequest): Promise<TurnResult> {
    const { input, idempotencyKey, fingerprint } = request;
    const existing = idempotencyKey ? this.journal.byKey(idempotencyKey) : null;
    if (existing) {
      const known = repeatedKeyResult(existing, fingerprint);
      if (known) return known;
      const result = this.waiters.wait(existing.turnId, true);
      void this.driver.drain();
      return result;
    }
    // Journal first, synchronously: arrival order is journal order, and nothing can interleave.
    this.journal.insert({ input, idempotencyKey, fingerprint, now: Date.now() });
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
    if (!idempotencyKey || !this.journal.byKey(idempotencyKey)) {
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
    const existing = this.journal.byKey(idempotencyKey);
    if (existing) return { turnId: existing.turnId, duplicate: true };
    this.journal.insert({ input, idempotencyKey, delivery, now: Date.now() });
    this.resume();
    return { turnId: input.turnId, duplicate: false };
  }

  /** The message behind a turn was edited or deleted on its platform (Discord's Gateway). */
  async amendMessage(amendment: MessageAmendment): Promise<AmendmentResult> {
    const result = await amendMessage(
      {
        journal: this.journal,
        db: stores(this.env).db,
        forgetHistory: () => this.forgetHistory(),
      },
      amendment,
    );
    log.info("message_amended", { room: this.name, result, change: amendment.change.kind });
    return result;
  }

  /** A person answered an approval prompt: the turn resumes at once with the decision. */
  async resolveApproval(answer: ApprovalAnswer): Promise<ApprovalAnswerResult> {
    const result = this.driver.answer(answer);
    if (result.status === "resolved") this.resume();
    return result;
  }

  /**
   * A page of the room's conversation from D1, read after the room's pending reply writes land,
   * so a client that just got a reply always finds it in the history.
   */
  async readHistory(query: HistoryQuery): Promise<HistoryPage> {
    await this.driver.settled();
    return (await this.getRuntime()).messages.page(query);
  }

  /** The memory API changed this room's messages: drop the history kept in memory. */
  async forgetHistory(): Promise<void> {
    await this.driver.settled();
    (await this.getRuntime()).history.reset();
  }

  /** Schedule callback: nobody answered in time, so the turn goes on without the tool. */
  async expireApproval(payload: { turnId: string; approvalId: string }): Promise<void> {
    const pause = this.driver.expire(payload);
    if (!pause) return;
    this.resume();
    // The buttons would still look answerable: say what happened (best effort, the reply follows).
    if (pause.prompt) this.delivery.closeExpiredPrompt(payload.turnId, pause.prompt, pause.tool);
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
    await this.delivery.pending();
  }

  /**
   * Queue callback: gives this room's new memories (messages, facts, summaries) their vectors,
   * after the replies. A failure throws, so the queue retries; until then text search finds them.
   */
  async embedPending(payload: { agentId: string; roomId: string }): Promise<void> {
    const runtime = await this.getRuntime();
    const result = await runtime.embeddings.embedPending(payload);
    if (result.pending) this.queueEmbedding(payload.agentId, payload.roomId);
  }

  /** Replied turns stored and evaluated, waiting ones run; resolves when all of it is done. */
  private async finishJournal(): Promise<void> {
    this.driver.finishReplied();
    await this.driver.drain();
    await this.driver.settled();
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

  private host(): TurnDriverHost {
    const { waiters } = this;
    return {
      room: this.name,
      observer: (turnId) => waiters.observer(turnId),
      settle: (turnId, result) => waiters.settle(turnId, result),
      deliver: () => this.deliver(),
      paused: (entry) => this.armApprovalExpiry(entry),
      evaluated: (agentId, roomId) => {
        this.embedSoon(agentId, roomId);
        this.pruneUnanswered(agentId, roomId);
      },
    };
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
    void this.driver.drain();
  }

  private deliver(): void {
    const item = { id: DELIVER_ITEM_ID, retry: DELIVERY_RETRY };
    const retryLater = () => this.push("deliverReplies", {}, item, "deliver_item_failed");
    void this.delivery.pending().catch(retryLater);
  }

  /** A Discord room keeps its newest unanswered messages only (checked every few turns). */
  private pruneUnanswered(agentId: string, roomId: string): void {
    if (!roomId.startsWith("discord:")) return;
    this.evaluatedSincePrune += 1;
    if (this.evaluatedSincePrune < PRUNE_EVERY_TURNS) return;
    this.evaluatedSincePrune = 0;
    const room = { agentId, roomId, keep: MAX_UNANSWERED_PER_ROOM };
    pruneUnansweredMessages(stores(this.env).db, room)
      .then((pruned) => (pruned > 0 ? this.forgetHistory() : undefined))
      .catch((error: unknown) => {
        log.warn("prune_unanswered_failed", { room: this.name, error: errorField(error) });
      });
  }

  /**
   * Gives the room's new memories their vectors here, after the turn that wrote them and never
   * holding up the next one; one pass at a time, and one more if memories arrived meanwhile. A
   * failed pass leaves a durable queue item to retry it. Should the room be evicted first, the
   * next pass or the cron's maintenance embeds what was left.
   */
  private embedSoon(agentId: string, roomId: string): void {
    if (this.embedding) {
      this.embedAgain = true;
      return;
    }
    this.embedding = (async () => {
      do {
        this.embedAgain = false;
        await this.embedPending({ agentId, roomId });
      } while (this.embedAgain);
    })()
      .catch((error: unknown) => {
        log.warn("embedding_deferred", { room: this.name, error: errorField(error) });
        this.queueEmbedding(agentId, roomId);
      })
      .finally(() => {
        this.embedding = null;
      });
  }

  private queueEmbedding(agentId: string, roomId: string): void {
    // One item per room however many turns asked: pushing the same id replaces it.
    this.push("embedPending", { agentId, roomId }, { id: EMBED_ITEM_ID }, "embed_item_failed");
  }

  /** A durable queue item (replaced when its id is pushed again); a failed push is logged. */
  private push(method: QueueCallback, payload: object, item: QueueItem, failed: string): void {
    this.queue(method, payload, item).catch((error: unknown) => {
      log.error(failed, { room: this.name, error: errorField(error) });
    });
  }

  private armApprovalExpiry(entry: JournalEntry): void {
    const pause = entry.pause;
    if (!pause || pause.decision) return;
    const payload = { turnId: entry.turnId, approvalId: pause.approvalId };
    const at = new Date(Math.max(pause.expiresAt, Date.now() + 1_000));
    // Idempotent: re-arming on every start never doubles it, and a lost one is re-created.
    this.schedule(at, "expireApproval", payload, { idempotent: true }).catch((error: unknown) => {
      log.error("approval_expiry_failed", { room: this.name, error: errorField(error) });
    });
  }

  private async agentName(agentId: string): Promise<string> {
    return (await (await this.getRuntime()).agents.get(agentId))?.character.name ?? agentId;
  }

  private agentId(): string {
    // Room names are `<agentId>:<roomId>`; agent ids contain no ':'.
    return this.name.split(":")[0]!;
  }

  private getRuntime(): Promise<RoomRuntime> {
    const settled = () => this.driver.settled();
    this.runtime ??= createRoomRuntime(this.env, this.agentId(), { settled }).catch((error) => {
      this.runtime = null;
      throw error;
    });
    return this.runtime;
  }
}
