// AgentRoom: one Durable Object per (agent, room), named `<agentId>:<roomId>`. It owns the room's
// turn journal and runs turns one at a time in arrival order; the turn logic itself lives in
// src/runtime/. The caller is answered as soon as the reply is journalled; storing it in D1 and
// running evaluators follow in order, off the critical path. A durable queue item (`resumeTurns`)
// stays pending while work is in flight, so a turn cut off by eviction or a crash is picked up
// again by the alarm (or the next request) and answered exactly once.
import { Agent } from "agents";
import type { Env } from "../env.ts";
import type { Character } from "../runtime/character.ts";
import { AppError, NotFoundError, type SerializedError } from "../runtime/errors.ts";
import type { TurnInput, TurnOutcome } from "../runtime/turn-types.ts";
import type { ToolOutput } from "../runtime/types.ts";
import type { HistoryPage, HistoryQuery } from "../memory/message-history.ts";
import { createRoomRuntime, type RoomRuntime } from "./room-runtime.ts";
import { MAX_TURN_ATTEMPTS, TurnJournal, type ApprovalPause, type JournalEntry } from "./turn-journal.ts";
import { RoomDelivery } from "./room-delivery.ts";
import { APPROVAL_WINDOW_MS, newApprovalId } from "./approvals.ts";
import type { AttachmentIngest, DeliveryTarget, ReplySurface } from "./reply-surface.ts";
import type { TurnPause } from "../runtime/turn-types.ts";
import { effectiveServers, type McpServerEntry } from "../mcp/registry.ts";
import type { ApprovalAnswer, ApprovalAnswerResult, EnqueueTurnRequest, StreamedTurnResult, SubmitTurnRequest, TurnResult } from "./room-types.ts";
import type { AgentRoomRpc } from "./rpc.ts";
import { TurnStream } from "./turn-stream.ts";
import { errorField, log } from "../log.ts";

const RESUME_ITEM_ID = "resume-turns";

const EMBED_ITEM_ID = "embed-pending";
const DELIVER_ITEM_ID = "deliver-replies";
/** Delivery retries (Discord 429/5xx beyond what one attempt waits): about 10 minutes in all. */
const DELIVERY_RETRY = { maxAttempts: 8, baseDelayMs: 5_000, maxDelayMs: 120_000 };

/** What the worker plugs into a room: the surface replies go to, and its attachment ingest. */
export interface RoomPlatform {
  surface: ReplySurface;
  attachments: AttachmentIngest;
}

/** The class binds to ROOMS as `AgentRoom` (src/durable-objects.ts), which plugs in the platform. */
export abstract class AgentRoomBase extends Agent<Env> implements AgentRoomRpc {
  private journal!: TurnJournal;
  private runtime: Promise<RoomRuntime> | null = null;
  private cachedCharacter: { version: number; character: Character } | null = null;
  /** The agent's runtime-added MCP servers, as of an agent version (adding one bumps it). */
  private agentServers: { version: number | null; servers: McpServerEntry[] } | null = null;
  private draining: Promise<void> | null = null;
  /** Reply writes and evaluations, chained so they reach D1 in turn order. */
  private afterReplies: Promise<void> = Promise.resolve();
  private readonly finishing = new Set<string>();
  private readonly waiters = new Map<string, Array<(result: TurnResult) => void>>();
  /** Streaming clients of turns in this instance, by turn id (gone with the instance). */
  private readonly streams = new Map<string, TurnStream>();
  /** Replies on their way to Discord. */
  private delivery!: RoomDelivery;
  private surfaces!: RoomPlatform;

  protected abstract platform(): RoomPlatform;

