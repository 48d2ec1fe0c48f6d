// bench:capacity's projection: how long one D1 database lasts, and how many statements and round
// trips a second it takes, at 1k, 10k and 100k turns a day, from the measured figures per turn.
// Plain arithmetic on averages: a day's turns are spread evenly, so peaks are higher.

/** D1's largest database (Workers Paid), in decimal bytes as Cloudflare states sizes. */
export const D1_MAX_BYTES = 10_000_000_000;
export const TURNS_PER_DAY = [1_000, 10_000, 100_000] as const;
const SECONDS_PER_DAY = 86_400;

export interface PerTurn {
  label: string;
  bytes: number;
  statements: number;
  trips: number;
}

/** Rows of label, bytes per turn, then days to 10 GB at each rate. */
export function daysRows(perTurn: PerTurn[]): Array<Array<string | number>> {
  return perTurn.map((row) => [
    row.label,
    row.bytes,
    ...TURNS_PER_DAY.map((rate) => (row.bytes > 0 ? D1_MAX_BYTES / (row.bytes * rate) : NaN)),
  ]);
}

/** Rows of label, then statements a second and round trips a second at each rate. */
export function loadRows(perTurn: PerTurn[]): Array<Array<string | number>> {
  return perTurn.map((row) => [
    row.label,
    ...TURNS_PER_DAY.map(
      (rate) =>
        `${formatRate((row.statements * rate) / SECONDS_PER_DAY)} / ${formatRate((row.trips * rate) / SECONDS_PER_DAY)}`,
    ),
  ]);
}

export function rateHeader(rate: number): string {
  return `${rate >= 1_000 ? `${rate / 1_000}k` : rate} turns/day`;
}

function formatRate(perSecond: number): string {
  return perSecond >= 10 ? perSecond.toFixed(0) : perSecond.toFixed(1);
}
