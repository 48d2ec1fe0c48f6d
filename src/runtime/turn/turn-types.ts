// What goes into a turn and what comes out of it, plus the bounds that keep a turn finite.
// These shapes cross the worker -> Durable Object RPC boundary, so they hold plain data only.
import type { Attachment, Memory, MemoryType } from "../ports/memory.ts";
import type { ChatMessage, TokenUsage, ToolCall } from "../ports/model.ts";
import type { DelegationContext, ModelUsage, ToolOutput } from "../ports/tools.ts";
import type { Principal } from "../access/principal.ts";
import type { QueryEmbeddingOutcome } from "../ports/retrieval.ts";
import type { PlacePolicy } from "../access/place-policy.ts";

export interface TurnInput {
  turnId: string;
  agentId: string;
  roomId: string;
  userId: string;
  userName?: string;
  text: string;
  attachments: Attachment[];
  /** Which surface it came from: "rest", "discord", ... */
  source: string;
  /** A direct message to the agent (always answered). */
  isDirect: boolean;
  /** The surface says the agent was mentioned (always answered). */
  mentioned: boolean;
  /** The sender is a bot. */
  fromBot: boolean;
  /** Milliseconds since the epoch when the worker accepted it. */
  receivedAt: number;
  /** Another agent asked (ask_agent): the chain of agents that asked, for depth and cycles. */
  delegation?: DelegationContext;
  /**
   * Who the turn acts for (src/runtime/access/): the token, the platform member, or the agent
   * asking for its own conversation. Absent only in turns journalled before it was kept, which
   * are then allowed nothing beyond a reply.
   */
  principal?: Principal;
  /** What the place the message came from says (a chat server's or channel's settings). */
  place?: PlacePolicy;
}

export interface ToolCallRecord {
  id: string;
  name: string;
  /** Parsed arguments, or the raw text when it was not valid JSON. */
  arguments: unknown;
  ok: boolean;
  /** What the model saw (truncated to MAX_TOOL_RECORD_CHARS in the record). */
  output: string;
  cached: boolean;
  durationMs: number;
  /** Which model asked for it. */
  model: string;
  /** For a tool that needs a person's approval: what they decided. */
  approval?: ApprovalDecision;
  /** Another agent's model use answering this call (ask_agent, delegate_task). */
  usage?: ModelUsage;
}

/** A person's answer to a tool call that needs approval; `expired` when nobody answered in time. */
export type ApprovalDecision = "approved" | "denied" | "expired";

/**
 * Where the tool loop stopped to ask a person: everything needed to carry on exactly there, as
 * plain data (it is journalled and survives eviction).
 */
export interface ToolLoopCheckpoint {
  messages: ChatMessage[];
  /** Index in `messages` where this turn's own messages begin (for failover). */
  turnStart: number;
  /** Model rounds done so far. */
  step: number;
  consecutiveFailures: number;
  records: ToolCallRecord[];
  /** Calls of the last model response not yet run; the first is the one waiting for approval. */
  pendingCalls: ToolCall[];
  /** The model that asked for the pending calls, and its place in the fallback list. */
  model: string;
  modelIndex: number;
  usage: TurnUsage;
  /** What the prompt held from long-term memory, for the reply after the pause (absent in older checkpoints). */
  memories?: UsedMemory[];
}

/** `respond` stopped at a tool call that needs a person's approval. */
export interface TurnPause {
  turnId: string;
  status: "awaiting_approval";
  tool: string;
  /** The call's arguments as validated against the tool's schema. */
  arguments: Record<string, unknown>;
  checkpoint: ToolLoopCheckpoint;
}

/** A memory that went into the turn's prompt, as a watcher of the turn sees it. */
export interface UsedMemory {
  id: string;
  type: MemoryType;
  text: string;
  /** The retrieval's fused score (0..1); null for what is known about the person (not ranked). */
  score: number | null;
}

/**
 * Someone watching the turn as it runs (a streaming client). Plain callbacks that must not throw;
 * nothing the turn does depends on them, so a watcher that goes away changes nothing.
 */
export interface TurnObserver {
  /** The agent decided to answer; the reply is being written (a surface may show it typing). */
  replying?(): void;
  /** The long-term memories put into the prompt (possibly none), before the first model call. */
  memories?(used: UsedMemory[]): void;
  /** A piece of text as the model writes it (any round, also one that then calls tools). */
  text?(delta: string): void;
  /** The model called a tool; it is about to run. */
  toolCall?(call: { id: string; name: string; arguments: unknown }): void;
  /** A tool call finished (or was refused). */
  toolResult?(record: ToolCallRecord): void;
}

