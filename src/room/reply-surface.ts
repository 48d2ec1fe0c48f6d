// What a room and an agent's task object need from the surface a request came from (Discord
// today): send a reply in parts, post a line or an approval prompt, close a prompt nobody
// answered, and read a message's attachments. Delivery targets and posted prompts are the
// surface's own data: the room stores them as JSON and never looks inside; the surface validates
// them when they come back. Discord's implementation is src/clients/discord/reply-surface.ts,
// plugged in by src/durable-objects.ts.
import type { Proposal } from "../memory/proposal-store.ts";
import type { SerializedError } from "../runtime/errors.ts";
import type { Attachment } from "../runtime/types.ts";

/** Where a turn's or task's messages go besides the RPC caller, as the surface wrote it. */
export interface DeliveryTarget {
  /** The surface that wrote it ("discord"). */
  readonly kind: string;
}

/** Where a surface posted an approval prompt, so it can be edited later. */
export type PostedPrompt = { readonly [field: string]: unknown };

export interface ReplyJob {
  reply: string | null;
  error: SerializedError | null;
  /** Messages of the reply already sent: a resumed delivery sends none twice. */
  sentParts: number;
}

export interface ApprovalPromptRequest {
  /** Who keeps the pending approval: the channel's room or the agent's task object. */
  asker: "room" | "task";
  approvalId: string;
  agentId: string;
  agentName: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The turn's or task's user id (`discord:<id>`): the only person whose answer counts. */
  requesterId: string | null;
  expiresAt: number;
}

/** A proposal the agent filed during a turn or task step, to show where that came from. */
export interface ProposalPromptRequest {
  agentName: string;
  proposal: Proposal;
}

export interface ReplySurface {
  /** Whether a person can be asked there (buttons) about a tool this agent's turn wants to run. */
  canAskApproval(target: DeliveryTarget, agentId: string): boolean;
  /** Sends the reply (or what went wrong) after the parts already sent, reporting each part. */
  sendReply(target: DeliveryTarget, job: ReplyJob, onSent: (parts: number) => void): Promise<void>;
  /** Posts one line (a task's progress). */
  postLine(target: DeliveryTarget, text: string): Promise<void>;
  /** Posts an Approve / Deny prompt; null when it went out but cannot be edited later. */
  postApprovalPrompt(
    target: DeliveryTarget,
    request: ApprovalPromptRequest,
  ): Promise<PostedPrompt | null>;
  /** Replaces a prompt's buttons with "nobody answered in time". */
  closeExpiredPrompt(posted: PostedPrompt, tool: string): Promise<void>;
  /** The target once a message went to it (later ones follow it); the same object if already so. */
  openingUsed(target: DeliveryTarget): DeliveryTarget;
  /** Where messages go after a person answered a prompt through `via` (the answer's own handle). */
  afterAnswer(target: DeliveryTarget, via: DeliveryTarget): DeliveryTarget;
  /** True when the surface refused for good: retrying cannot help. */
  isPermanentFailure(error: unknown): boolean;
  /**
   * Posts a proposal with Approve / Deny for whoever manages there (Discord: server managers,
   * owners in DMs). Optional: a surface without it leaves proposals to the API.
   */
  postProposal?(target: DeliveryTarget, request: ProposalPromptRequest): Promise<void>;
}

/** A message's attachments, copied in (once: a re-run finds them) and read for the model. */
export interface AttachmentIngest {
  read(attachments: Attachment[], keyPrefix: string): Promise<{ text: string; images: string[] }>;
}

/** What the worker plugs into a room: the surface replies go to, and its attachment ingest. */
export interface RoomPlatform {
  surface: ReplySurface;
  attachments: AttachmentIngest;
}
