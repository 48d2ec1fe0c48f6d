// What a client is told of a room's history (GET /agents/:agentId/rooms/:roomId/messages): each
// stored message, and for a reply the turn behind it (model, usage, stop reason and the memories
// it used), as the stream's `memories` and `done` events told it; a turn that failed shows as an
// entry with its error where the reply would be, as the stream's `error` event did. The turn's
// facts are read back from the reply's metadata column, checked here: a row written before they
// were kept, or one that does not match, loads without them.
import { z } from "@hono/zod-openapi";
import type { FailedTurn, RoomHistoryPage } from "../objects/conversation/room-types.ts";
import { usedMemory } from "../runtime/context/memory-providers.ts";
import type { Memory } from "../runtime/ports/memory.ts";
import { replyMessageId } from "../runtime/turn/message-ids.ts";
import type { UsedMemory } from "../runtime/turn/turn-types.ts";
import { TurnUsageCounts } from "./schemas.ts";

/** A reply's metadata as the turn runner writes it (src/runtime/turn/turn-runner.ts, buildReply). */
const ReplyMetadata = z.object({
  turnId: z.string(),
  model: z.string().nullable(),
  stopReason: z.string(),
  usage: TurnUsageCounts,
  // Ids and scores only: the text stays in the memories themselves (and goes with them).
  memories: z.array(z.object({ id: z.string(), score: z.number().nullable() })).optional(),
});
type ReplyMetadata = z.infer<typeof ReplyMetadata>;

export interface HistoryTurn {
  turnId: string;
  model?: string | null;
  usage?: ReplyMetadata["usage"];
  stopReason?: string;
  memories?: UsedMemory[];
  error?: FailedTurn["error"];
}

export interface HistoryEntry {
  id: string;
  role: "user" | "agent";
  userId: string | null;
  userName: string | null;
  text: string;
  actions?: string[];
  createdAt: number;
  turn?: HistoryTurn;
}

export interface HistoryBodyOptions {
  /**
   * The memories of these ids the caller may be shown, as they are now (one deleted since is
   * gone); null when the caller may see none, and the turns then carry no `memories`.
   */
  memories: ((ids: string[]) => Promise<Memory[]>) | null;
}

export async function historyBody(
  page: RoomHistoryPage,
  options: HistoryBodyOptions,
): Promise<{ messages: HistoryEntry[]; nextBefore: number | null }> {
  const replies = new Map<string, ReplyMetadata>();
  for (const message of page.messages) {
    if (message.content.role !== "agent") continue;
    const parsed = ReplyMetadata.safeParse(message.metadata);
    if (parsed.success) replies.set(message.id, parsed.data);
  }
  const known = options.memories ? await memoriesUsed(replies, options.memories) : null;
  const failedAfter = new Map(page.failedTurns.map((failed) => [failed.messageId, failed]));
  const messages: HistoryEntry[] = [];
  for (const message of page.messages) {
    const failed = failedAfter.get(message.id);
    // Newest first: the failure, which came after its message, goes just before it.
    if (failed) messages.push(failedEntry(failed, message));
    const reply = replies.get(message.id);
    messages.push({
      id: message.id,
      role: message.content.role ?? "user",
      userId: message.userId,
      userName: message.content.userName ?? null,
      text: message.content.text,
      ...(message.content.actions ? { actions: message.content.actions } : {}),
      createdAt: message.createdAt,
      ...(reply ? { turn: replyTurn(reply, known) } : {}),
    });
  }
  return { messages, nextBefore: page.nextBefore };
}

/** Every memory the page's replies used, by id, in one read. */
async function memoriesUsed(
  replies: Map<string, ReplyMetadata>,
  read: (ids: string[]) => Promise<Memory[]>,
): Promise<Map<string, Memory>> {
  const ids = new Set<string>();
  for (const reply of replies.values()) for (const used of reply.memories ?? []) ids.add(used.id);
  if (ids.size === 0) return new Map();
  return new Map((await read([...ids])).map((memory) => [memory.id, memory]));
}

function replyTurn(reply: ReplyMetadata, known: Map<string, Memory> | null): HistoryTurn {
  const turn: HistoryTurn = {
    turnId: reply.turnId,
    model: reply.model,
    usage: reply.usage,
    stopReason: reply.stopReason,
  };
  // A reply stored before the memories were kept says nothing about them.
  if (!known || !reply.memories) return turn;
  const memories = reply.memories.flatMap(({ id, score }): UsedMemory[] => {
    const memory = known.get(id);
    return memory ? [usedMemory(memory, score)] : [];
  });
  return { ...turn, memories };
}

function failedEntry(failed: FailedTurn, message: Memory): HistoryEntry {
  return {
    id: replyMessageId(failed.turnId),
    role: "agent",
    userId: message.userId,
    userName: null,
    text: "",
    createdAt: Math.max(failed.failedAt, message.createdAt),
    turn: { turnId: failed.turnId, error: failed.error },
  };
}
