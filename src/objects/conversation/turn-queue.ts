// Runs a room's journalled turns one at a time, in arrival order: turns a voice note into the
// message's text (voice-notes.ts), reads the agent's version and character, connects its tools,
// reads the message's attachments, and hands the turn to the runtime
// (src/runtime/turn/turn-runner.ts). A turn that reaches a tool needing a person's approval is
// journalled as paused until the answer (or the deadline) comes. Once the caller has its reply,
// the reply is stored in D1 and evaluated, chained in turn order. The Durable Object decides when
// this runs (agent-room.ts); the queue only takes interfaces.
import type { Character } from "../../runtime/character.ts";
import { AppError, NotFoundError, type SerializedError } from "../../runtime/util/errors.ts";
import type { TurnObserver, TurnPause } from "../../runtime/turn/turn-types.ts";
import type { ToolOutput } from "../../runtime/ports/tools.ts";
import { errorField, log } from "../../log.ts";
import { APPROVAL_WINDOW_MS, newApprovalId } from "../shared/approvals.ts";
import { CharacterChangedError } from "../shared/character-source.ts";
import type { AttachmentIngest, ReplySurface } from "../shared/reply-surface.ts";
import type { ApprovalAnswer, ApprovalAnswerResult } from "./room-types.ts";
import type { ApprovalPause, JournalEntry } from "./journal-rows.ts";
import { MAX_TURN_ATTEMPTS, type TurnJournal } from "./turn-journal.ts";
import { turnOrigin } from "../shared/turn-origin.ts";
import type { TurnServices } from "./turn-services.ts";
import type { AfterReplyChain } from "./after-reply-chain.ts";
import type { RoomUpkeep } from "./room-upkeep.ts";
import type { TurnWaiters } from "./turn-waiters.ts";
import { transcribeVoiceNote } from "./voice-notes.ts";
import { modelRetryAt } from "./model-retry.ts";

interface TurnQueueOptions {
  /** The room's name, for logs. */
  room: string;
  journal: TurnJournal;
  /** What a turn runs on (the room's runtime), built without reference to this queue. */
  services(): Promise<TurnServices>;
  attachments: AttachmentIngest;
  surface: ReplySurface;
  /** Who waits for a turn in this instance: its streaming client, and whoever is answered. */
  waiters: Pick<TurnWaiters, "observer" | "settle">;
  /** Where each reply's write and evaluation are chained, in turn order. */
  replies: AfterReplyChain;
  /** Delivery to the surface, approval deadlines, retries and the upkeep after a turn. */
  upkeep: Pick<RoomUpkeep, "deliver" | "paused" | "evaluated" | "retryAt">;
}

/** The surface's typing indicator around one turn (TurnQueue.typing). */
type Typing = ReturnType<TurnQueue["typing"]>;

export class TurnQueue {
  private readonly options: TurnQueueOptions;
  private draining: Promise<void> | null = null;
  private readonly finishing = new Set<string>();

  constructor(options: TurnQueueOptions) {
    this.options = options;
  }

  /** Runs every turn waiting in the journal; one loop at a time. */
  drain(): Promise<void> {
    const { journal } = this.options;
    if (!this.draining) {
      let completed = false;
      this.draining = (async () => {
        for (
          let entry = journal.nextToRun(Date.now());
          entry;
          entry = journal.nextToRun(Date.now())
        )
          await this.run(entry);
        completed = true;
      })().finally(() => {
        this.draining = null;
        // A turn journalled while the loop was finishing would otherwise wait for the alarm.
        if (completed && journal.nextToRun(Date.now())) void this.drain();
      });
    }
    return this.draining;
  }

  /** Stores and evaluates replies an earlier instance gave but did not finish. */
  finishReplied(): void {
    for (const entry of this.options.journal.replied()) this.finish(entry);
  }

  /** Replied turns stored and evaluated, waiting ones run; resolves when all of it is done. */
  async finishJournal(): Promise<void> {
    this.finishReplied();
    await this.drain();
    await this.options.replies.settled();
  }

  /**
   * A person answered an approval prompt. Only the person whose message started the turn counts,
   * or one the surface vouches may answer for them (`onBehalf`); the caller resumes the turn,
   * whose reply goes out on the answer's own handle.
   */
  answer(answer: ApprovalAnswer): ApprovalAnswerResult {
    const { journal, surface } = this.options;
    const entry = journal.byApprovalId(answer.approvalId);
    const pause = entry?.pause;
    if (!entry || !pause || pause.decision) return { status: "gone" };
    if (pause.requesterId !== answer.userId && answer.onBehalf !== true)
      return { status: "not_yours" };
    const now = Date.now();
    const decision = answer.approve ? ("approved" as const) : ("denied" as const);
    const delivery = entry.delivery ? surface.afterAnswer(entry.delivery, answer.via) : null;
    const decided = { ...pause, decision: { value: decision, by: answer.userName, at: now } };
    journal.markDecided(entry.turnId, decided, delivery, now);
    return { status: "resolved", tool: pause.tool, decision };
  }

