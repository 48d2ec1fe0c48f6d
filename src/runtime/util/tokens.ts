// Token counting with a real BPE tokenizer (o200k_base, the GPT-4o/4.1/5 encoding) so history
// budgets are measured, not guessed. The rank table costs ~200 ms to load, so it is imported lazily
// on the first turn of an isolate rather than at worker start-up.

export interface TokenCounter {
  count(text: string): number;
}

type CountFn = (text: string, options: { disallowedSpecial: Set<string> }) => number;

let loading: Promise<TokenCounter> | undefined;

/** Resolves to the shared counter, loading the encoding once per isolate. */
export function loadTokenCounter(): Promise<TokenCounter> {
  loading ??= import("gpt-tokenizer/encoding/o200k_base").then((module) => {
    const countTokens = module.countTokens as CountFn;
    // Text that spells a special token (e.g. "<|endoftext|>") is counted as plain text, as the
    // model APIs treat it, instead of throwing on hostile input.
    const options = { disallowedSpecial: new Set<string>() };
    const count = (text: string) => (text.length === 0 ? 0 : countTokens(text, options));
    return { count: remembering((text: string) => countInPieces(text, count)) };
  });
  return loading;
}

/** Texts up to this long have their counts kept; at most RECENT_CHARS characters of them in all. */
const MAX_KEPT_CHARS = 8_192;
const RECENT_CHARS = 1_000_000;

/**
 * Keeps recent texts' counts: a room's turns count the same texts again and again (the character
 * and tools sections, the person's facts, the history's messages), and BPE was the largest single
 * cost of a plain turn's JavaScript (about 1 ms of it, `npm run bench:profile`).
 */
export function remembering(count: (text: string) => number): (text: string) => number {
  const recent = new Map<string, number>();
  let chars = 0;
  return (text) => {
    if (text.length > MAX_KEPT_CHARS) return count(text);
    const known = recent.get(text);
    if (known !== undefined) {
      // Most recently used last.
      recent.delete(text);
      recent.set(text, known);
      return known;
    }
    const counted = count(text);
    recent.set(text, counted);
    chars += text.length;
    for (const oldest of recent.keys()) {
      if (chars <= RECENT_CHARS) break;
      recent.delete(oldest);
      chars -= oldest.length;
    }
    return counted;
  };
}

/**
 * BPE work grows with the square of a word's length: 100,000 characters without a space took
 * 6.6 s, so one hostile document could use up a Worker's CPU. Runs of non-space characters are
 * counted in pieces of MAX_RUN_CHARS; a piece boundary can shift the count by a token, no more.
 */
export const MAX_RUN_CHARS = 256;
const LONG_RUN = new RegExp(`(\\S{${MAX_RUN_CHARS}})`);

export function countInPieces(text: string, count: (text: string) => number): number {
  if (!LONG_RUN.test(text)) return count(text);
  let total = 0;
  for (const piece of text.split(LONG_RUN)) total += count(piece);
  return total;
}
