// The room's recent conversation, newest kept first, cut to a token budget measured with the real
// tokenizer. Token counts stored with each message (metadata.tokens) are reused so a long room
// costs one indexed query, not a re-tokenization of its history. Messages the place's filter
// declined are left out: they never reach a model.
//
// A full window slides in steps, not a message at a time, so the request's prefix (the provider's
// prompt cache) survives most turns: one message in CHECKPOINT_EVERY, picked by a hash of its id,
// is a checkpoint (one in twice as many a major one), and a window that cannot hold the whole room
// starts at the oldest major checkpoint in its older half, else at its oldest checkpoint. That
// start stays put as messages arrive, until it no longer fits; then the window drops every message
// up to the next one at once (older messages stay findable through recall). On a 60-message window
// the start moves on about one turn in six or seven (one in four with checkpoints alone). The pick
// needs no state, so every turn, replay and room instance agrees on it.
import type { Provider, ProviderContext } from "./compose-state.ts";
import type { TokenCounter } from "../util/tokens.ts";
import type { Memory } from "../ports/memory.ts";
import type { ChatMessage } from "../ports/model.ts";
import { inboundMessageId } from "../turn/message-ids.ts";
import { declinedByFilter } from "../access/message-filter.ts";
import { fnv1a32 } from "../util/hashing.ts";
import { defuseContextTag } from "./prompt-layout.ts";

/** About one message in this many is a checkpoint where a full window may start. */
export const CHECKPOINT_EVERY = 8;

export const historyProvider: Provider = {
  name: "history",
  position: 100,
  // Messages, not a section: the slot is not used.
  slot: "system",
  async get(context) {
    const { messages } = await historyWindow(context);
    return { messages: messages.map(toChatMessage) };
  },
};

type WindowContext = Pick<
  ProviderContext,
  "input" | "memory" | "tokens" | "historyTokens" | "historyFetchLimit"
>;
type Window = { messages: Memory[]; full: boolean };

/** Each turn's window, worked out once: every provider of a turn gets the same context object. */
const windows = new WeakMap<WindowContext, Promise<Window>>();

/**
 * The room's messages the prompt shows, oldest first, and whether older ones are left out (then
 * recall may bring some back). Both the history and recall providers ask, and share the answer.
 */
export function historyWindow(context: WindowContext): Promise<Window> {
  let window = windows.get(context);
  if (!window) {
    window = readWindow(context);
    windows.set(context, window);
  }
  return window;
}

async function readWindow({
  input,
  memory,
  tokens,
  historyTokens,
  historyFetchLimit,
}: WindowContext): Promise<Window> {
  const recent = await memory.recentMessages({
    agentId: input.agentId,
    roomId: input.roomId,
    limit: historyFetchLimit,
  });
  const inbound = inboundMessageId(input.turnId);
  const kept: Memory[] = [];
  let used = 0;
  // Older messages are left out by the budget, or by a room longer than one read.
  let full = recent.length >= historyFetchLimit;
  for (const message of recent) {
    if (message.id === inbound || declinedByFilter(message)) continue;
    const cost = messageTokens(message, tokens);
    if (used + cost > historyTokens) {
      full = true;
      break;
    }
    used += cost;
    kept.push(message);
  }
  const start = full ? windowStart(kept) : -1;
  const window = start >= 0 ? kept.slice(0, start + 1) : kept;
  return { messages: window.reverse(), full };
}

/** A message a full window may start at (see the header). */
export function isCheckpoint(message: Memory): boolean {
  return fnv1a32(message.id) % CHECKPOINT_EVERY === 0;
}

/** Where a full window starts in `newestFirst` (an index), or -1 for none: see the header. */
function windowStart(newestFirst: Memory[]): number {
  for (let i = newestFirst.length - 1; i >= Math.ceil(newestFirst.length / 2); i--)
    if (fnv1a32(newestFirst[i]!.id) % (2 * CHECKPOINT_EVERY) === 0) return i;
  return newestFirst.findLastIndex(isCheckpoint);
}

function messageTokens(message: Memory, tokens: TokenCounter): number {
  const stored = message.metadata.tokens;
  return typeof stored === "number" && Number.isFinite(stored)
    ? stored
    : tokens.count(message.content.text);
}

function toChatMessage(message: Memory): ChatMessage {
  const content = defuseContextTag(message.content.text);
  if (message.content.role === "agent") return { role: "assistant", content };
  const name = chatName(message.content.userName ?? message.userId ?? undefined);
  return name ? { role: "user", content, name } : { role: "user", content };
}

/** OpenAI's `name` field allows ^[a-zA-Z0-9_-]{1,64}$; anything else is dropped or replaced. */
export function chatName(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const cleaned = raw.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);
  return /[a-zA-Z0-9]/.test(cleaned) ? cleaned : undefined;
}
