// The room's reply surface and attachment ingest on Discord (src/room/reply-surface.ts): replies,
// progress lines and Approve / Deny prompts go to the interaction that asked, then to the channel
// with the bot token once its token is (nearly) dead; files come from Discord's CDN into R2.
// What the room kept for us (a delivery target, a posted prompt) is validated before use.
import type { Env } from "../../env.ts";
import type {
  AttachmentIngest,
  DeliveryTarget,
  PostedPrompt,
  ReplySurface,
} from "../../room/reply-surface.ts";
import { approvalPrompt, approvalResultText, canRouteApproval } from "./approval.ts";
import { proposalPrompt } from "./proposal-prompt.ts";
import { attachmentPrompt, attachmentSource, ingestAttachments } from "./attachments.ts";
import {
  deliverToDiscord,
  DiscordDelivery,
  editPosted,
  PostedMessage,
  postForInteraction,
} from "./delivery.ts";
import { createDiscordRest, DiscordApiError, type DiscordRest } from "./rest.ts";

export function createDiscordSurface(env: Env): ReplySurface {
  let rest: DiscordRest | null = null;
  const discord = () =>
    (rest ??= createDiscordRest({
      baseUrl: env.DISCORD_API_BASE,
      botToken: env.DISCORD_BOT_TOKEN,
    }));
  return {
    canAskApproval: (target, agentId) => target.kind === "discord" && canRouteApproval(agentId),
    async sendReply(target, job, onSent) {
      await deliverToDiscord(
        discord(),
        { ...job, target: discordTarget(target) },
        Date.now,
        onSent,
      );
    },
    async postLine(target, text) {
      await postForInteraction(discord(), discordTarget(target), { content: text }, Date.now);
    },
    async postApprovalPrompt(target, request) {
      const body = approvalPrompt({
        target: request.asker,
        approvalId: request.approvalId,
        agentId: request.agentId,
        agentName: request.agentName,
        tool: request.tool,
        arguments: request.arguments,
        requesterDiscordId: /^discord:(\d{1,20})$/.exec(request.requesterId ?? "")?.[1] ?? null,
        expiresAt: request.expiresAt,
      });
      return await postForInteraction(discord(), discordTarget(target), body, Date.now);
    },
    async closeExpiredPrompt(posted: PostedPrompt, tool: string) {
      const body = { content: approvalResultText(tool, "expired"), components: [] };
      await editPosted(discord(), PostedMessage.parse(posted), body, Date.now);
    },
    openingUsed(target) {
      const current = discordTarget(target);
      return current.originalUsed ? target : { ...current, originalUsed: true };
    },
    afterAnswer(target: DeliveryTarget, via: DeliveryTarget) {
      // The prompt is the click's @original now: what follows goes out on the click's fresh token.
      const click = discordTarget(via);
      const { applicationId, interactionToken, expiresAt } = click;
      return {
        ...discordTarget(target),
        applicationId,
        interactionToken,
        expiresAt,
        originalUsed: true,
      };
    },
    isPermanentFailure: (error) => error instanceof DiscordApiError && !error.retryable,
    async postProposal(target, request) {
      // In the channel with the bot token: the interaction's deferred response stays the reply's.
      const { channelId } = discordTarget(target);
      await discord().channelMessage(
        channelId,
        proposalPrompt(request.proposal, request.agentName),
      );
    },
  };
}

/** Files attached to a Discord message, copied into R2 under the turn's prefix. */
export function createDiscordAttachmentIngest(env: Env): AttachmentIngest {
  return {
    async read(attachments, keyPrefix) {
      // Discord's hosts, through the guarded fetch.
      const results = await ingestAttachments(attachments, {
        bucket: env.MEDIA,
        keyPrefix,
        ...attachmentSource(env),
      });
      return attachmentPrompt(results);
    },
  };
}

function discordTarget(target: DeliveryTarget): DiscordDelivery {
  return DiscordDelivery.parse(target);
}
