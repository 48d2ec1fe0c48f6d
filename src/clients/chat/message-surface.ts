// One reply surface for the platforms whose rooms answer a message read from a webhook (Telegram,
// Slack): the stored target is checked once, at the surface's edge, and each platform writes
// only against its own typed target: how a part is sent, its approval prompt, typing. The shared
// rules: a resumed reply sends no part twice; an error is told only where the bot was addressed;
// an ignored turn says nothing; lines and questions are plain messages in parts.
import type {
  ApprovalPromptRequest,
  DeliveryTarget,
  PostedPrompt,
  ReplyJob,
  ReplySurface,
} from "../../objects/shared/reply-surface.ts";
import { memberErrorText } from "./member-error.ts";

/** A stored target, once checked: at least whether the bot was addressed. */
export interface MessageDelivery {
  /** A mention, a reply to the bot, a command or a private chat: worth telling on failure. */
  addressed: boolean;
}

export interface MessageSurfaceOptions<T extends MessageDelivery> {
  /** The target kind this surface writes (`telegram-message`, `slack-message`). */
  kind: string;
  /** The one check of a target the room kept (zod): throws when it is not this platform's. */
  parse: (target: DeliveryTarget) => T;
  /** Whether a press on an approval for this agent could be routed back to its room. */
  canRouteApproval: (agentId: string) => boolean;
  /** A reply cut into the platform's messages. */
  split: (text: string) => string[];
  /** Sends one message; `first` is the first part, which answers the message where it can. */
  send: (delivery: T, text: string, first: boolean) => Promise<void>;
  postApprovalPrompt: (delivery: T, request: ApprovalPromptRequest) => Promise<PostedPrompt>;
  closeExpiredPrompt: (posted: PostedPrompt, tool: string) => Promise<void>;
  /** The platform's final refusals: retrying cannot help. */
  isPermanentFailure: (error: unknown) => boolean;
  /** What a failed turn says, when the platform words a kind of failure its own way. */
  errorText?: (error: NonNullable<ReplyJob["error"]>) => string | null;
  startTyping?: (delivery: T) => () => void;
}

export function createMessageSurface<T extends MessageDelivery>(
  options: MessageSurfaceOptions<T>,
): ReplySurface {
  const { parse, split, send } = options;
  const postParts = async (delivery: T, text: string, from = 0, onSent?: (n: number) => void) => {
    const parts = split(text);
    for (let i = from; i < parts.length; i++) {
      await send(delivery, parts[i]!, i === 0);
      onSent?.(i + 1);
    }
  };
  const replyText = (job: ReplyJob): string => {
    if (job.error) return options.errorText?.(job.error) ?? memberErrorText(job.error);
    return job.reply?.trim() || "…(I have nothing to add.)";
  };
  return {
    // Only a room's turn: a press is routed back to the room the prompt was posted in.
    canAskApproval: (target, agentId) =>
      target.kind === options.kind && options.canRouteApproval(agentId),
    async sendReply(target, job, onSent) {
      const delivery = parse(target);
      if (job.ignored || (job.error && !delivery.addressed)) return;
      await postParts(delivery, replyText(job), job.sentParts, onSent);
    },
    postLine: (target, text) => postParts(parse(target), text),
    postApprovalPrompt: (target, request) => options.postApprovalPrompt(parse(target), request),
    closeExpiredPrompt: (posted, tool) => options.closeExpiredPrompt(posted, tool),
    async postQuestion(target, request) {
      await postParts(parse(target), `${request.agentName} asks: ${request.question}`);
      return null;
    },
    async closeExpiredQuestion() {},
    openingUsed: (target) => target,
    afterAnswer: (target) => target,
    isPermanentFailure: options.isPermanentFailure,
    ...(options.startTyping
      ? { startTyping: (target: DeliveryTarget) => options.startTyping!(parse(target)) }
      : {}),
  };
}