  override onStart(): void {
    this.surfaces = this.platform();
    this.journal = new TurnJournal(this.ctx.storage.sql);
    this.journal.migrate();
    this.journal.prune(Date.now());
    this.delivery = new RoomDelivery({
      surface: this.surfaces.surface,
      journal: this.journal,
      room: this.name,
      agentName: async (agentId) => (await (await this.getRuntime()).agents.get(agentId))?.character.name ?? agentId,
      expireApproval: (payload) => this.expireApproval(payload),
    });
    // Work left by an earlier instance (eviction, crash, deploy) resumes on first contact.
    this.finishReplied();
    if (this.journal.nextToRun()) void this.drain();
    if (this.journal.undelivered().length > 0) void this.delivery.pending().catch(() => this.armDelivery());
    for (const entry of this.journal.awaitingApproval()) this.armApprovalExpiry(entry);
  }

  /**
   * A person answered an approval prompt. Only the person whose message started the turn counts;
   * the turn resumes at once with the decision, and the click's fresh token carries the reply.
   */
  async resolveApproval(answer: ApprovalAnswer): Promise<ApprovalAnswerResult> {
    const entry = this.journal.byApprovalId(answer.approvalId);
    const pause = entry?.pause;
    if (!entry || !pause || pause.decision) return { status: "gone" };
    if (pause.requesterId !== answer.userId) return { status: "not_yours" };
    const now = Date.now();
    const decision = answer.approve ? ("approved" as const) : ("denied" as const);
    const delivery: DeliveryTarget | null = entry.delivery ? this.surfaces.surface.afterAnswer(entry.delivery, answer.via) : null;
    this.journal.markDecided(entry.turnId, { ...pause, decision: { value: decision, by: answer.userName, at: now } }, delivery, now);
    this.armResume();
    void this.drain();
    return { status: "resolved", tool: pause.tool, decision };
  }

  /** Schedule callback: nobody answered in time, so the turn goes on without the tool. */
  async expireApproval(payload: { turnId: string; approvalId: string }): Promise<void> {
    const entry = this.journal.byApprovalId(payload.approvalId);
    const pause = entry?.pause;
    if (!entry || !pause || pause.decision || entry.turnId !== payload.turnId) return;
    const now = Date.now();
    this.journal.markDecided(entry.turnId, { ...pause, decision: { value: "expired", by: null, at: now } }, entry.delivery, now);
    this.armResume();
    void this.drain();
    // The buttons would still look answerable: say what happened (best effort, the reply follows).
    if (pause.prompt) this.delivery.closeExpiredPrompt(entry.turnId, pause.prompt, pause.tool);
  }

  private armApprovalExpiry(entry: JournalEntry): void {
    const pause = entry.pause;
    if (!pause || pause.decision) return;
    const payload = { turnId: entry.turnId, approvalId: pause.approvalId };
    // Idempotent: re-arming on every start never doubles it, and a lost one is re-created.
    this.schedule(new Date(Math.max(pause.expiresAt, Date.now() + 1_000)), "expireApproval", payload, { idempotent: true }).catch((error: unknown) => {
      log.error("approval_expiry_failed", { room: this.name, error: errorField(error) });
    });
  }

  /**
   * Journals a turn whose reply goes to a webhook surface (Discord) and returns at once: the
   * caller acknowledges the webhook, and the reply is delivered when the turn is done. A second
   * delivery of the same webhook (same idempotency key) is recognised and changes nothing.
   */
  async enqueueTurn(request: EnqueueTurnRequest): Promise<{ turnId: string; duplicate: boolean }> {
    const existing = this.journal.byKey(request.idempotencyKey);
    if (existing) return { turnId: existing.turnId, duplicate: true };
    this.journal.insert({ input: request.input, idempotencyKey: request.idempotencyKey, delivery: request.delivery, now: Date.now() });
    this.armResume();
    void this.drain();
    return { turnId: request.input.turnId, duplicate: false };
  }

