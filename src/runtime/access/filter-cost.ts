// What a filter's patterns may cost, by construction. RE2 matches in time linear in the message,
// but the constant is the size of the compiled program: each character can advance every live
// instruction, and a counted repetition is written out once per repeat (`[\p{L}\p{N}]{900}` is 900
// instructions). So the patterns of one filter may compile to MAX_PATTERN_INSTRUCTIONS together,
// a count read from the pattern's structure, never from a timing (bench/filter.ts measures it).
import { RE2JS } from "re2js";

/**
 * RE2 instructions a filter's patterns may compile to together: the worst set this allows (wide
 * Unicode classes, repeated) takes about 30 ms on a 4,000-character message built against it
 * (bench/RESULTS.md, on a shared 2-core machine; 200 took up to 62 ms there, 300 87 ms, the old limits minutes).
 */
export const MAX_PATTERN_INSTRUCTIONS = 150;

/** A stored pattern over the cost bound: kept as written, not applied, and reported. */
export interface SuspendedPattern {
  /** Its index in `patterns`. */
  index: number;
  pattern: string;
  reason: string;
}

export interface PatternBudget {
  /** The patterns applied, in order. */
  applied: string[];
  suspended: SuspendedPattern[];
}

/** Programs sized so far, by source (a config is read back often; its patterns rarely change). */
const sizes = new Map<string, number | null>();
const MAX_SIZED = 1_000;

/** The RE2 instructions a pattern compiles to, as the filter compiles it; null: not RE2. */
export function patternInstructions(source: string): number | null {
  const known = sizes.get(source);
  if (known !== undefined) return known;
  let size: number | null;
  try {
    size = RE2JS.compile(source, RE2JS.CASE_INSENSITIVE).programSize();
  } catch {
    size = null;
  }
  if (sizes.size >= MAX_SIZED) sizes.delete(sizes.keys().next().value as string);
  sizes.set(source, size);
  return size;
}

/**
 * The patterns in order, each applied while the total stays within the bound; one that would
 * pass it is suspended with the reason, and the next ones are still tried (a small pattern after
 * a large one keeps working). Validation refuses exactly the patterns this suspends.
 */
export function patternBudget(patterns: readonly string[]): PatternBudget {
  const budget: PatternBudget = { applied: [], suspended: [] };
  let used = 0;
  patterns.forEach((pattern, index) => {
    const size = patternInstructions(pattern);
    // Not RE2: refused by the schema on the way in; never applied.
    if (size === null) {
      budget.suspended.push({ index, pattern, reason: "not an RE2 pattern" });
      return;
    }
    if (used + size <= MAX_PATTERN_INSTRUCTIONS) {
      used += size;
      budget.applied.push(pattern);
      return;
    }
    budget.suspended.push({ index, pattern, reason: overBudget(pattern, size, used) });
  });
  return budget;
}

function overBudget(pattern: string, size: number, used: number): string {
  const repeat = /\{(\d+)(?:,(\d*))?\}/.exec(pattern);
  const hint = repeat
    ? ` (a counted repetition such as ${repeat[0]} is written out once per repeat)`
    : "";
  const before = used > 0 ? `, and the patterns before it take ${used}` : "";
  return (
    `compiles to ${size} RE2 instructions${hint}; a filter's patterns may compile to ` +
    `${MAX_PATTERN_INSTRUCTIONS} in all${before}, so that no message takes long to check`
  );
}
