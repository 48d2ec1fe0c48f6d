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
    return { count: (text: string) => (text.length === 0 ? 0 : countTokens(text, options)) };
  });
  return loading;
}
