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
    return { count: (text: string) => countInPieces(text, count) };
  });
  return loading;
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
