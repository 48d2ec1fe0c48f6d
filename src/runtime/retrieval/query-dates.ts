// The calendar months a question names ("in June", "on 1 February, 2023", "October 13, 2023"):
// a question about a month is most often about what was said in it, so retrieval prefers the
// memories written then (rerank.ts). English month names only; "May" counts only beside a number
// or after "in", since it is also a verb. Dates are read as UTC, as memories' times are stored.

export interface NamedMonth {
  /** 0 = January. */
  month: number;
  /** When the question gives one (four digits beside the month). */
  year?: number;
}

/** English month names, lower-case, January first. */
export const MONTHS = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];
const MAY = 4;

/** Each month named in the text, with its year when one is written within a few words after it. */
export function namedMonths(text: string): NamedMonth[] {
  const tokens = text.match(/[A-Za-z]+|\d+/g) ?? [];
  const found: NamedMonth[] = [];
  tokens.forEach((token, i) => {
    const month = MONTHS.indexOf(token.toLowerCase());
    if (month < 0 || token[0] !== token[0]!.toUpperCase()) return;
    const next = tokens.slice(i + 1, i + 4);
    const numberBeside = /^\d+$/.test(tokens[i - 1] ?? "") || /^\d+$/.test(next[0] ?? "");
    if (month === MAY && !numberBeside && tokens[i - 1]?.toLowerCase() !== "in") return;
    const year = next.find((t) => /^(19|20)\d\d$/.test(t));
    found.push(year === undefined ? { month } : { month, year: Number(year) });
  });
  return found;
}

/** Whether a time (ms since the epoch) falls in one of the months. */
export function inNamedMonth(at: number, months: readonly NamedMonth[]): boolean {
  const date = new Date(at);
  return months.some(
    (m) =>
      m.month === date.getUTCMonth() && (m.year === undefined || m.year === date.getUTCFullYear()),
  );
}