  /**
   * Instagram publishing ran in rooms named `<agentId>:~instagram` before PostPublisher: a step
   * still scheduled on one (or a call from an older worker) is handed to the agent's PostPublisher.
   * Kept while `legacy_publish_forwarded` still shows up in the logs.
   */
  async publishPost(postId: string): Promise<void> {
    log.info("legacy_publish_forwarded", { room: this.name, postId });
    await this.env.PUBLISHER.getByName(this.name.split(":")[0]!).publishPost(postId);
  }

  /** Schedule callback of those rooms (a later step, or the watchdog): forwarded the same way. */
  async publishStep(payload: { postId: string }): Promise<void> {
    await this.publishPost(payload.postId);
  }

  /** Queue callback: retries replies that could not reach Discord yet (throws to be retried). */
  async deliverReplies(): Promise<void> {
    await this.delivery.pending();
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
      now: Date.now(),
    });
    const result = this.waitFor(request.input.turnId, false);
    this.armResume();
    void this.drain();
    return result;
  }

  /**
   * Like submitTurn, but answers once the turn has started, with a stream of what it does: the
   * memories it uses, text as the model writes it, tool calls, then the outcome. The turn does
   * not depend on the stream: if the client leaves, it still completes and is stored. A repeat
   * of an Idempotency-Key gets only the outcome, once there is one.
   */
  async streamTurn(request: SubmitTurnRequest): Promise<StreamedTurnResult> {
    if (request.idempotencyKey && this.journal.byKey(request.idempotencyKey)) {
      const result = await this.submitTurn(request);
      if (!result.ok) return result;
      const replay = new TurnStream(result.outcome.turnId, request.input.roomId, request.showMemories === true);
      replay.done(result.outcome);
      return { ok: true, replayed: true, stream: replay.readable };
    }
    const { turnId, roomId } = request.input;
    const stream = new TurnStream(turnId, roomId, request.showMemories === true);
    this.streams.set(turnId, stream);
    const result = this.submitTurn(request);
    // A failure before the turn starts answers as a plain error (a proper status, no stream).
    const first = await Promise.race([stream.started.then(() => null), result]);
    if (first && !first.ok) {
      this.streams.delete(turnId);
      stream.close();
      return first;
    }
    return { ok: true, replayed: false, stream: stream.readable };
  }

  /**
   * A page of the room's conversation from D1, read after the room's pending reply writes land,
   * so a client that just got a reply always finds it in the history.
   */
  async readHistory(query: HistoryQuery): Promise<HistoryPage> {
    await this.afterReplies;
    const runtime = await this.getRuntime();
    return runtime.messages.page(query);
  }

  /** The memory API changed this room's messages: drop the history kept in memory. */
  async forgetHistory(): Promise<void> {
    await this.afterReplies;
    const runtime = await this.getRuntime();
    runtime.history.reset();
  }

  /**
   * Queue callback: gives this room's new memories (messages, facts, summaries) their vectors,
   * after the replies. A failure throws, so the queue retries it; until then text search finds them.
   */
  async embedPending(payload: { agentId: string; roomId: string }): Promise<void> {
    const runtime = await this.getRuntime();
    const result = await runtime.embeddings.embedPending({ agentId: payload.agentId, roomId: payload.roomId });
    if (result.pending) this.queueEmbedding(payload.agentId, payload.roomId);
  }

  private queueEmbedding(agentId: string, roomId: string): void {
    // One item per room however many turns asked: pushing the same id replaces it.
    this.queue("embedPending", { agentId, roomId }, { id: EMBED_ITEM_ID }).catch((error: unknown) => {
      log.error("embed_item_failed", { room: this.name, error: errorField(error) });
    });
  }

  /** Queue callback: holds a durable wake-up while work is pending, and resumes it. */
  async resumeTurns(): Promise<void> {
    this.finishReplied();
    await this.drain();
    await this.afterReplies;
  }

  private armResume(): void {
    // Pushed in the same synchronous block as the journal insert, so both commit together.
    this.queue("resumeTurns", {}, { id: RESUME_ITEM_ID }).catch((error: unknown) => {
      log.error("resume_item_failed", { room: this.name, error: errorField(error) });
    });
  }

  private drain(): Promise<void> {
    if (!this.draining) {
      let completed = false;
      this.draining = (async () => {
        for (let entry = this.journal.nextToRun(); entry; entry = this.journal.nextToRun()) {
          await this.run(entry);
        }
        completed = true;
      })().finally(() => {
        this.draining = null;
        // A turn journalled while the loop was finishing would otherwise wait for the alarm.
        if (completed && this.journal.nextToRun()) void this.drain();
      });
    }
    return this.draining;
  }

  /** received/running -> replied (or failed). The caller is answered here. */
  private async run(entry: JournalEntry): Promise<void> {
    const { turnId, agentId } = entry.input;
    try {
      if (entry.attempts >= MAX_TURN_ATTEMPTS) {
        throw new AppError("internal", 500, `the turn was interrupted ${entry.attempts} times and was given up`);
      }
      this.journal.markRunning(turnId, Date.now());
      const runtime = await this.getRuntime();
      const decided = entry.pause?.decision ? { checkpoint: entry.pause.checkpoint, decision: entry.pause.decision.value } : undefined;
      // The inbound message is stored while the agent's current version is read: one round trip.
      // (A turn resuming after an approval stored it the first time.)
      const [version] = await Promise.all([runtime.agents.version(agentId), decided ? null : runtime.runner.receive(entry.input)]);
      const character = await this.characterFor(runtime, agentId, version);
      await this.prepareTools(runtime, agentId, version, character);
      // Only a surface with buttons can ask a person; elsewhere such tools are refused.
      const canAskApproval = entry.delivery ? this.surfaces.surface.canAskApproval(entry.delivery, agentId) : false;
      const attachments = !decided && entry.input.attachments.length > 0 ? await this.readAttachments(entry) : undefined;
      const observer = this.streams.get(turnId)?.observer;
      const toolOutputs = { remembered: this.journal.toolOutputs(turnId), record: (key: string, output: ToolOutput) => this.journal.recordToolOutput(turnId, key, output) };
      const outcome = await runtime.runner.respondOrPause(character, entry.input, { canAskApproval, resume: decided, attachments, observer, toolOutputs });
      if (outcome.status === "awaiting_approval") {
        this.pauseForApproval(entry, outcome);
        return;
      }
      this.journal.markReplied(turnId, outcome, Date.now());
      if (outcome.replyMemory) runtime.history.remember(outcome.replyMemory);
      this.settle(turnId, { ok: true, replayed: false, outcome });
      this.scheduleDelivery(entry);
      this.finish({ ...entry, status: "replied", outcome }, character);
    } catch (error) {
      // A missing agent makes the inbound write fail on its foreign key; report the cause.
      const serialized = serializeError(await this.explain(agentId, error));
      this.journal.markFailed(turnId, serialized, Date.now());
      this.settle(turnId, { ok: false, replayed: false, turnId, error: serialized });
      this.scheduleDelivery(entry);
    }
  }

  /** Copies the turn's files into R2 (once: a re-run finds them there) and reads them for the model. */
  private async readAttachments(entry: JournalEntry): Promise<{ text: string; images: string[] }> {
    return this.surfaces.attachments.read(entry.input.attachments, `attachments/${entry.input.agentId}/${entry.turnId}`);
  }

  /** running -> awaiting_approval: journal the checkpoint, arm the expiry, post the buttons. */
  private pauseForApproval(entry: JournalEntry, paused: TurnPause): void {
    const now = Date.now();
    const pause: ApprovalPause = {
      approvalId: newApprovalId(),
      tool: paused.tool,
      arguments: paused.arguments,
      requesterId: entry.input.userId,
      requestedAt: now,
      expiresAt: now + APPROVAL_WINDOW_MS,
      checkpoint: paused.checkpoint,
      prompt: null,
    };
    this.journal.markAwaitingApproval(entry.turnId, pause, now);
    this.armApprovalExpiry({ ...entry, pause });
    this.scheduleDelivery(entry);
  }

  /** replied -> evaluated: the reply reaches D1, then evaluators run. Chained in turn order. */
  private finish(entry: JournalEntry, character?: Character): void {
    if (this.finishing.has(entry.turnId) || !entry.outcome) return;
    this.finishing.add(entry.turnId);
    const outcome = entry.outcome;
    this.afterReplies = this.afterReplies
      .then(async () => {
        const runtime = await this.getRuntime();
        const current = character ?? (await this.characterFor(runtime, entry.input.agentId, await runtime.agents.version(entry.input.agentId)));
        await runtime.runner.afterReply(current, entry.input, outcome);
        this.journal.markEvaluated(entry.turnId, Date.now());
        this.queueEmbedding(entry.input.agentId, entry.input.roomId);
      })
      .catch((error: unknown) => {
        // Left as `replied`: the resume item, or the next start, tries again.
        log.error("after_reply_failed", { room: this.name, turnId: entry.turnId, error: errorField(error) });
      })
      .finally(() => this.finishing.delete(entry.turnId));
  }

  private scheduleDelivery(entry: JournalEntry): void {
    if (!entry.delivery) return;
    void this.delivery.pending().catch(() => this.armDelivery());
  }

  private armDelivery(): void {
    this.queue("deliverReplies", {}, { id: DELIVER_ITEM_ID, retry: DELIVERY_RETRY }).catch((error: unknown) => {
      log.error("deliver_item_failed", { room: this.name, error: errorField(error) });
    });
  }

  private finishReplied(): void {
    for (const entry of this.journal.replied()) this.finish(entry);
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
    const stream = this.streams.get(turnId);
    this.streams.delete(turnId);
    if (stream) {
      if (result.ok) stream.done(result.outcome);
      else stream.fail(result.error);
    }
  }

  private getRuntime(): Promise<RoomRuntime> {
    // Room names are `<agentId>:<roomId>`; agent ids contain no ':'.
    this.runtime ??= createRoomRuntime(this.env, this.name.split(":")[0]!, { settled: () => this.afterReplies }).catch((error: unknown) => {
      this.runtime = null;
      throw error;
    });
    return this.runtime;
  }

  /** Connects the MCP servers the agent uses (once per room instance; again after a change). */
  private async prepareTools(runtime: RoomRuntime, agentId: string, version: number | null, character: Character): Promise<void> {
    if (this.agentServers?.version !== version) {
      this.agentServers = { version, servers: await runtime.mcpPlatform.servers.list(agentId) };
    }
    await runtime.mcp.prepare(effectiveServers(character.settings.mcpServers, this.agentServers.servers));
  }

  private async characterFor(runtime: RoomRuntime, agentId: string, version: number | null): Promise<Character> {
    if (version === null) throw new NotFoundError(`no agent with id "${agentId}"`);
    if (this.cachedCharacter?.version === version) return this.cachedCharacter.character;
    const record = await runtime.agents.get(agentId);
    if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
    this.cachedCharacter = { version: record.updatedAt, character: record.character };
    return record.character;
  }

  private async explain(agentId: string, error: unknown): Promise<unknown> {
    if (error instanceof AppError) return error;
    try {
      const runtime = await this.getRuntime();
      if ((await runtime.agents.version(agentId)) === null) return new NotFoundError(`no agent with id "${agentId}"`);
    } catch {
      // Fall through to the original error.
    }
    return error;
  }
}

function serializeError(error: unknown): SerializedError {
  if (error instanceof AppError) return error.toJSON();
  log.error("turn_failed", { error: errorField(error, true) });
  return { code: "internal", status: 500, message: "the turn failed unexpectedly; see the worker logs" };
}
