// Re-ranking of fused hits with what their rows say. Before neighbour expansion, a hit is lifted by
// the best other hit of its conversation (hits that cluster in one conversation are more likely
// the place the question is about). After it, the messages of a member the question names, and
// memories written in a month it names, weigh more, and messages that say little weigh less.
// Pure; weights and why in docs/memory.md.
import type { Memory } from "../ports/memory.ts";
import { inNamedMonth, namedMonths } from "./query-dates.ts";
import { contentWords } from "./query-terms.ts";

export interface RerankWeights {
  /** Share of the best other hit of its conversation added to a hit's score. */
  session: number;
  /** A named speaker's messages: score x (1 + speaker). */
  speaker: number;
  /** Memories written in a month the question names: score x (1 + month). */
  month: number;
  /**
   * A message of few content words: score x ((1 + words) / (1 + INFORMATIVE_WORDS)) ^ length
   * (0: off).
   */
  length: number;
}

/**
 * Tuned on the LoCoMo development set (bench/RESULTS.md, with the leave-one-conversation-out
 * check): past 0.2 the speaker weight buries the right answer when a question names the wrong
 * person; the month weight is near a filter, as a named month almost always is one; past 0.3 the
 * length weight buries short answers ("A puppy!") that single-fact questions need.
 */
export const RERANK_WEIGHTS: RerankWeights = {
  session: 0.3,
  speaker: 0.2,
  month: 1,
  length: 0.3,
};

/** Content words from which a message counts as saying something in full (see `length`). */
export const INFORMATIVE_WORDS = 20;

/** Messages of one room further apart than this belong to different conversations. */
export const SESSION_GAP_MS = 4 * 60 * 60 * 1000;

export interface Scored {
  memory: Memory;
  score: number;
}

/**
 * Hits lifted by their conversation, best first; scores kept within 0..1. Each hit's score gains
 * `session` x the best score among the other hits of its conversation (messages of one room with
 * no gap over SESSION_GAP_MS).
 */
export function rerankHits<T extends Scored>(
  hits: T[],
  weights: RerankWeights = RERANK_WEIGHTS,
): T[] {
  if (weights.session === 0) return hits;
  const sessions = conversationsOf(hits.map((hit) => hit.memory));
  const best = new Map<number, [number, number]>();
  hits.forEach((hit, i) => {
    const s = sessions[i]!;
    if (s < 0) return;
    const [first, second] = best.get(s) ?? [0, 0];
    best.set(s, hit.score > first ? [hit.score, first] : [first, Math.max(second, hit.score)]);
  });
  const scale = 1 / (1 + weights.session);
  return hits
    .map((hit, i) => {
      const s = sessions[i]!;
      const [first, second] = s < 0 ? [0, 0] : best.get(s)!;
      const other = hit.score === first ? second : first;
      return { ...hit, score: (hit.score + weights.session * other) * scale };
    })
    .sort((a, b) => b.score - a.score);
}

/**
 * The results with their neighbours, best first: a message of a member the query names (a word of
 * their name is one of its words) and a memory written in a month it names weigh more, a message
 * of few words less (informativeness). Scores are kept within 0..1.
 */
export function rerankResults<T extends Scored>(
  results: T[],
  queryText: string,
  weights: RerankWeights = RERANK_WEIGHTS,
): T[] {
  const named = weights.speaker > 0 ? speakerNamedIn(queryText) : null;
  const months = weights.month > 0 ? namedMonths(queryText) : [];
  if (named === null && months.length === 0 && weights.length === 0) return results;
  const scale = 1 / ((1 + weights.speaker) * (1 + (months.length > 0 ? weights.month : 0)));
  return results
    .map((hit) => {
      let factor = scale * informativeness(hit.memory, weights.length);
      if (named?.(hit.memory)) factor *= 1 + weights.speaker;
      if (months.length > 0 && inNamedMonth(hit.memory.createdAt, months))
        factor *= 1 + weights.month;
      return { ...hit, score: hit.score * factor };
    })
    .sort((a, b) => b.score - a.score);
}

/**
 * 1 for a message of INFORMATIVE_WORDS content words or more, less for a shorter one ("thanks,
 * Ana!"), and 1 for every other memory: BM25 favours short texts, and a message that says little
 * rarely holds what a question asks about someone.
 */
export function informativeness(memory: Pick<Memory, "type" | "content">, weight: number): number {
  if (weight === 0 || memory.type !== "message") return 1;
  const words = contentWords(memory.content.text).length;
  if (words >= INFORMATIVE_WORDS) return 1;
  return ((1 + words) / (1 + INFORMATIVE_WORDS)) ** weight;
}

/** Whether a memory's speaker is named in the query; null when the query has no words. */
export function speakerNamedIn(queryText: string): ((memory: Memory) => boolean) | null {
  const terms = new Set(contentWords(queryText));
  if (terms.size === 0) return null;
  // A search's hits come from a few speakers: each name is read once.
  const byName = new Map<string, boolean>();
  return (memory) => {
    const name = memory.content.userName;
    if (name === undefined) return false;
    let named = byName.get(name);
    if (named === undefined) {
      named = contentWords(name).some((word) => terms.has(word));
      byName.set(name, named);
    }
    return named;
  };
}

/** A conversation number per memory: messages of one room with no gap over SESSION_GAP_MS; -1 otherwise. */
export function conversationsOf(memories: Memory[]): number[] {
  const byRoom = new Map<string, number[]>();
  memories.forEach((memory, i) => {
    if (memory.type !== "message" || memory.roomId === null) return;
    const list = byRoom.get(memory.roomId);
    if (list) list.push(i);
    else byRoom.set(memory.roomId, [i]);
  });
  const out = memories.map(() => -1);
  let conversation = -1;
  for (const list of byRoom.values()) {
    list.sort((a, b) => memories[a]!.createdAt - memories[b]!.createdAt);
    let previous = Number.NEGATIVE_INFINITY;
    for (const i of list) {
      const at = memories[i]!.createdAt;
      if (at - previous > SESSION_GAP_MS) conversation++;
      out[i] = conversation;
      previous = at;
    }
  }
  return out;
}
