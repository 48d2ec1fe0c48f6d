// The runtime's vocabulary and the small interfaces it depends on (Model, MemoryStore, ToolHost,
// Clock, EventSink). Platform code adapts bindings to these at the edges, so everything under
// src/runtime/ runs and is tested without workerd, D1 or a real model.
import type { Principal } from "./access/principal.ts";

// ---- memories -------------------------------------------------------------------------------

export type MemoryType =
  | "message"
  | "fact"
  | "description"
  | "lore"
  | "document"
  | "fragment"
  | "summary";

export interface Attachment {
  url: string;
  contentType?: string;
  title?: string;
}

export interface MemoryContent {
  text: string;
  /** Who said it: "user" or "agent" for messages. */
  role?: "user" | "agent";
  source?: string;
  userName?: string;
  actions?: string[];
  attachments?: Attachment[];
  inReplyTo?: string;
}

export interface Memory {
  id: string;
  type: MemoryType;
  agentId: string;
  roomId: string | null;
  userId: string | null;
  /** A fragment's document (knowledge); null or absent otherwise. */
  parentId?: string | null;
  content: MemoryContent;
  metadata: Record<string, unknown>;
  /** Milliseconds since the epoch. */
  createdAt: number;
}

// ---- model ----------------------------------------------------------------------------------

export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model produced it; parsed and validated by the tool loop. */
  arguments: string;
}

