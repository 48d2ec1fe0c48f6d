// State composition: every provider runs at once, each bounded by a timeout, and the results are
// assembled in provider position order, not completion order. A slow or failing provider is
// skipped (and reported as an event) instead of stalling or failing the turn.
import type { Character } from "../character.ts";
import { withDeadline } from "../util/deadline.ts";
import type { TokenCounter } from "../util/tokens.ts";
import type { TurnInput, UsedMemory } from "../turn/turn-types.ts";
import type { Clock, EventSink } from "../ports/events.ts";
import type { MemoryStore } from "../ports/memory.ts";
import type { ChatMessage } from "../ports/model.ts";
import type { MemoryRetriever } from "../ports/retrieval.ts";
import type { ToolDefinition, ToolSourceStatus } from "../ports/tools.ts";

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
}

export interface Provider {
  name: string;
  /** Lower positions come first in the prompt. */
  position: number;
  get(context: ProviderContext): Promise<ProviderResult | null>;
}

export interface ComposedState {
  sections: string[];
  history: ChatMessage[];
  /** The long-term memories in `sections`, in prompt order. */
  memories: UsedMemory[];
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
  const state: ComposedState = { sections: [], history: [], memories: [] };
  for (const result of results) {
    if (!result) continue;
    if (result.text) state.sections.push(result.text);
    if (result.messages) state.history.push(...result.messages);
    if (result.memories) state.memories.push(...result.memories);
  }
  return state;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
