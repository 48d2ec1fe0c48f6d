// What a room and an agent's task object need from the surface a request came from (Discord
// today): send a reply in parts, post a line, an approval prompt or a task's question, close a
// prompt nobody answered, and read a message's attachments. Delivery targets and posted prompts are the
// surface's own data: the room stores them as JSON and never looks inside; the surface validates
// them when they come back. Discord's implementation is src/clients/discord/discord-surface.ts,
// plugged in by src/durable-objects.ts.
import type { Proposal } from "../../db/stores/proposal-store.ts";
import type { SerializedError } from "../../runtime/util/errors.ts";
import type { Attachment } from "../../runtime/ports/memory.ts";

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
  /** The agent chose not to answer (its respond rules): a surface that was not asked sends nothing. */
  ignored?: boolean;
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

/** A `needs_input` task's question, posted where the task reports, answerable by its requester. */
export interface QuestionPromptRequest {
  inputId: string;
  agentId: string;
  agentName: string;
  question: string;
  /** The task's requester (`discord:<id>`): the only person whose answer counts. */
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
  /** Posts a task's question with an Answer button; null when it cannot be edited later. */
  postQuestion(
    target: DeliveryTarget,
    request: QuestionPromptRequest,
  ): Promise<PostedPrompt | null>;
  /** Replaces a question's button with "nobody answered in time: the task was cancelled". */
  closeExpiredQuestion(posted: PostedPrompt): Promise<void>;
  /** The target once a message went to it (later ones follow it); the same object if already so. */
  openingUsed(target: DeliveryTarget): DeliveryTarget;
  /** Where messages go after a person answered a prompt through `via` (the answer's own handle). */
  afterAnswer(target: DeliveryTarget, via: DeliveryTarget): DeliveryTarget;
  /** True when the surface refused for good: retrying cannot help. */
  isPermanentFailure(error: unknown): boolean;
  /**
   * Shows that the agent is writing (Discord's typing indicator) until the returned function is
   * called; absent, or null for a target, where the surface has no such thing. Best effort.
   */
  startTyping?(target: DeliveryTarget): (() => void) | null;
  /**
   * Posts a proposal with Approve / Deny for whoever manages there (Discord: server managers,
   * owners in DMs). Optional: a surface without it leaves proposals to the API.
   */
  postProposal?(target: DeliveryTarget, request: ProposalPromptRequest): Promise<void>;
}

/** A message's attachments, copied in (once: a re-run finds them) and read for the model. */
export interface AttachmentIngest {
  read(attachments: Attachment[], keyPrefix: string): Promise<{ text: string; images: string[] }>;
  /**
   * Turns a voice note among the attachments into text, before the runtime sees the message; null
   * when there is none (left). `attachments` replaces the message's: the voice note's reference
   * becomes one no second call transcribes again (its copy in R2 once stored).
   */
  transcribe?(attachments: Attachment[], keyPrefix: string): Promise<VoiceTranscript | null>;
}

/** What became of a message's voice note: its transcript, or why there is none. */
export type VoiceTranscript =
  | { ok: true; transcript: string; attachments: Attachment[] }
  | { ok: false; reason: string; attachments: Attachment[] };

/** What the worker plugs into a room: the surface replies go to, and its attachment ingest. */
export interface RoomPlatform {
  surface: ReplySurface;
  attachments: AttachmentIngest;
}
