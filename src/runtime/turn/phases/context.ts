// Context: the turn's prompt. The providers run at once, each with a timeout (context/); the
// person's message goes last with its context block and what the attachments add; the turn
// inspector is given the parts the prompt was made of, once the turn goes on to answer.
import type { Character } from "../../character.ts";
import { composeState } from "../../context/compose-state.ts";
import { chatName } from "../../context/history-provider.ts";
import { systemMessage, withContext } from "../../context/prompt-layout.ts";
import type { ChatMessage } from "../../ports/model.ts";
import type { ToolDefinition } from "../../ports/tools.ts";
import { inspectedMemories, type InspectionDraft } from "../turn-inspection.ts";
import type { TurnRunnerDeps } from "../turn-deps.ts";
import type { TurnInput, UsedMemory } from "../turn-types.ts";
import type { TurnMemory } from "./admission.ts";

export interface TurnContext {
  /** The request's messages: the system message, the history, the person's message. */
  messages: ChatMessage[];
  /** The room's history as the prompt holds it (the small model's respond decision reads it). */
  history: ChatMessage[];
  /** The long-term memories in the prompt, in prompt order. */
  memories: UsedMemory[];
  /** Notes the prompt's parts and memories in the inspector's draft. */
  inspect(draft: InspectionDraft): void;
}

export async function composeTurnContext(
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  turn: {
    tools: ToolDefinition[];
    retrieval: TurnMemory | null;
    extra: { text: string; images: string[] } | undefined;
    signal: AbortSignal;
  },
): Promise<TurnContext> {
  const { retrieval, extra } = turn;
  const composing = deps.clock.now();
  const state = await composeState(
    deps.providers,
    {
      character,
      input,
      memory: deps.memory,
      clock: deps.clock,
      tokens: deps.tokens,
      tools: turn.tools,
      toolSources: deps.tools.sources?.() ?? [],
      historyTokens: character.settings.historyTokens ?? deps.limits.historyTokens,
      historyFetchLimit: deps.limits.historyFetchLimit,
      retrieval,
      signal: turn.signal,
    },
    { timeoutMs: deps.limits.providerTimeoutMs, events: deps.events, turnId: input.turnId },
  );
  deps.events.emit({
    type: "context_composed",
    turnId: input.turnId,
    agentId: input.agentId,
    roomId: input.roomId,
    at: deps.clock.now(),
    startedAt: composing,
    memories: state.memories.length,
    hits: legCounts(state.found),
    queryEmbedding: retrieval?.embedding.outcome() ?? "none",
  });
  const name = chatName(input.userName ?? input.userId);
  const said = extra?.text ? `${input.text}\n\n${extra.text}` : input.text;
  const current: ChatMessage = {
    role: "user",
    content: withContext(said, state.context),
    ...(name ? { name } : {}),
    ...(extra && extra.images.length > 0 ? { images: extra.images } : {}),
  };
  return {
    messages: [
      { role: "system", content: systemMessage(state.sections) },
      ...state.history,
      current,
    ],
    history: state.history,
    memories: state.memories,
    inspect(draft) {
      draft.parts.push(...state.parts, { name: "message", text: said });
      draft.memories = inspectedMemories(state.memories, state.found);
    },
  };
}

/** How many of the prompt's memories each search leg found. */
function legCounts(
  found: ReadonlyArray<{ matchedBy: ReadonlyArray<"text" | "vector" | "neighbour"> | null }>,
): { text: number; vector: number; neighbour: number } {
  const hits = { text: 0, vector: 0, neighbour: 0 };
  for (const { matchedBy } of found) for (const leg of matchedBy ?? []) hits[leg] += 1;
  return hits;
}
