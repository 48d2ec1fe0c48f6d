// Long-term memory in the prompt, each section within its own token budget:
// - what the agent knows about the person (their description and facts, from any room, plus
//   facts marked shared; never another person's private facts);
// - knowledge: document fragments and lore relevant to the message, with neighbouring fragments
//   of the best hits so a passage cut at a chunk boundary reads whole;
// - recall: older messages and summaries of this room that no longer fit the recent history.
// Everything retrieved is quoted as data with its source (see quoted-data.ts).
import type { Provider, ProviderContext } from "./compose-state.ts";
import { quoteData, type QuotedEntry } from "./quoted-data.ts";
import { queryTerms } from "../retrieval/query-terms.ts";
import type { UsedMemory } from "../turn/turn-types.ts";
import type { Memory } from "../ports/memory.ts";
import type { RetrievedMemory } from "../ports/retrieval.ts";
import { inboundMessageId } from "../turn/message-ids.ts";
import { declinedByFilter } from "../access/message-filter.ts";
import { historyWindow } from "./history-provider.ts";

const MAX_USER_MEMORIES = 60;
const KNOWLEDGE_HITS = 8;
const RECALL_HITS = 8;
/** Top knowledge hits whose neighbouring fragments are added. */
const EXPANDED_HITS = 2;

export const userFactsProvider: Provider = {
  name: "user-facts",
  position: 40,
  slot: "context",
  async get({ retrieval, input, tokens }) {
    if (!retrieval) return null;
    const known = await retrieval.retriever.aboutUser({
      agentId: input.agentId,
      userId: input.userId,
      limit: MAX_USER_MEMORIES,
    });
    if (known.length === 0) return null;
    // The profile first, then the person's own facts, then shared ones; newest first within each.
    const rank = (m: Memory) => (m.type === "description" ? 0 : m.userId === input.userId ? 1 : 2);
    const ordered = [...known].sort((a, b) => rank(a) - rank(b) || b.createdAt - a.createdAt);
    const entries = withinBudget(
      ordered.map((m) => ({
        source:
          m.type === "description"
            ? "profile"
            : m.userId === input.userId
              ? `fact ${day(m.createdAt)}`
              : "shared fact",
        text: m.content.text,
      })),
      retrieval.budgets.facts,
      (entry) => tokens.count(entry.text) + 8,
    );
    const who = input.userName ?? input.userId;
    if (entries.length === 0) return null;
    return {
      text: quoteData(`What you know about ${who}`, entries),
      memories: ordered.slice(0, entries.length).map((m) => usedMemory(m, null)),
    };
  },
};

export const knowledgeProvider: Provider = {
  name: "knowledge",
  position: 50,
  slot: "context",
  async get(context) {
    const { retrieval, input, tokens } = context;
    if (!retrieval || queryTerms(input.text).length === 0) return null;
    const hits = await retrieval.retriever.search(
      {
        agentId: input.agentId,
        text: input.text,
        types: ["fragment", "lore"],
        limit: KNOWLEDGE_HITS,
        threshold: retrieval.threshold,
      },
      // Not awaited: the full-text leg goes to D1 while the vector is out.
      retrieval.queryVector(),
    );
    if (hits.length === 0) return null;
    const passages = await expandNeighbours(context, hits);
    const entries = withinBudget(
      passages,
      retrieval.budgets.knowledge,
      (entry) => tokens.count(entry.text) + 12,
    );
    if (entries.length === 0) return null;
    // One passage per hit (neighbours are folded into it), so the kept prefix maps back to hits.
    const kept = hits.slice(0, entries.length);
    return {
      text: quoteData("Relevant knowledge", entries),
      memories: kept.map((hit) => usedMemory(hit.memory, hit.score)),
      matchedBy: kept.map((hit) => hit.matchedBy),
    };
  },
};

