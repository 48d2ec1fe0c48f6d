// A room's replies on their way to Discord: finished turns' answers, and the approval prompts of
// paused ones, sent in turn order through one chain. What was already sent is in the journal, so
// a delivery cut off by an eviction resumes without repeating a part. The room decides when to
// deliver and how to retry (its durable queue); this file only sends.
import type { Env } from "../env.ts";
import { approvalPrompt } from "../clients/discord/approval.ts";
import { deliverToDiscord, postForInteraction } from "../clients/discord/delivery.ts";
import { createDiscordRest, DiscordApiError, type DiscordRest } from "../clients/discord/rest.ts";
import type { DiscordDelivery, JournalEntry, TurnJournal } from "./turn-journal.ts";
import { errorField, log } from "../log.ts";

export interface RoomDeliveryOptions {
  env: Env;
  journal: TurnJournal;
  /** The room's name, for logs. */
  room: string;
  /** The agent's display name for an approval prompt. */
  agentName(agentId: string): Promise<string>;
  /** A prompt that cannot be posted at all: the turn goes on as if nobody answered. */
  expireApproval(payload: { turnId: string; approvalId: string }): Promise<void>;
}

export class RoomDelivery {
  private readonly options: RoomDeliveryOptions;
  /** Chained so a channel gets the room's messages in turn order. */
  private chain: Promise<void> = Promise.resolve();
  private rest: DiscordRest | null = null;

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

  /** Runs best-effort work (editing an earlier message) after what is already on its way. */
  after(work: (rest: DiscordRest) => Promise<void>): void {
    this.chain = this.chain.then(() => work(this.discordRest())).catch(() => {});
  }

  private discordRest(): DiscordRest {
    this.rest ??= createDiscordRest({ baseUrl: this.options.env.DISCORD_API_BASE, botToken: this.options.env.DISCORD_BOT_TOKEN });
    return this.rest;
  }

  private async deliver(entry: JournalEntry): Promise<void> {
    const { journal, room } = this.options;
    if (!entry.delivery) return;
    if (entry.status === "awaiting_approval") return this.postApprovalPrompt(entry, entry.delivery);
    try {
      await deliverToDiscord(
        this.discordRest(),
        { target: entry.delivery, reply: entry.outcome?.reply?.text ?? null, error: entry.error, sentParts: entry.deliveredParts },
        Date.now,
        (parts) => journal.markDeliveredParts(entry.turnId, parts, Date.now()),
      );
      journal.markDelivery(entry.turnId, "delivered", Date.now());
    } catch (error) {
      const final = error instanceof DiscordApiError && !error.retryable;
      log.error("discord_delivery_failed", { room, turnId: entry.turnId, final, error: errorField(error) });
      if (!final) throw error;
      // Discord refused for good (deleted channel, missing access): nothing more can be sent.
      journal.markDelivery(entry.turnId, "failed", Date.now());
    }
  }

  private async postApprovalPrompt(entry: JournalEntry, target: DiscordDelivery): Promise<void> {
    const { journal, room } = this.options;
    const pause = entry.pause;
    if (!pause || pause.prompt) return;
    const body = approvalPrompt({
      target: "room",
      approvalId: pause.approvalId,
      agentId: entry.input.agentId,
      agentName: await this.options.agentName(entry.input.agentId),
      tool: pause.tool,
      arguments: pause.arguments,
      requesterDiscordId: /^discord:(\d{1,20})$/.exec(pause.requesterId)?.[1] ?? null,
      expiresAt: pause.expiresAt,
    });
    try {
      const posted = await postForInteraction(this.discordRest(), target, body, Date.now);
      journal.markPromptPosted(entry.turnId, { ...pause, prompt: posted }, { ...target, originalUsed: true }, Date.now());
    } catch (error) {
      const final = error instanceof DiscordApiError && !error.retryable;
      log.error("approval_prompt_failed", { room, turnId: entry.turnId, final, error: errorField(error) });
      if (!final) throw error;
      // Nobody can be asked: the turn goes on as if nobody answered.
      journal.markPromptPosted(entry.turnId, { ...pause, prompt: null }, target, Date.now());
      await this.options.expireApproval({ turnId: entry.turnId, approvalId: pause.approvalId });
    }
  }
}
