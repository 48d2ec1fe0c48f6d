// The room's recent conversation, newest kept first, cut to a token budget measured with the real
// tokenizer. Token counts stored with each message (metadata.tokens) are reused so a long room
// costs one indexed query, not a re-tokenization of its history. Messages the place's filter
// declined are left out: they never reach a model.
import type { Provider } from "./compose-state.ts";
import type { TokenCounter } from "../util/tokens.ts";
import type { Memory } from "../ports/memory.ts";
import type { ChatMessage } from "../ports/model.ts";
import { inboundMessageId } from "../turn/message-ids.ts";
import { declinedByFilter } from "../access/message-filter.ts";

export const historyProvider: Provider = {
  name: "history",
  position: 100,
  async get({ input, memory, tokens, historyTokens, historyFetchLimit }) {
    const recent = await memory.recentMessages({
      agentId: input.agentId,
      roomId: input.roomId,
      limit: historyFetchLimit,
    });
    const kept: Memory[] = [];
    let used = 0;
    for (const message of recent) {
      if (message.id === inboundMessageId(input.turnId) || declinedByFilter(message)) continue;
      const cost = messageTokens(message, tokens);
      if (used + cost > historyTokens) break;
      used += cost;
      kept.push(message);
    }
    return { messages: kept.reverse().map(toChatMessage) };
  },
};

function messageTokens(message: Memory, tokens: TokenCounter): number {
  const stored = message.metadata.tokens;
  return typeof stored === "number" && Number.isFinite(stored)
    ? stored
    : tokens.count(message.content.text);
}

function toChatMessage(message: Memory): ChatMessage {
  if (message.content.role === "agent") return { role: "assistant", content: message.content.text };
  const name = chatName(message.content.userName ?? message.userId ?? undefined);
  return name
    ? { role: "user", content: message.content.text, name }
    : { role: "user", content: message.content.text };
}

/** OpenAI's `name` field allows ^[a-zA-Z0-9_-]{1,64}$; anything else is dropped or replaced. */
export function chatName(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const cleaned = raw.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);
  return /[a-zA-Z0-9]/.test(cleaned) ? cleaned : undefined;
}