export const recallProvider: Provider = {
  name: "recall",
  position: 60,
  slot: "context",
  async get(context) {
    const { retrieval, input, tokens } = context;
    if (!retrieval || queryTerms(input.text).length === 0) return null;
    // Only a room longer than what the recent history shows has anything older to recall.
    const window = await historyWindow(context);
    if (!window.full) return null;
    // The person's own message is never recalled, whether or not its write has landed yet.
    const shown = new Set([...window.messages.map((m) => m.id), inboundMessageId(input.turnId)]);
    const hits = await retrieval.retriever.search(
      {
        agentId: input.agentId,
        text: input.text,
        types: ["message", "summary"],
        roomId: input.roomId,
        limit: RECALL_HITS,
        excludeIds: [...shown],
        threshold: retrieval.threshold,
      },
      // Not awaited: the full-text leg goes to D1 while the vector is out.
      retrieval.queryVector(),
    );
    // A message the place's filter declined is never recalled into a prompt.
    const older = hits
      .filter((hit) => !shown.has(hit.memory.id) && !declinedByFilter(hit.memory))
      .slice(0, RECALL_HITS);
    if (older.length === 0) return null;
    const entries = withinBudget(
      older.map((hit) => ({ source: recallSource(hit.memory), text: hit.memory.content.text })),
      retrieval.budgets.recall,
      (entry) => tokens.count(entry.text) + 10,
    );
    if (entries.length === 0) return null;
    const kept = older.slice(0, entries.length);
    return {
      text: quoteData("Earlier in this conversation", entries),
      memories: kept.map((hit) => usedMemory(hit.memory, hit.score)),
      matchedBy: kept.map((hit) => hit.matchedBy),
    };
  },
};

async function expandNeighbours(
  { retrieval, input }: ProviderContext,
  hits: RetrievedMemory[],
): Promise<QuotedEntry[]> {
  if (!retrieval) return [];
  const neighbours = new Map<string, Memory[]>();
  await Promise.all(
    hits
      .filter((hit) => hit.memory.type === "fragment" && hit.memory.parentId)
      .slice(0, EXPANDED_HITS)
      .map(async (hit) => {
        const position = Number(hit.memory.metadata.position);
        if (!Number.isInteger(position)) return;
        const around = await retrieval.retriever.fragments({
          agentId: input.agentId,
          documentId: hit.memory.parentId!,
          positions: [position - 1, position + 1],
        });
        neighbours.set(hit.memory.id, around);
      }),
  );
  const used = new Set(hits.map((hit) => hit.memory.id));
  return hits.map((hit) => {
    const around = (neighbours.get(hit.memory.id) ?? []).filter((m) => !used.has(m.id));
    for (const m of around) used.add(m.id);
    const passage = [...around, hit.memory].sort(
      (a, b) => Number(a.metadata.position) - Number(b.metadata.position),
    );
    return {
      source: knowledgeSource(hit.memory),
      text: passage.map((m) => m.content.text).join("\n"),
    };
  });
}

/** Watchers get a preview, not whole documents. */
const USED_MEMORY_PREVIEW_CHARS = 500;

/** A memory as a watcher of the turn is told it used it (the stream, and the room's history). */
export function usedMemory(memory: Memory, score: number | null): UsedMemory {
  const text = memory.content.text;
  return {
    id: memory.id,
    type: memory.type,
    text:
      text.length > USED_MEMORY_PREVIEW_CHARS
        ? `${text.slice(0, USED_MEMORY_PREVIEW_CHARS)}…`
        : text,
    score,
  };
}

function knowledgeSource(memory: Memory): string {
  if (memory.type === "lore") return "background";
  const where = [memory.metadata.title, memory.metadata.heading].filter(
    (part, i, all) => typeof part === "string" && part && all.indexOf(part) === i,
  );
  return where.length > 0 ? `document: ${where.join(" > ")}` : "document";
}

function recallSource(memory: Memory): string {
  if (memory.type === "summary")
    return `summary of the conversation up to ${day(memory.createdAt)}`;
  const speaker =
    memory.content.role === "agent"
      ? "you"
      : (memory.content.userName ?? memory.userId ?? "someone");
  return `${speaker}, ${day(memory.createdAt)}`;
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Keeps entries in order until the next one would pass the budget. */
function withinBudget<T>(entries: T[], budget: number, cost: (entry: T) => number): T[] {
  const kept: T[] = [];
  let used = 0;
  for (const entry of entries) {
    const c = cost(entry);
    if (used + c > budget) break;
    used += c;
    kept.push(entry);
  }
  return kept;
}
