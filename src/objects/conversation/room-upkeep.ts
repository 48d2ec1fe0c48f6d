// What a room does around its turns besides running them, with the object's durable scheduling
// handed in: send what is ready for the surface (retried by a queue item while it fails), keep a
// durable wake-up pending for the turns that arrive, arm an approval's deadline, give new
// memories their vectors after each evaluated turn, and keep a Discord room's unanswered channel
// chatter bounded. The turn queue (turn-queue.ts) and the room call these; agent-room.ts answers
// the schedules and queue items they leave.
import { errorField, log } from "../../log.ts";
import type { Db } from "../../db/db.ts";
import { pruneUnansweredMessages } from "../../db/memory/message-amendments.ts";
import type { EmbeddingPipeline } from "../../db/memory/embedding-pipeline.ts";
import type { RoomDelivery } from "./reply-delivery.ts";
import type { JournalEntry } from "./journal-rows.ts";

/** Unanswered messages a Discord room keeps for context (channel chatter read on the Gateway). */
export const MAX_UNANSWERED_PER_ROOM = 200;
/** How many finished turns between two prunes of a Discord room's unanswered messages. */
const PRUNE_EVERY_TURNS = 50;
/** Delivery retries (Discord 429/5xx beyond what one attempt waits): about 10 minutes in all. */
export const DELIVERY_RETRY = { maxAttempts: 8, baseDelayMs: 5_000, maxDelayMs: 120_000 };
const EMBED_ITEM_ID = "embed-pending";
/**
 * How long a room may be quiet before the memories left waiting for a vector (a reply, new facts)
 * are embedded in a call of their own. A turn sooner takes them along with its query's embedding;
 * a room evicted sooner leaves them to the hourly maintenance. Meanwhile text search finds them.
 */
export const EMBED_FLUSH_MS = 60_000;
const DELIVER_ITEM_ID = "deliver-replies";
/**
 * How long after a turn arrives its durable wake-up fires, if the room is still in memory it finds
 * nothing to do; after an eviction it resumes the turn. Turns arriving before it fires share it.
 */
export const WAKE_AFTER_S = 5;

/** The room object's queue callbacks that upkeep leaves items for. */
export type UpkeepCallback = "deliverReplies" | "embedPending";
type QueueItem = { id: string; retry?: typeof DELIVERY_RETRY };

export interface RoomUpkeepOptions {
  /** The room's name, for logs. */
  room: string;
  delivery: RoomDelivery;
  db(): Promise<Db>;
  embeddings(): Promise<Pick<EmbeddingPipeline, "embedPending">>;
  /** How long a quiet room waits before embedding what rode along with nothing (EMBED_FLUSH_MS). */
  embedFlushMs?: number;
  /** The room's history kept in memory is stale (messages were pruned). */
  forgetHistory(): Promise<void>;
  /** A durable queue item for one of the object's callbacks (one with the same id is replaced). */
  queue(callback: UpkeepCallback, payload: object, item: QueueItem): Promise<unknown>;
  /** A durable `expireApproval` schedule at `at`; arming the same one twice changes nothing. */
  expireAt(at: Date, payload: { turnId: string; approvalId: string }): Promise<unknown>;
  /** A durable `resumeTurns` wake-up at `when`, or that many seconds from now. */
  wake(when: Date | number): Promise<unknown>;
}

export class RoomUpkeep {
  private readonly options: RoomUpkeepOptions;
  private evaluatedSincePrune = 0;
  /** A `resumeTurns` wake-up is stored and has not started yet: new turns need no other. */
  private wakeArmed = false;
  /** The room's new memories are being given vectors in this instance (null: idle). */
  private embedding: Promise<void> | null = null;
  /** More memories arrived while `embedding` ran: one more pass follows it. */
  private embedAgain = false;
  /** The quiet room's pass for memories still waiting (see EMBED_FLUSH_MS). */
  private flush: ReturnType<typeof setTimeout> | null = null;

  constructor(options: RoomUpkeepOptions) {
    this.options = options;
  }

  /** A turn with a surface has something for it (a reply, an error, a prompt): send it. */
  deliver(): void {
    const item = { id: DELIVER_ITEM_ID, retry: DELIVERY_RETRY };
    const retryLater = () => this.push("deliverReplies", {}, item, "deliver_item_failed");
    void this.options.delivery.pending().catch(retryLater);
  }

  /**
   * Turns arrived: makes sure a durable wake-up is pending. Stored in the same event as their
   * journal write, so both commit together.
   */
  armWake(): void {
    if (this.wakeArmed) return;
    this.wakeArmed = true;
    this.options.wake(WAKE_AFTER_S).catch((error: unknown) => {
      this.wakeArmed = false;
      log.error("resume_wake_failed", { room: this.options.room, error: errorField(error) });
    });
  }

  /** The wake-up started: turns that arrive from now on arm the next one. */
  woke(): void {
    this.wakeArmed = false;
  }

