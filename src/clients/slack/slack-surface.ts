// The room's reply surface on Slack (src/objects/shared/reply-surface.ts), for messages the bot read
// from the Events API or a slash command: every part goes into the message's thread (thread_ts),
// at most SLACK_MESSAGE_LIMIT characters each, and a resumed delivery sends none twice. Text is
// escaped by web-api.ts, so nothing the model writes can mention or notify. A turn's tool approval
// is a Block Kit message (blocks.ts) answered through POST /slack/interactions, updated when
// answered or expired. Slack has no typing indicator for bots (the Events API app cannot show
// one), so there is no startTyping. Tasks' questions are posted as plain text (no Answer button).
import { createMessageSurface } from "../chat/message-surface.ts";
import { z } from "zod";
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import type { PostedPrompt, ReplySurface } from "../../objects/shared/reply-surface.ts";
import { approvalPromptFields } from "../chat/approval-text.ts";
import { approvalOutcomeBlocks, approvalPromptBlocks, canRouteApproval } from "./blocks.ts";
import { createSlackWebApi, SlackApiError, type SlackWebApi, slackReplyParts } from "./web-api.ts";

export const SLACK_MESSAGE_KIND = "slack-message";

const SlackId = z.string().regex(/^[A-Z0-9]{2,32}$/);
const Ts = z.string().regex(/^\d{1,12}\.\d{1,9}$/);

/** A message to answer, as the room stores it (checked on the way back). */
export const SlackMessageDelivery = z.looseObject({
  kind: z.literal(SLACK_MESSAGE_KIND),
  channel: SlackId,
  /** The thread the answer goes into (the message's root, or the message itself); none: top level. */
  threadTs: Ts.optional(),
  /** The room the message is in: approval buttons carry it back (blocks.ts). */
  roomId: z.string().regex(/^slack:[A-Z0-9]{2,32}(?::\d{1,12}\.\d{1,9})?$/),
  /** A mention, a DM or a command: worth telling on failure. */
  addressed: z.boolean(),
});
export type SlackMessageDelivery = z.infer<typeof SlackMessageDelivery>;

/** A prompt the bot posted, so it can be updated when it expires. */
export const SlackPostedMessage = z.looseObject({
  via: z.literal("slack"),
  channel: SlackId,
  ts: Ts,
});
export type SlackPostedMessage = z.infer<typeof SlackPostedMessage>;

/** Whether a posted prompt is one of Slack's (for the surface router). */
export const isSlackPosted = (posted: PostedPrompt): boolean => posted.via === "slack";

/**
 * The Web API with the configured token and base, through the global fetch (tests intercept it).
 * `maxAttempts: 1` where Slack waits on the answer (a slash command's 3 s).
 */
export function slackWebApi(env: Env, options: { maxAttempts?: number } = {}): SlackWebApi {
  const slack = loadConfig(env).slack;
  return createSlackWebApi({
    token: slack?.botToken ?? "",
    baseUrl: slack?.apiBase,
    fetch: (input, init) => fetch(input, init),
    ...options,
  });
}

export function createSlackSurface(env: Env): ReplySurface {
  let api: SlackWebApi | null = null;
  const slack = () => (api ??= slackWebApi(env));
  return createMessageSurface<SlackMessageDelivery>({
    kind: SLACK_MESSAGE_KIND,
    parse: (target) => SlackMessageDelivery.parse(target),
    canRouteApproval: (agentId) => canRouteApproval(agentId, "room"),
    split: slackReplyParts,
    // Every part goes into the thread: Slack has no reply to a single message.
    async send(delivery, text) {
      await slack().postMessage(inThread(delivery, { text }));
    },
    async postApprovalPrompt(delivery, request) {
      const prompt = approvalPromptBlocks({
        ...approvalPromptFields(request),
        roomId: request.asker === "room" ? delivery.roomId : null,
        requesterName: null,
      });
      const sent = await slack().postMessage(
        inThread(delivery, { text: prompt.text, blocks: prompt.blocks }),
      );
      const posted: SlackPostedMessage = { via: "slack", channel: sent.channel, ts: sent.ts };
      return posted;
    },
    async closeExpiredPrompt(posted, tool) {
      const { channel, ts } = SlackPostedMessage.parse(posted);
      const outcome = approvalOutcomeBlocks(tool, "expired");
      await slack().update({ channel, ts, text: outcome.text, blocks: outcome.blocks });
    },
    // invalid_auth, channel_not_found, not_in_channel, msg_too_long…: Slack's final answers.
    isPermanentFailure: (error) => error instanceof SlackApiError && !error.retryable,
  });
}

function inThread<T extends { text: string }>(delivery: SlackMessageDelivery, message: T) {
  return {
    channel: delivery.channel,
    ...(delivery.threadTs ? { thread_ts: delivery.threadTs } : {}),
    ...message,
  };
}
