// Sends a finished turn to the Discord interaction that asked for it: the first message edits the
// deferred response, the rest are follow-ups; once the interaction token is (nearly) expired the
// remaining messages go to the channel with the bot token. Progress is reported after every
// message, so a delivery resumed after an eviction sends none twice.
import type { DiscordDelivery } from "../../room/turn-journal.ts";
import type { SerializedError } from "../../runtime/errors.ts";
import { DiscordApiError, TOKEN_SAFETY_MARGIN_MS, type DiscordRest } from "./rest.ts";
import { splitMessage } from "./split.ts";

export interface DeliveryJob {
  target: DiscordDelivery;
  reply: string | null;
  error: SerializedError | null;
  /** Messages already sent. */
  sentParts: number;
}

/** What the user sees: the reply, or what went wrong (error messages carry no secrets). */
export function deliveryText(job: Pick<DeliveryJob, "reply" | "error">): string {
  if (job.error) return `⚠️ I couldn't answer that: ${job.error.message}`;
  const reply = job.reply?.trim();
  return reply ? reply : "…(I have nothing to add.)";
}

export async function deliverToDiscord(rest: DiscordRest, job: DeliveryJob, now: () => number, onSent: (parts: number) => void): Promise<void> {
  const parts = splitMessage(deliveryText(job));
  for (let i = job.sentParts; i < parts.length; i++) {
    const body = { content: parts[i]! };
    const tokenAlive = now() < job.target.expiresAt - TOKEN_SAFETY_MARGIN_MS;
    if (tokenAlive) {
      try {
        if (i === 0) await rest.editOriginal(job.target.applicationId, job.target.interactionToken, body);
        else await rest.followUp(job.target.applicationId, job.target.interactionToken, body);
      } catch (error) {
        // 401/404: the token died early (Discord revoked it); the channel still works.
        if (!(error instanceof DiscordApiError) || error.retryable || (error.status !== 401 && error.status !== 404)) throw error;
        await rest.channelMessage(job.target.channelId, body);
      }
    } else {
      await rest.channelMessage(job.target.channelId, body);
    }
    onSent(i + 1);
  }
}