export type ChatMessage =
  | { role: "system"; content: string }
  | {
      role: "user";
      content: string;
      name?: string /** Image URLs (https or data:) the model should look at. */;
      images?: string[];
    }
  | { role: "assistant"; content: string | null; toolCalls?: ToolCall[] }
  | { role: "tool"; toolCallId: string; content: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  temperature?: number;
  maxOutputTokens?: number;
  signal?: AbortSignal;
  /**
   * Stream the answer: called with each piece of text as the model writes it. The response is
   * the same as without it. A retried attempt streams again from the start (the final
   * ChatResponse is what counts).
   */
  onText?: (delta: string) => void;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatResponse {
  model: string;
  text: string | null;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  finishReason: string | null;
}

/**
 * One chat completion against one named model, with the client's own retries already applied.
 * Throws `ModelCallError` (see errors.ts) when the call finally fails.
 */
export interface ChatModel {
  readonly backend: "openai" | "workers-ai";
  complete(request: ChatRequest): Promise<ChatResponse>;
}

/** The models a turn may use: primary first, then failover candidates in order. */
export interface ModelChoice {
  primary: string;
  fallbacks: string[];
  small: string;
}

// ---- tools ----------------------------------------------------------------------------------

export interface ToolContext {
  agentId: string;
  roomId: string;
  userId: string;
  turnId: string;
  /** Stable id of this call inside the turn (for idempotent side effects). */
  callId: string;
  signal: AbortSignal;
  /** Set when another agent asked for this turn or task (agent-to-agent delegation). */
  delegation?: DelegationContext;
  /** Who the turn or task acts for (src/runtime/access/): tools that reach further ask with it. */
  principal?: Principal;
}

/** Who asked, agent by agent: bounds the depth of a delegation chain and refuses cycles. */
export interface DelegationContext {
  /** The agents that asked, the first (the one a person or a schedule started) first. */
  chain: string[];
}

/** Model use counted in calls and tokens (a turn's, a task's, or another agent's on our behalf). */
export interface ModelUsage extends TokenUsage {
  modelCalls: number;
}

export type ToolOutput =
  /** `usage`: tokens another agent spent answering (counted against that agent's ceiling). */
  | { ok: true; content: string; data?: unknown; usage?: ModelUsage }
  | { ok: false; error: string; usage?: ModelUsage };

export interface ToolDefinition extends ToolSpec {
  /** Where it comes from: "builtin" or "mcp:<server>". */
  source: string;
  /** A description written outside this deployment (an MCP server's): prompts quote it as data. */
  remoteDescription?: string;
  timeoutMs?: number;
  requiresApproval?: boolean;
  /**
   * The loop does not run it: it pauses and hands the call to its host, which answers later
   * (delegate_task starts another agent's task; the step carries on with that task's result).
   */
  deferred?: boolean;
}

export interface ToolHost {
  list(): Promise<ToolDefinition[]>;
  call(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput>;
  /** Where remote tools come from and whether each source is usable now (MCP servers). */
  sources?(): ToolSourceStatus[];
}

export interface ToolSourceStatus {
  /** e.g. "MCP server docs". */
  name: string;
  state: "ready" | "authenticating" | "down" | "failed";
  tools: number;
  /** Why it is not ready. */
  detail?: string;
}

// ---- storage --------------------------------------------------------------------------------

export interface InboundMessage {
  memory: Memory;
  userName?: string;
  source: string;
}

export interface MemoryStore {
  /** Stores the inbound message with its user, room and participant rows. Idempotent by id. */
  saveInbound(message: InboundMessage): Promise<void>;
  /** Stores one memory. Idempotent by id: a second save of the same id changes nothing. */
  saveMemory(memory: Memory): Promise<void>;
  /** Newest first, at most `limit`, optionally only those created before `beforeMs`. */
  recentMessages(query: {
    agentId: string;
    roomId: string;
    limit: number;
    beforeMs?: number;
  }): Promise<Memory[]>;
  /**
   * Counts one interaction of a user with the agent; a repeat for the same turn is ignored.
   * Returns the user's interaction count afterwards.
   */
  recordInteraction(input: {
    agentId: string;
    userId: string;
    turnId: string;
    at: number;
  }): Promise<number>;
  /** Stores a memory that replaces an earlier version with the same id (a user's profile). */
  upsertMemory(memory: Memory): Promise<void>;
  /** A room's messages created after `afterMs`, oldest first, at most `limit`. */
  roomMessagesAfter(query: {
    agentId: string;
    roomId: string;
    afterMs: number;
    limit: number;
  }): Promise<Memory[]>;
  /** The newest summary of a room, if any. */
  latestSummary(query: { agentId: string; roomId: string }): Promise<Memory | null>;
}

// ---- embeddings and vectors ------------------------------------------------------------------

/** Turns text into unit-length vectors of a fixed dimension. */
export interface Embedder {
  /** Which embedder, e.g. "local:hash-v1", "openai:text-embedding-3-small". */
  readonly id: string;
  readonly kind: "openai" | "workers-ai" | "local";
  readonly dimensions: number;
  /** Most texts one call may carry; callers batch to this. */
  readonly maxBatch: number;
  /** One L2-normalized vector per text, in order. Throws when the service fails or a size is wrong. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /**
   * For an embedder chosen by what the vector index holds: settles which one it is. Callers that
   * read `id` or `dimensions` before embedding anything await it first.
   */
  ready?(): Promise<void>;
}

/** What a vector is filtered by; mirrors its memory's columns. */
export interface VectorMetadata {
  agentId: string;
  type: MemoryType;
  roomId: string | null;
  userId: string | null;
}

export interface VectorRecord {
  /** The memory's id (at most 64 characters, Vectorize's id limit). */
  id: string;
  values: Float32Array;
  metadata: VectorMetadata;
}

export interface VectorQuery {
  agentId: string;
  vector: Float32Array;
  topK: number;
  types?: MemoryType[];
  roomId?: string;
  userId?: string;
}

export interface VectorMatch {
  id: string;
  /** Cosine similarity, -1..1. */
  score: number;
}

/**
 * Nearest-neighbour search over memory vectors, one namespace per agent. Writes may become
 * visible to queries later (Vectorize is eventually consistent): callers never rely on
 * read-after-write.
 */
export interface VectorIndex {
  readonly kind: "vectorize" | "local";
  /** The index's dimension, or null when it has none yet (an empty local index). */
  dimensions(): Promise<number | null>;
  /** Throws `DimensionMismatchError` if a vector's length is not the index's dimension. */
  upsert(records: VectorRecord[]): Promise<void>;
  /**
   * An index kept in D1 (the local one): `upsert`, and the records' memories marked embedded at
   * `at`, in one transaction. Without it, the caller marks them once `upsert` has returned.
   */
  upsertEmbedded?(records: VectorRecord[], at: number): Promise<void>;
  query(query: VectorQuery): Promise<VectorMatch[]>;
  /**
   * The same query in two stages, for an index that ranks in this isolate (the local one): `early`
   * at once, from what it holds already, best first (a caller reads those memories' rows while the
   * index catches up), and `final`, what `query` answers. null when it holds nothing to rank yet
   * (then `query`). Not every `early` match survives into `final`, nor the other way round.
   */
  queryStaged?(query: VectorQuery): { early: VectorMatch[]; final: Promise<VectorMatch[]> } | null;
  delete(agentId: string, ids: string[]): Promise<void>;
  /**
   * Search found these ids' memories gone: an index that caches (the local one) stops returning
   * them. Their stored vectors went with their memories; nothing is written.
   */
  forget?(agentId: string, ids: string[]): void;
}

// ---- retrieval ------------------------------------------------------------------------------

export interface RetrievalQuery {
  agentId: string;
  text: string;
  types?: MemoryType[];
  roomId?: string;
  userId?: string;
  /** With `userId`: also facts any user shared. */
  includeShared?: boolean;
  limit: number;
  /**
   * Memories the prompt already shows (the recent history): never results, neither as hits nor as
   * neighbours, and left out before the legs keep their best candidates, so `limit` counts only
   * what is new to the prompt.
   */
  excludeIds?: string[];
  /**
   * Minimum vector similarity (0..1); memories not embedded yet are kept when their text matches,
   * and the neighbouring messages of a hit that passes come with it.
   */
  threshold?: number;
}

export interface RetrievedMemory {
  memory: Memory;
  /** Fused rank score, 0..1 (1 = first by both text and vector). */
  score: number;
  /** Cosine similarity to the query, when the vector leg found it. */
  similarity: number | null;
  /** "neighbour": the message before or after a hit in its room (neighbour expansion). */
  matchedBy: Array<"text" | "vector" | "neighbour">;
  embedded: boolean;
}

/** Wall time per leg of one search, in ms: embed the query, full text, vectors, then read the best hits' rows and neighbours. */
export type SearchTimings = Partial<Record<"embed" | "text" | "vector" | "load", number>>;

/** Hybrid (full-text + vector) search over one agent's memories, and what it knows about a person. */
export interface MemoryRetriever {
  /** The query's vector, or null when no vector search is possible (then text search alone runs). */
  embedQuery(text: string): Promise<Float32Array | null>;
  /**
   * `vector` from embedQuery (so a turn embeds its query once); undefined embeds it here.
   * `timings`, when given, receives each leg's wall time in ms (for Server-Timing).
   */
  search(
    query: RetrievalQuery,
    vector?: Float32Array | null,
    timings?: SearchTimings,
  ): Promise<RetrievedMemory[]>;
  /** A user's facts and description (any room), plus facts marked shared; newest first. */
  aboutUser(query: { agentId: string; userId: string; limit: number }): Promise<Memory[]>;
  /** A document's fragments at the given positions. */
  fragments(query: { agentId: string; documentId: string; positions: number[] }): Promise<Memory[]>;
}

// ---- time and events ------------------------------------------------------------------------

export interface Clock {
  now(): number;
}

export type RuntimeEvent =
  | { type: "run_started"; turnId: string; agentId: string; roomId: string; at: number }
  | {
      type: "run_ended";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      durationMs: number;
      status: "replied" | "ignored" | "failed" | "paused";
      modelCalls: number;
      usage: TokenUsage;
    }
  | {
      type: "run_timed_out";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      limitMs: number;
    }
  | {
      type: "tool_called";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      tool: string;
      ok: boolean;
      cached: boolean;
      durationMs: number;
    }
  | {
      type: "tool_approval_requested";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      tool: string;
    }
  | {
      type: "model_failover";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      from: string;
      to: string;
      reason: string;
    }
  | {
      type: "provider_skipped";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      provider: string;
      reason: string;
    }
  | {
      type: "evaluator_failed";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      evaluator: string;
      reason: string;
    }
  | {
      type: "run_failed";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      code: string;
      reason: string;
    }
  | { type: "spend_not_recorded"; agentId: string; at: number; tokens: number; reason: string };

export interface EventSink {
  emit(event: RuntimeEvent): void;
}
