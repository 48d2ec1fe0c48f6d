// The room's reply surface and attachment ingest on Discord (src/objects/shared/reply-surface.ts): replies,
// progress lines, Approve / Deny prompts and tasks' questions go to the interaction that asked, then to the channel
// with the bot token once its token is (nearly) dead; for a message read on the Gateway they are
// replies to that message, with the typing indicator while the turn runs. Files come from
// Discord's CDN into R2. What the room kept for us (a target, a posted prompt) is validated first.
import type { Env } from "../../env.ts";
import type {
  AttachmentIngest,
  DeliveryTarget,
  PostedPrompt,
  ReplySurface,
} from "../../objects/shared/reply-surface.ts";
import { approvalPromptFields } from "../chat/approval-text.ts";
import { approvalPrompt, approvalResultText, canRouteApproval } from "./approval.ts";
import { proposalPrompt } from "./proposal-prompt.ts";
import { attachmentPrompt } from "../chat/attachment-prompt.ts";
import { attachmentSource, ingestAttachments } from "./attachments.ts";
import {
  deliverToDiscord,
  DiscordDelivery,
  editPosted,
  PostedMessage,
  postForInteraction,
} from "./interaction-delivery.ts";
import {
  createDiscordRest,
  DiscordApiError,
  type DiscordMessageBody,
  type DiscordRest,
} from "./rest.ts";
import { createSharedLimiter } from "./rest-limiter.ts";
import {
  deliverMessageReply,
  DiscordMessageDelivery,
  keepTyping,
  postReply,
} from "./message-delivery.ts";
import { errorField, log } from "../../log.ts";
import { questionPrompt, questionResultText } from "./task-input.ts";

export function createDiscordSurface(env: Env): ReplySurface {
  let rest: DiscordRest | null = null;
  const discord = () =>
    (rest ??= createDiscordRest({
      baseUrl: env.DISCORD_API_BASE,
      botToken: env.DISCORD_BOT_TOKEN,
      limiter: createSharedLimiter(env),
    }));
  /** A message where the target is: a reply to a Gateway message, else on the interaction. */
  const post = async (target: DeliveryTarget, body: DiscordMessageBody) =>
    target.kind === "discord-message"
      ? await postReply(discord(), DiscordMessageDelivery.parse(target), body)
      : await postForInteraction(discord(), discordTarget(target), body, Date.now);
  return {
    canAskApproval: (target, agentId) =>
      (target.kind === "discord" || target.kind === "discord-message") && canRouteApproval(agentId),
    async sendReply(target, job, onSent) {
      if (target.kind === "discord-message") {
        const message = DiscordMessageDelivery.parse(target);
        const replyJob = { ...job, target: message, ignored: job.ignored === true };
        return await deliverMessageReply(discord(), replyJob, onSent);
      }
      await deliverToDiscord(
        discord(),
        { ...job, target: discordTarget(target) },
        Date.now,
        onSent,
      );
    },
    async postLine(target, text) {
      await post(target, { content: text });
    },
    async postApprovalPrompt(target, request) {
      const body = approvalPrompt({
        ...approvalPromptFields(request),
        requesterDiscordId: discordUserId(request.requesterId),
      });
      return await post(target, body);
    },
    async closeExpiredPrompt(posted: PostedPrompt, tool: string) {
      const body = { content: approvalResultText(tool, "expired"), components: [] };
      await editPosted(discord(), PostedMessage.parse(posted), body, Date.now);
    },
    async postQuestion(target, request) {
      const body = questionPrompt({
        ...request,
        requesterDiscordId: discordUserId(request.requesterId),
      });
      return await postForInteraction(discord(), discordTarget(target), body, Date.now);
    },
    async closeExpiredQuestion(posted: PostedPrompt) {
      const body = { content: questionResultText("expired"), components: [] };
      await editPosted(discord(), PostedMessage.parse(posted), body, Date.now);
    },
    openingUsed(target) {
      // A Gateway message has no deferred response to fill: every message is its own.
      if (target.kind === "discord-message") return target;
      const current = discordTarget(target);
      return current.originalUsed ? target : { ...current, originalUsed: true };
    },
    afterAnswer(target: DeliveryTarget, via: DeliveryTarget) {
      // The click edits the prompt itself; the reply still answers the person's message.
      if (target.kind === "discord-message") return target;
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
    startTyping(target) {
      if (target.kind !== "discord-message") return null;
      const { channelId } = DiscordMessageDelivery.parse(target);
      return keepTyping(discord(), channelId, (error) =>
        log.warn("discord_typing_failed", { channelId, error: errorField(error) }),
      );
    },
    async postProposal(target, request) {
      // In the channel with the bot token: the interaction's deferred response stays the reply's
      // (a Gateway message's reply likewise follows on its own).
      const { channelId } =
        target.kind === "discord-message"
          ? DiscordMessageDelivery.parse(target)
          : discordTarget(target);
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

/** The snowflake of a `discord:<id>` user id, if it is one. */
function discordUserId(userId: string | null): string | null {
  return /^discord:(\d{1,20})$/.exec(userId ?? "")?.[1] ?? null;
}

function discordTarget(target: DeliveryTarget): DiscordDelivery {
  return DiscordDelivery.parse(target);
}
