// State composition: every provider runs at once, each bounded by a timeout, and the results are
// assembled in provider position order, not completion order. A slow or failing provider is
// skipped (and reported as an event) instead of stalling or failing the turn. Each section goes
// where its provider says (see prompt-layout.ts): the system message for what rarely changes for
// an agent, the context block carried with the new message for what changes each turn.
import type { Character } from "../character.ts";
import { withDeadline } from "../util/deadline.ts";
import type { TokenCounter } from "../util/tokens.ts";
import type { TurnInput, UsedMemory } from "../turn/turn-types.ts";
import type { Clock, EventSink } from "../ports/events.ts";
import type { MemoryStore } from "../ports/memory.ts";
import type { ChatMessage } from "../ports/model.ts";
import type { MemoryRetriever } from "../ports/retrieval.ts";
import type { ToolDefinition, ToolSourceStatus } from "../ports/tools.ts";
import type { MatchedBy } from "../turn/turn-inspection.ts";

/** Token budgets of the long-term memory sections of the prompt. */
export interface MemoryBudgets {
  facts: number;
  knowledge: number;
  recall: number;
}

/** Long-term memory for one turn: the retriever, and the message's vector, embedded at most once. */
export interface TurnRetrieval {
  retriever: MemoryRetriever;
  queryVector(): Promise<Float32Array | null>;
  budgets: MemoryBudgets;
  /** Minimum vector similarity of retrieved knowledge and older messages. */
  threshold?: number;
}

export interface ProviderContext {
  character: Character;
  input: TurnInput;
  memory: MemoryStore;
  clock: Clock;
  tokens: TokenCounter;
  tools: ToolDefinition[];
  /** Remote tool sources and their state (MCP servers); empty when there are none. */
  toolSources: ToolSourceStatus[];
  historyTokens: number;
  historyFetchLimit: number;
  /** null when the runtime has no long-term memory wired (tests of the bare loop). */
  retrieval: TurnRetrieval | null;
  signal: AbortSignal;
}

export interface ProviderResult {
  /** A section of the system prompt. */
  text?: string;
  /** Conversation messages that go between the system prompt and the new message. */
  messages?: ChatMessage[];
  /** Long-term memories whose text is in `text`, for whoever watches the turn. */
  memories?: UsedMemory[];
  /** How each of `memories` was found (same order); absent: not searched (the person's facts). */
  matchedBy?: MatchedBy[];
}

/**
 * Where a provider's section goes: "system" for text that rarely changes for an agent (its
 * character, its tools), which a provider's prompt cache keeps from turn to turn; "context" for
 * text that changes with each message (the time, what was retrieved for it), which rides at the
 * end of the request so the prefix before it stays identical.
 */
export type ProviderSlot = "system" | "context";

export interface Provider {
  name: string;
  /** Lower positions come first within the provider's slot. */
  position: number;
  slot: ProviderSlot;
  get(context: ProviderContext): Promise<ProviderResult | null>;
}

export interface ComposedState {
  /** Sections of the system message (slot "system"). */
  sections: string[];
  /** Sections of the new message's context block (slot "context"). */
  context: string[];
  history: ChatMessage[];
  /** The long-term memories in `sections`, in prompt order. */
  memories: UsedMemory[];
  /** Each section and history with the provider that wrote it, for the turn inspector. */
  parts: Array<{ name: string; text: string } | { name: string; messages: ChatMessage[] }>;
  /** For each of `memories`: the provider that put it there and the search legs that found it. */
  found: Array<{ provider: string; matchedBy: MatchedBy | null }>;
}

export async function composeState(
  providers: Provider[],
  context: ProviderContext,
  options: { timeoutMs: number; events: EventSink; turnId: string },
): Promise<ComposedState> {
  const ordered = [...providers].sort((a, b) => a.position - b.position);
  const results = await Promise.all(
    ordered.map((provider) =>
      withDeadline(provider.get(context), options.timeoutMs).catch((error: unknown) => {
        options.events.emit({
          type: "provider_skipped",
          turnId: options.turnId,
          agentId: context.input.agentId,
          roomId: context.input.roomId,
          at: context.clock.now(),
          provider: provider.name,
          reason: errorText(error),
        });
        return null;
      }),
    ),
  );
  const state: ComposedState = {
    sections: [],
    context: [],
    history: [],
    memories: [],
    parts: [],
    found: [],
  };
  // The inspector's parts in the request's order: the system message, the history, the context.
  const parts: Record<"system" | "history" | "context", ComposedState["parts"]> = {
    system: [],
    history: [],
    context: [],
  };
  results.forEach((result, i) => {
    if (!result) return;
    const { name, slot } = ordered[i]!;
    if (result.text) {
      (slot === "context" ? state.context : state.sections).push(result.text);
      parts[slot].push({ name, text: result.text });
    }
    if (result.messages && result.messages.length > 0) {
      state.history.push(...result.messages);
      parts.history.push({ name, messages: result.messages });
    }
    if (result.memories) {
      state.memories.push(...result.memories);
      result.memories.forEach((_, j) => {
        state.found.push({ provider: name, matchedBy: result.matchedBy?.[j] ?? null });
      });
    }
  });
  state.parts = [...parts.system, ...parts.history, ...parts.context];
  return state;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