  /** Nobody answered in time: the turn goes on without the tool. Null when nothing waited. */
  expire(payload: { turnId: string; approvalId: string }): ApprovalPause | null {
    const { journal } = this.options;
    const entry = journal.byApprovalId(payload.approvalId);
    const pause = entry?.pause;
    if (!entry || !pause || pause.decision || entry.turnId !== payload.turnId) return null;
    const now = Date.now();
    const expired = { ...pause, decision: { value: "expired" as const, by: null, at: now } };
    journal.markDecided(entry.turnId, expired, entry.delivery, now);
    return pause;
  }

  /**
   * received/running -> replied (or failed, or awaiting_approval, or back to received to retry
   * after a model failure). The caller is answered here.
   */
  private async run(journalled: JournalEntry): Promise<void> {
    let entry = journalled;
    const { journal, waiters, upkeep } = this.options;
    const { turnId, agentId } = entry.input;
    const typing = this.typing(entry);
    let received: Promise<void> = Promise.resolve();
    try {
      if (entry.attempts >= MAX_TURN_ATTEMPTS) {
        const message = `the turn was interrupted ${entry.attempts} times and was given up`;
        throw new AppError("internal", 500, message);
      }
      journal.markRunning(turnId, Date.now());
      const { runner, history } = await this.options.services();
      const resume = entry.pause?.decision ? entry.pause : undefined;
      if (!resume) {
        // Before anything reads the text: a voice note's transcript is the message. A member
        // whose place's budget is used gets no transcription either (the turn then says so).
        const voice = await transcribeVoiceNote(entry, this.options.attachments, journal, () =>
          runner.placeBudgetUsed(entry.input),
        );
        entry = voice.entry;
        if (voice.failure) {
          received = runner.receive(entry.input);
          throw voice.failure;
        }
      }
      // The inbound message is stored (in D1; the journal already holds it) alongside the turn's
      // reads. A turn resuming after an approval stored it the first time.
      if (!resume) received = runner.receive(entry.input);
      received.catch(() => undefined);
      let answered: Awaited<ReturnType<TurnQueue["respond"]>>;
      try {
        answered = await this.respond(entry, received, true, typing);
      } catch (error) {
        if (!(error instanceof CharacterChangedError)) throw error;
        answered = await this.respond(entry, received, false, typing);
      }
      const { outcome, character } = answered;
      if (outcome.status === "awaiting_approval") return this.pause(entry, outcome);
      journal.markReplied(turnId, outcome, Date.now());
      if (outcome.replyMemory) history.remember(outcome.replyMemory);
      waiters.settle(turnId, { ok: true, replayed: false, outcome });
      if (entry.delivery) upkeep.deliver();
      this.finish({ ...entry, status: "replied", outcome }, character);
    } catch (error) {
      // A turn that fails before the model (no model configured, the daily budget) still has its
      // message stored before it answers.
      await received.catch(() => undefined);
      // A missing agent makes the inbound write fail on its foreign key; report the cause.
      const serialized = serializeError(await this.explain(agentId, error));
      const now = Date.now();
      const retryAt = modelRetryAt(entry, error, now);
      if (retryAt !== null) {
        // Nobody waits on a chat turn (enqueueTurn): its member hears nothing until it runs again.
        journal.markRetrying(turnId, serialized, retryAt, now);
        upkeep.retryAt(retryAt, { turnId, retries: entry.retries + 1, code: serialized.code });
        return;
      }
      journal.markFailed(turnId, serialized, now);
      waiters.settle(turnId, { ok: false, replayed: false, turnId, error: serialized });
      if (entry.delivery) upkeep.deliver();
    } finally {
      typing.stop();
    }
  }

  /** The surface's typing indicator, from the decision to answer until the turn stops. */
  private typing(entry: JournalEntry) {
    const { surface } = this.options;
    let stop: (() => void) | null = null;
    const start = () => {
      if (!stop && entry.delivery) stop = surface.startTyping?.(entry.delivery) ?? null;
    };
    return {
      start,
      stop: () => stop?.(),
      observe: (observer: TurnObserver | undefined): TurnObserver => ({
        ...observer,
        replying: () => {
          start();
          observer?.replying?.();
        },
      }),
    };
  }