  /** The turn paused for approval: arm its deadline (idempotent, so re-arming on start is safe). */
  paused(entry: JournalEntry): void {
    const pause = entry.pause;
    if (!pause || pause.decision) return;
    const payload = { turnId: entry.turnId, approvalId: pause.approvalId };
    const at = new Date(Math.max(pause.expiresAt, Date.now() + 1_000));
    this.options.expireAt(at, payload).catch((error: unknown) => {
      log.error("approval_expiry_failed", { room: this.options.room, error: errorField(error) });
    });
  }

  /**
   * A chat turn failed on the model and waits to run again (model-retry.ts): wake the room then,
   * evicted or not. The operator reads why in the turn's `run_failed` line; this says when.
   */
  retryAt(at: number, turn: { turnId: string; retries: number; code: string }): void {
    const { room } = this.options;
    log.warn("turn_retry_scheduled", { room, ...turn, retryAt: new Date(at).toISOString() });
    this.options.wake(new Date(at)).catch((error: unknown) => {
      log.error("turn_retry_wake_failed", { room, error: errorField(error) });
    });
  }

  /** A reply reached D1 and was evaluated: new memories want vectors, chatter wants pruning. */
  evaluated(agentId: string, roomId: string): void {
    this.embedSoon(agentId, roomId);
    this.pruneUnanswered(agentId, roomId);
  }

  /**
   * Gives the room's new memories (messages, facts, summaries) their vectors. A failure throws,
   * so a queue item retries it; until then text search finds them.
   */
  async embedPending(payload: { agentId: string; roomId: string }): Promise<void> {
    const result = await (await this.options.embeddings()).embedPending(payload);
    if (result.pending) this.queueEmbedding(payload.agentId, payload.roomId);
  }

  /**
   * Embeds here, after the turn that wrote the memories and never holding up the next one; one
   * pass at a time, and one more if memories arrived meanwhile. The pass takes only vectors at
   * hand (the message's, from its query): the rest ride along with the next turn's query, or
   * get a call of their own once the room is quiet. A failed pass leaves a durable queue item to
   * retry it. Should the room be evicted first, the next pass or the cron's maintenance embeds
   * what was left.
   */
  private embedSoon(agentId: string, roomId: string): void {
    if (this.flush) clearTimeout(this.flush);
    this.flush = null;
    if (this.embedding) {
      this.embedAgain = true;
      return;
    }
    this.embedding = (async () => {
      let deferred = 0;
      do {
        this.embedAgain = false;
        const pass = await (await this.options.embeddings()).embedPending({
          agentId,
          roomId,
          knownOnly: true,
        });
        deferred = pass.deferred ?? 0;
        if (pass.pending && deferred === 0) this.queueEmbedding(agentId, roomId);
      } while (this.embedAgain);
      if (deferred > 0) this.flushLater(agentId, roomId);
    })()
      .catch((error: unknown) => {
        log.warn("embedding_deferred", { room: this.options.room, error: errorField(error) });
        this.queueEmbedding(agentId, roomId);
      })
      .finally(() => {
        this.embedding = null;
      });
  }

  /** A quiet room embeds what is still waiting, in one call (a new turn cancels it first). */
  private flushLater(agentId: string, roomId: string): void {
    if (this.flush) clearTimeout(this.flush);
    this.flush = setTimeout(() => {
      this.flush = null;
      this.embedPending({ agentId, roomId }).catch((error: unknown) => {
        log.warn("embedding_deferred", { room: this.options.room, error: errorField(error) });
        this.queueEmbedding(agentId, roomId);
      });
    }, this.options.embedFlushMs ?? EMBED_FLUSH_MS);
  }

  private queueEmbedding(agentId: string, roomId: string): void {
    // One item per room however many turns asked: pushing the same id replaces it.
    this.push("embedPending", { agentId, roomId }, { id: EMBED_ITEM_ID }, "embed_item_failed");
  }

  /** A Discord room keeps its newest unanswered messages only (checked every few turns). */
  private pruneUnanswered(agentId: string, roomId: string): void {
    if (!roomId.startsWith("discord:")) return;
    this.evaluatedSincePrune += 1;
    if (this.evaluatedSincePrune < PRUNE_EVERY_TURNS) return;
    this.evaluatedSincePrune = 0;
    const room = { agentId, roomId, keep: MAX_UNANSWERED_PER_ROOM };
    this.options
      .db()
      .then((db) => pruneUnansweredMessages(db, room))
      .then((pruned) => (pruned > 0 ? this.options.forgetHistory() : undefined))
      .catch((error: unknown) => {
        log.warn("prune_unanswered_failed", { room: this.options.room, error: errorField(error) });
      });
  }

  /** A durable queue item (replaced when its id is pushed again); a failed push is logged. */
  private push(method: UpkeepCallback, payload: object, item: QueueItem, failed: string): void {
    this.options.queue(method, payload, item).catch((error: unknown) => {
      log.error(failed, { room: this.options.room, error: errorField(error) });
    });
  }
}