export interface RespondOptions {
  /** Told what happens as the turn runs (streaming replies). */
  observer?: TurnObserver;
  /** The surface can ask a person (Discord buttons): a tool needing approval pauses the turn. */
  canAskApproval?: boolean;
  /** What the turn's attachments add to the person's message (read and checked by the surface). */
  attachments?: { text: string; images: string[] };
  /**
   * The caller's work for a turn that goes on: connect the tools the agent may use, read the
   * attachments (its answer takes the place of `attachments`). Called once the respond rules,
   * which are decided here and nowhere else, have not declined the message; a declined one
   * costs no tool connection and no attachment read.
   */
  prepare?: () => Promise<{ text: string; images: string[] } | undefined>;
  /** Carry on from a pause with the person's decision on its pending call. */
  resume?: { checkpoint: ToolLoopCheckpoint; decision: ApprovalDecision };
  /**
   * Work the first model request must wait for, started by the caller alongside this turn's own
   * reads (the inbound message's write, a check that the character is current). A rejection ends
   * the turn with its error before any model request.
   */
  beforeModel?: Promise<unknown>;
  /**
   * The turn's journal of tool calls: what earlier, interrupted attempts ran (an output, or
   * "started" for a call that never finished), and where to record more ("started" before a
   * call runs, its output after).
   */
  toolOutputs?: {
    remembered: ReadonlyMap<string, ToolOutput | "started">;
    record: (key: string, entry: ToolOutput | "started") => void;
  };
}

export type StopReason = "completed" | "max_steps" | "max_failures" | "timeout" | "ignored";

export interface TurnUsage extends TokenUsage {
  modelCalls: number;
  /**
   * What other agents spent answering this turn's or task's requests (ask_agent, delegate_task):
   * reported here, counted against their own daily ceilings. Absent when nobody was asked.
   */
  delegated?: ModelUsage;
}

export interface TurnOutcome {
  turnId: string;
  status: "replied" | "ignored";
  reply: { text: string } | null;
  /** What the agent did: "REPLY" and the tools that succeeded, in order, without repeats. */
  actions: string[];
  toolCalls: ToolCallRecord[];
  usage: TurnUsage;
  /** The model that produced the final answer (null when none was called). */
  model: string | null;
  stopReason: StopReason;
  /** What the prompt held from long-term memory (empty when nothing was retrieved or the turn was ignored). */
  memories: UsedMemory[];
  /** Ids of the stored inbound and reply messages. */
  messageId: string;
  replyId: string | null;
  /** The reply as it will be stored; the room persists it after answering (see afterReply). */
  replyMemory: Memory | null;
  /** Model tokens this run spent, counted against the daily ceiling in afterReply. */
  spentTokens?: number;
  /**
   * What this run spent, split as its usage record keeps it (afterReply records it). Absent in
   * outcomes journalled before it was kept: those record spentTokens as input tokens.
   */
  spent?: Spent;
  /** How the wait for the query's embedding went (absent: no retrieval, or journalled before). */
  queryEmbedding?: QueryEmbeddingOutcome;
  /**
   * What an ignored turn still says (a place's budget is used: said once a day per member). Sent
   * as the reply is; never stored as the agent's message.
   */
  notice?: string;
}

/** Tokens and model calls of one run of a turn (a resumed turn's part after the pause). */
export interface Spent {
  inputTokens: number;
  /** Of `inputTokens`, read from the provider's prompt cache; absent in outcomes journalled before. */
  cachedInputTokens?: number;
  outputTokens: number;
  modelCalls: number;
}

export interface RuntimeLimits {
  maxSteps: number;
  maxConsecutiveFailures: number;
  toolTimeoutMs: number;
  providerTimeoutMs: number;
  turnTimeoutMs: number;
  historyTokens: number;
  historyFetchLimit: number;
  /** Prompt budget (MAX_CONTEXT_TOKENS); long-term memory sections take shares of it. */
  contextTokens: number;
  maxToolResultChars: number;
  evaluatorTimeoutMs: number;
}

export const DEFAULT_LIMITS: RuntimeLimits = {
  maxSteps: 6,
  maxConsecutiveFailures: 3,
  toolTimeoutMs: 15_000,
  providerTimeoutMs: 2_000,
  turnTimeoutMs: 120_000,
  historyTokens: 3_000,
  historyFetchLimit: 60,
  contextTokens: 8_000,
  maxToolResultChars: 16_000,
  evaluatorTimeoutMs: 10_000,
};

/** Tool outputs kept in the turn record (and returned by the API) are cut to this length. */
export const MAX_TOOL_RECORD_CHARS = 2_000;
