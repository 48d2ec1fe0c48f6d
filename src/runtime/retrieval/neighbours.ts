// How much of a hit's score the messages beside it get when neighbour expansion adds them
// (src/db/memory/hybrid-search.ts). In a conversation the words of a question are often in the
// turn that asks it and the answer in the reply ("What did you adopt?" / "A puppy!"), so the reply
// to a hit that asks something takes most of its score; any other neighbour (the line before a
// hit, the reply to a statement) rarely holds what was asked, and takes less. Pure; the figures
// behind both shares are in docs/memory.md and bench/RESULTS.md.
import type { Memory } from "../ports/memory.ts";

/**
 * The reply to a hit that asks something. Lower and such replies rarely reach the first 10 (fused
 * scores of nearby ranks differ by a few percent); 1 puts them level with their hit.
 */
export const ANSWER_SHARE = 0.9;

/**
 * Every other neighbour. On the LoCoMo development set these were evidence 0.1-1.8% of the time
 * among the first 25 results, against 6-7% for the reply to a question; 0.6 is where lowering it
 * stopped paying.
 */
export const NEIGHBOUR_SHARE = 0.6;

/** The most any neighbour gets: whether a hit's neighbours can still make the results. */
export const MAX_NEIGHBOUR_SHARE = Math.max(ANSWER_SHARE, NEIGHBOUR_SHARE);

/** Whether a message asks something: it holds a question mark (Latin, full-width or Arabic). */
export function asksSomething(text: string): boolean {
  return /[?？؟]/u.test(text);
}

/**
 * The share of `hit`'s score that `neighbour`, a message just before or after it in its room, gets:
 * ANSWER_SHARE when it comes after a hit that asks something, NEIGHBOUR_SHARE otherwise (also
 * when both were written in the same millisecond, as which came first is then unknown).
 */
export function neighbourShare(
  hit: Pick<Memory, "content" | "createdAt">,
  neighbour: Pick<Memory, "createdAt">,
): number {
  return neighbour.createdAt > hit.createdAt && asksSomething(hit.content.text)
    ? ANSWER_SHARE
    : NEIGHBOUR_SHARE;
}
