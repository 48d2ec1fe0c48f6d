// What a turn keeps for the turn inspector (GET /agents/:agentId/turns/:turnId): the prompt's
// sections with their token counts, the memories used and which search legs found them, the tool
// calls, and each model request's timing. Collected as the turn runs (cheap: references only) and
// built in afterReply, where tokens are counted and the record is stored with the reply, so none
// of it lands on the turn's critical path.
import type { EventSink, RuntimeEvent } from "../ports/events.ts";
import type { ChatMessage } from "../ports/model.ts";
import type { MemoryType } from "../ports/memory.ts";
import type { RetrievedMemory } from "../ports/retrieval.ts";
import type { TokenCounter } from "../util/tokens.ts";
import type { TurnOutcome, UsedMemory } from "./turn-types.ts";

/** The search legs that found a memory ("neighbour": next to a hit in its room). */
export type MatchedBy = RetrievedMemory["matchedBy"];

/** A section's text is kept up to this length (its token count is of the whole). */
export const MAX_SECTION_TEXT_CHARS = 20_000;

/**
 * Version of this whole record's shape. D1 held it as is (version 1); the store now keeps an
 * outline in D1 and the text apart (its own version 2): bump either when its shape changes.
 */
export const TURN_INSPECTION_VERSION = 1;

export interface InspectedSection {
  /** The provider that wrote it (`character`, `knowledge`, `history`, ...), or `message`. */
  name: string;
  tokens: number;
  text: string;
}

export interface InspectedMemory {
  id: string;
  type: MemoryType;
  score: number | null;
  /** Which provider put it in the prompt (`user-facts`, `knowledge`, `recall`). */
  provider: string;
  /** The search legs that found it; null when it was not searched for (the person's facts). */
  matchedBy: MatchedBy | null;
}

export interface InspectedTool {
  id: string;
  name: string;
  ok: boolean;
  cached: boolean;
  /** Milliseconds from the turn's start; null for a call made before an approval's pause. */
  startMs: number | null;
  durationMs: number;
  arguments: unknown;
  /** What the model saw, cut to MAX_TOOL_RECORD_CHARS as the turn's record is. */
  output: string;
  model: string;
}

export interface InspectedModelCall {
  model: string;
  responseModel: string | null;
  /** Milliseconds from the turn's start to the request, and how long it took. */
  startMs: number;
  durationMs: number;
  inputTokens: number;
  /** Of `inputTokens`, read from the provider's prompt cache (0 when it did not say). */
  cachedInputTokens: number;
  outputTokens: number;
  finishReason: string | null;
  error: string | null;
}

export interface TurnInspection {
  version: typeof TURN_INSPECTION_VERSION;
  turnId: string;
  agentId: string;
  roomId: string;
  userId: string;
  /** When the turn (or, for a resumed turn, its part after the approval) started. */
  startedAt: number;
  durationMs: number;
  /** A turn resumed after an approval: its prompt was composed before the pause and is not kept. */
  resumed: boolean;
  sections: InspectedSection[];
  memories: InspectedMemory[];
  tools: InspectedTool[];
  modelCalls: InspectedModelCall[];
}

/** Where inspections are kept (D1 and R2 in production); recorded after the reply, with it. */
export interface TurnInspectionSink {
  record(inspection: TurnInspection): Promise<void>;
}

/** What the turn collects as it runs: references, counted and shaped only in `finish`. */
export interface InspectionDraft {
  startedAt: number;
  resumed: boolean;
  parts: Array<{ name: string; text: string } | { name: string; messages: ChatMessage[] }>;
  memories: InspectedMemory[];
  modelCalls: Extract<RuntimeEvent, { type: "model_called" }>[];
  toolCalls: Extract<RuntimeEvent, { type: "tool_called" }>[];
}

export function startInspection(startedAt: number, resumed: boolean): InspectionDraft {
  return { startedAt, resumed, parts: [], memories: [], modelCalls: [], toolCalls: [] };
}

