// Sends a finished turn to the Discord interaction that asked for it: the first message edits the
// deferred response, the rest are follow-ups; once the interaction token is (nearly) expired the
// remaining messages go to the channel with the bot token. Progress is reported after every
// message, so a delivery resumed after an eviction sends none twice. The delivery target and the
// posted message are kept by the room as opaque JSON: their shapes are checked here on the way back.
import { memberErrorText } from "../chat/member-error.ts";
import { z } from "zod";
import type { SerializedError } from "../../runtime/util/errors.ts";
import {
  DiscordApiError,
  INTERACTION_TOKEN_LIFETIME_MS,
  TOKEN_SAFETY_MARGIN_MS,
  type DiscordMessageBody,
  type DiscordRest,
} from "./rest.ts";
import { splitMessage } from "../chat/split.ts";

/** A Discord interaction to answer: its token edits the deferred response and sends follow-ups. */
export const DiscordDelivery = z.looseObject({
  kind: z.literal("discord"),
  applicationId: z.string(),
  interactionToken: z.string(),
  channelId: z.string(),
  /** When the interaction token stops working (15 minutes after Discord created it). */
  expiresAt: z.number(),
  /** The deferred response already holds something (an approval prompt): the reply follows it. */
  originalUsed: z.boolean().optional(),
  /** Answered at once, not deferred (the server's filter declined /chat's message): a declined turn sends nothing. */
  answered: z.boolean().optional(),
});
export type DiscordDelivery = z.infer<typeof DiscordDelivery>;

/** Where the answer to an interaction goes; Discord's clock started a little before we saw it. */
export function interactionDelivery(
  interaction: { application_id: string; token: string },
  channelId: string,
  now: number,
): DiscordDelivery {
  return {
    kind: "discord",
    applicationId: interaction.application_id,
    interactionToken: interaction.token,
    channelId,
    expiresAt: now + INTERACTION_TOKEN_LIFETIME_MS - 5_000,
  };
}

export interface DeliveryJob {
  target: DiscordDelivery;
  reply: string | null;
  error: SerializedError | null;
  /** Messages already sent. */
  sentParts: number;
  /** The turn was declined (its rules said no before the model). */
  ignored?: boolean;
}

/** What the user sees: the reply, or what went wrong (error messages carry no secrets). */
export function deliveryText(job: Pick<DeliveryJob, "reply" | "error">): string {
  if (job.error) return memberErrorText(job.error);
  const reply = job.reply?.trim();
  return reply ? reply : "…(I have nothing to add.)";
}

export async function deliverToDiscord(
  rest: DiscordRest,
  job: DeliveryJob,
  now: () => number,
  onSent: (parts: number) => void,
): Promise<void> {
  if (job.ignored && job.target.answered) return;
  const parts = splitMessage(deliveryText(job));
  for (let i = job.sentParts; i < parts.length; i++) {
    // The deferred response holds an approval prompt once one was asked: the reply follows it.
    await post(rest, job.target, { content: parts[i]! }, i === 0 && !job.target.originalUsed, now);
    onSent(i + 1);
  }
}

/** Where a posted message is, so it can be edited later (an approval prompt, when it expires). */
export const PostedMessage = z.discriminatedUnion("via", [
  z.looseObject({
    via: z.literal("webhook"),
    applicationId: z.string(),
    token: z.string(),
    messageId: z.string(),
    tokenExpiresAt: z.number(),
  }),
  z.looseObject({ via: z.literal("channel"), channelId: z.string(), messageId: z.string() }),
]);
export type PostedMessage = z.infer<typeof PostedMessage>;

/**
 * Posts one message for the interaction: into the deferred response while it is unused, else as a
 * follow-up; with the bot token in the channel once the interaction token is (nearly) dead.
 */
export async function postForInteraction(
  rest: DiscordRest,
  target: DiscordDelivery,
  body: DiscordMessageBody,
  now: () => number,
): Promise<PostedMessage | null> {
  return post(rest, target, body, !target.originalUsed, now);
}

/** Edits a message posted by postForInteraction; false when it can no longer be reached. */
export async function editPosted(
  rest: DiscordRest,
  posted: PostedMessage,
  body: DiscordMessageBody,
  now: () => number,
): Promise<boolean> {
  if (posted.via === "channel") {
    await rest.editChannelMessage(posted.channelId, posted.messageId, body);
    return true;
  }
  if (now() >= posted.tokenExpiresAt - TOKEN_SAFETY_MARGIN_MS) return false;
  if (posted.messageId === "@original")
    await rest.editOriginal(posted.applicationId, posted.token, body);
  else await rest.editFollowUp(posted.applicationId, posted.token, posted.messageId, body);
  return true;
}

async function post(
  rest: DiscordRest,
  target: DiscordDelivery,
  body: DiscordMessageBody,
  useOriginal: boolean,
  now: () => number,
): Promise<PostedMessage | null> {
  const tokenAlive = now() < target.expiresAt - TOKEN_SAFETY_MARGIN_MS;
  if (tokenAlive) {
    try {
      const webhook = {
        via: "webhook" as const,
        applicationId: target.applicationId,
        token: target.interactionToken,
        tokenExpiresAt: target.expiresAt,
      };
      if (useOriginal) {
        await rest.editOriginal(target.applicationId, target.interactionToken, body);
        return { ...webhook, messageId: "@original" };
      }
      const sent = await rest.followUp(target.applicationId, target.interactionToken, body);
      return sent.id ? { ...webhook, messageId: sent.id } : null;
    } catch (error) {
      // 401/404: the token died early (Discord revoked it); the channel still works.
      if (
        !(error instanceof DiscordApiError) ||
        error.retryable ||
        (error.status !== 401 && error.status !== 404)
      )
        throw error;
    }
  }
  const sent = await rest.channelMessage(target.channelId, body);
  return sent.id ? { via: "channel", channelId: target.channelId, messageId: sent.id } : null;
}