  /**
   * Asks the runtime for the turn's outcome. With `onKnown`, on the character this object last
   * read, checking the agent's version alongside the turn's other reads, so a turn in a warm room
   * makes one round of D1 reads before the model; if the agent changed meanwhile, that check
   * throws CharacterChangedError before any model request and the caller starts again without.
   */
  private async respond(
    entry: JournalEntry,
    received: Promise<void>,
    onKnown: boolean,
    typing: Typing,
  ) {
    const { journal } = this.options;
    const { turnId, agentId } = entry.input;
    const { runner, characters, tools } = await this.options.services();
    const known = onKnown ? characters.known(agentId) : null;
    let character: Character;
    let version: number | null;
    let beforeModel: Promise<unknown>;
    if (known) {
      ({ character, version } = known);
      const current = characters.version(agentId).then((now) => {
        if (now !== known.version) throw new CharacterChangedError(agentId);
      });
      // The version first: a deleted agent's failed inbound write is explained by the retry.
      beforeModel = current.then(() => received);
    } else {
      [version] = await Promise.all([characters.version(agentId), received]);
      character = await characters.character(agentId, version);
      beforeModel = received;
    }
    // Awaited by the runtime before the model (or before a declined message counts as handled).
    beforeModel.catch(() => undefined);
    const pause = entry.pause;
    const resume = pause?.decision
      ? { checkpoint: pause.checkpoint, decision: pause.decision.value }
      : undefined;
    const origin = turnOrigin(entry.input.source, this.options.surface, entry.delivery);
    if (resume) typing.start();
    const outcome = await runner.respondOrPause(character, entry.input, {
      // Only a surface with buttons can ask a person; elsewhere such tools are refused.
      canAskApproval: entry.delivery
        ? this.options.surface.canAskApproval(entry.delivery, agentId)
        : false,
      resume,
      // Only for a turn the runtime's respond rules let go on.
      prepare: async () => {
        await tools.prepare(agentId, character, origin);
        return resume ? undefined : await this.readAttachments(entry);
      },
      observer: typing.observe(this.options.waiters.observer(turnId)),
      beforeModel,
      toolOutputs: {
        remembered: journal.toolOutputs(turnId),
        record: (key: string, entry: ToolOutput | "started") =>
          journal.recordToolOutput(turnId, key, entry),
      },
    });
    return { outcome, character };
  }

  /** The turn's files, copied in once (a re-run finds them) and read for the model. */
  private async readAttachments(
    entry: JournalEntry,
  ): Promise<{ text: string; images: string[] } | undefined> {
    const { attachments, agentId } = entry.input;
    if (attachments.length === 0) return undefined;
    return this.options.attachments.read(attachments, `attachments/${agentId}/${entry.turnId}`);
  }

  /** running -> awaiting_approval: journal the checkpoint, arm the deadline, post the prompt. */
  private pause(entry: JournalEntry, paused: TurnPause): void {
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
    this.options.journal.markAwaitingApproval(entry.turnId, pause, now);
    this.options.upkeep.paused({ ...entry, pause });
    if (entry.delivery) this.options.upkeep.deliver();
  }

  /** replied -> evaluated: the reply reaches D1, then evaluators run. Chained in turn order. */
  private finish(entry: JournalEntry, character?: Character): void {
    if (this.finishing.has(entry.turnId) || !entry.outcome) return;
    this.finishing.add(entry.turnId);
    const outcome = entry.outcome;
    const { agentId, roomId } = entry.input;
    this.options.replies.add(async () => {
      try {
        const { runner, characters } = await this.options.services();
        const current =
          character ?? (await characters.character(agentId, await characters.version(agentId)));
        await runner.afterReply(current, entry.input, outcome);
        this.options.journal.markEvaluated(entry.turnId, Date.now());
        this.options.upkeep.evaluated(agentId, roomId);
      } catch (error) {
        // Left as `replied`: the resume item, or the next start, tries again.
        const fields = { room: this.options.room, turnId: entry.turnId, error: errorField(error) };
        log.error("after_reply_failed", fields);
      } finally {
        this.finishing.delete(entry.turnId);
      }
    });
  }

  private async explain(agentId: string, error: unknown): Promise<unknown> {
    if (error instanceof AppError) return error;
    try {
      const { characters } = await this.options.services();
      if ((await characters.version(agentId)) === null)
        return new NotFoundError(`no agent with id "${agentId}"`);
    } catch {
      // Fall through to the original error.
    }
    return error;
  }
}

function serializeError(error: unknown): SerializedError {
  if (error instanceof AppError) return error.toJSON();
  log.error("turn_failed", { error: errorField(error, true) });
  return {
    code: "internal",
    status: 500,
    message: "the turn failed unexpectedly; see the worker logs",
  };
}