/** The turn's events, passed on, with its model requests and tool calls noted in the draft. */
export function noteCalls(events: EventSink, draft: InspectionDraft): EventSink {
  return {
    emit(event) {
      if (event.type === "model_called") draft.modelCalls.push(event);
      else if (event.type === "tool_called") draft.toolCalls.push(event);
      events.emit(event);
    },
  };
}

/** Memories as the providers reported them, with who found them and how. */
export function inspectedMemories(
  memories: UsedMemory[],
  found: Array<{ provider: string; matchedBy: MatchedBy | null }>,
): InspectedMemory[] {
  return memories.map((memory, i) => ({
    id: memory.id,
    type: memory.type,
    score: memory.score,
    provider: found[i]?.provider ?? "unknown",
    matchedBy: found[i]?.matchedBy ?? null,
  }));
}

export function finishInspection(
  draft: InspectionDraft,
  outcome: TurnOutcome,
  ids: { agentId: string; roomId: string; userId: string },
  tokens: TokenCounter,
  endedAt: number,
): TurnInspection {
  const sections = draft.parts.map((part) => {
    const lines = "text" in part ? [part.text] : part.messages.map(messageLine);
    const text = lines.join("\n");
    const kept =
      text.length > MAX_SECTION_TEXT_CHARS ? `${text.slice(0, MAX_SECTION_TEXT_CHARS)}…` : text;
    // Message by message: the counter remembers a room's messages, so only new ones cost BPE.
    const counted = lines.reduce((sum, line) => sum + tokens.count(line), 0);
    return { name: part.name, tokens: counted, text: kept };
  });
  return {
    version: TURN_INSPECTION_VERSION,
    turnId: outcome.turnId,
    ...ids,
    startedAt: draft.startedAt,
    durationMs: Math.max(0, endedAt - draft.startedAt),
    resumed: draft.resumed,
    sections,
    memories: draft.memories,
    tools: outcome.toolCalls.map((call, i) => ({
      id: call.id,
      name: call.name,
      ok: call.ok,
      cached: call.cached,
      startMs: toolStart(draft, outcome.toolCalls.length, i, call.name),
      durationMs: call.durationMs,
      arguments: call.arguments,
      output: call.output,
      model: call.model,
    })),
    modelCalls: draft.modelCalls.map((call) => ({
      model: call.model,
      responseModel: call.responseModel,
      startMs: Math.max(0, call.startedAt - draft.startedAt),
      durationMs: Math.max(0, call.at - call.startedAt),
      inputTokens: call.inputTokens,
      cachedInputTokens: call.cachedInputTokens,
      outputTokens: call.outputTokens,
      finishReason: call.finishReason,
      error: call.error,
    })),
  };
}

/**
 * When the i-th tool call started: this run's calls are the last of the outcome's (a resumed
 * turn's list starts with those made before the pause), each told by one `tool_called` event.
 */
function toolStart(draft: InspectionDraft, count: number, i: number, name: string): number | null {
  const event = draft.toolCalls[i - (count - draft.toolCalls.length)];
  if (!event || event.tool !== name) return null;
  return Math.max(0, event.at - event.durationMs - draft.startedAt);
}

function messageLine(message: ChatMessage): string {
  const name = message.role === "user" && message.name ? ` (${message.name})` : "";
  return `${message.role}${name}: ${message.content ?? ""}`;
}

/** Drafts of replied turns waiting for afterReply; bounded, so turns never followed up cost nothing. */
export class PendingInspections {
  private readonly drafts = new Map<string, InspectionDraft>();
  private readonly max: number;
  constructor(max = 32) {
    this.max = max;
  }

  set(turnId: string, draft: InspectionDraft): void {
    this.drafts.delete(turnId);
    this.drafts.set(turnId, draft);
    while (this.drafts.size > this.max) {
      const oldest = this.drafts.keys().next().value;
      if (oldest === undefined) break;
      this.drafts.delete(oldest);
    }
  }

  take(turnId: string): InspectionDraft | undefined {
    const draft = this.drafts.get(turnId);
    this.drafts.delete(turnId);
    return draft;
  }
}
