// A room's replies on their way to the surface that asked (Discord): finished turns' answers, and
// the approval prompts of paused ones, sent in turn order through one chain. What was already sent
// is in the journal, so a delivery cut off by an eviction resumes without repeating a part. The
// room decides when to deliver and how to retry (its durable queue); this file only sends.
import type { Delivery } from "../../telemetry/turn-spans.ts";
import type { JournalEntry } from "./journal-rows.ts";
import type { TurnJournal } from "./turn-journal.ts";
import type { DeliveryTarget, PostedPrompt, ReplySurface } from "../shared/reply-surface.ts";
import { errorField, log } from "../../log.ts";

export interface RoomDeliveryOptions {
  journal: TurnJournal;
  surface: ReplySurface;
  /** The room's name, for logs. */
  room: string;
  /** The agent's display name for an approval prompt. */
  agentName(agentId: string): Promise<string>;
  /** A prompt that cannot be posted at all: the turn goes on as if nobody answered. */
  expireApproval(payload: { turnId: string; approvalId: string }): Promise<void>;
  /** Told of each reply's delivery, sent or failed (the room's tracer). */
  delivered?(delivery: Delivery): void;
}

export class RoomDelivery {
  private readonly options: RoomDeliveryOptions;
  /** Chained so a channel gets the room's messages in turn order. */
  private chain: Promise<void> = Promise.resolve();

  constructor(options: RoomDeliveryOptions) {
    this.options = options;
  }

  /** Sends every finished, undelivered reply in turn order; throws on a failure worth retrying. */
  pending(): Promise<void> {
    const run = this.chain.then(async () => {
      for (const entry of this.options.journal.undelivered()) await this.deliver(entry);
    });
    // The chain itself never stays rejected: the next call starts clean.
    this.chain = run.catch(() => {});
    return run;
  }

  /** Says on an expired prompt that nobody answered (best effort, after what is on its way). */
  closeExpiredPrompt(turnId: string, posted: PostedPrompt, tool: string): void {
    this.chain = this.chain.then(async () => {
      try {
        await this.options.surface.closeExpiredPrompt(posted, tool);
      } catch (error) {
        log.warn("approval_prompt_edit_failed", {
          room: this.options.room,
          turnId,
          error: errorField(error),
        });
      }
    });
  }

  private async deliver(entry: JournalEntry): Promise<void> {
    const { journal, room, surface } = this.options;
    if (!entry.delivery) return;
    if (entry.status === "awaiting_approval") return this.postApprovalPrompt(entry, entry.delivery);
    const start = Date.now();
    const told = (ok: boolean) =>
      this.options.delivered?.({
        turnId: entry.turnId,
        surface: entry.delivery?.kind ?? "unknown",
        start,
        end: Date.now(),
        ok,
      });
    try {
      await surface.sendReply(
        entry.delivery,
        {
          // An ignored turn's notice (a place's budget is used) goes out as a reply would.
          reply: entry.outcome?.reply?.text ?? entry.outcome?.notice ?? null,
          error: entry.error,
          sentParts: entry.deliveredParts,
          ignored: entry.outcome?.status === "ignored" && !entry.outcome.notice,
        },
        (parts) => journal.markDeliveredParts(entry.turnId, parts, Date.now()),
      );
      journal.markDelivery(entry.turnId, "delivered", Date.now());
      told(true);
    } catch (error) {
      told(false);
      const final = surface.isPermanentFailure(error);
      // Named by the surface (discord, telegram, slack): each one's operator searches for its own.
      log.error("delivery_failed", {
        surface: entry.delivery.kind,
        room,
        turnId: entry.turnId,
        final,
        error: errorField(error),
      });
      if (!final) throw error;
      // The surface refused for good (deleted channel, missing access): nothing more can be sent.
      journal.markDelivery(entry.turnId, "failed", Date.now());
    }
  }

  private async postApprovalPrompt(entry: JournalEntry, target: DeliveryTarget): Promise<void> {
    const { journal, room, surface } = this.options;
    const pause = entry.pause;
    if (!pause || pause.prompt) return;
    const { agentId } = entry.input;
    const agentName = await this.options.agentName(agentId);
    try {
      const posted = await surface.postApprovalPrompt(target, {
        asker: "room",
        approvalId: pause.approvalId,
        agentId,
        agentName,
        tool: pause.tool,
        arguments: pause.arguments,
        requesterId: pause.requesterId,
        expiresAt: pause.expiresAt,
      });
      journal.markPromptPosted(
        entry.turnId,
        { ...pause, prompt: posted },
        surface.openingUsed(target),
        Date.now(),
      );
    } catch (error) {
      const final = surface.isPermanentFailure(error);
      log.error("approval_prompt_failed", {
        room,
        turnId: entry.turnId,
        final,
        error: errorField(error),
      });
      if (!final) throw error;
      // Nobody can be asked: the turn goes on as if nobody answered.
      journal.markPromptPosted(entry.turnId, { ...pause, prompt: null }, target, Date.now());
      await this.options.expireApproval({ turnId: entry.turnId, approvalId: pause.approvalId });
    }
  }
}
