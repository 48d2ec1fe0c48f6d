// Percentiles and the markdown tables the benchmarks print. Nearest-rank percentiles on the sorted
// samples: with a few hundred turns per scenario, p99 is the third-slowest-ish turn, not an average.

export interface Summary {
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  n: number;
}

export interface Row {
  scenario: string;
  turns: number;
  latency: Summary;
  server: Summary;
  modelCallsPerTurn: number;
  modelMs: number[];
}

export function summarize(samples: number[]): Summary {
  if (samples.length === 0) return { p50: NaN, p95: NaN, p99: NaN, mean: NaN, n: 0 };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  return {
    p50: at(50),
    p95: at(95),
    p99: at(99),
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    n: sorted.length,
  };
}

export function table(rows: Row[]): string {
  const f = (n: number) => (Number.isNaN(n) ? "-" : n.toFixed(1));
  const lines = [
    "| scenario | turns | p50 ms | p95 ms | p99 ms | mean ms | in worker p50 / p99 ms | model calls/turn | model time p50 ms |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.scenario} | ${row.turns} | ${f(row.latency.p50)} | ${f(row.latency.p95)} | ${f(row.latency.p99)} | ${f(row.latency.mean)} | ${f(row.server.p50)} / ${f(row.server.p99)} | ${row.modelCallsPerTurn.toFixed(2)} | ${f(summarize(row.modelMs).p50)} |`,
    );
  }
  return lines.join("\n");
}

export function coreTable(
  rows: { scenario: string; turns: number; latency: Summary; modelCallsPerTurn: number }[],
): string {
  const f = (n: number) => n.toFixed(3);
  const lines = [
    "| scenario | turns | p50 ms | p95 ms | p99 ms | mean ms | model calls/turn |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.scenario} | ${row.turns} | ${f(row.latency.p50)} | ${f(row.latency.p95)} | ${f(row.latency.p99)} | ${f(row.latency.mean)} | ${row.modelCallsPerTurn.toFixed(2)} |`,
    );
  }
  return lines.join("\n");
}

export type Cell = string | number;

/**
 * A markdown table from plain rows, for benchmarks whose rows are not turn scenarios. Number
 * columns are right-aligned with `digits` decimals (one value, or one per column; NaN prints "-").
 */
export function markdownTable(
  headers: string[],
  rows: Cell[][],
  digits: number | readonly number[] = 1,
): string {
  const decimals = (i: number) => (typeof digits === "number" ? digits : (digits[i] ?? 1));
  const numeric = headers.map((_, i) => rows.some((row) => typeof row[i] === "number"));
  const cell = (value: Cell | undefined, i: number) =>
    typeof value === "number"
      ? Number.isNaN(value)
        ? "-"
        : value.toFixed(decimals(i))
      : (value ?? "");
  return [
    `| ${headers.join(" | ")} |`,
    `|${numeric.map((n) => (n ? "---:" : "---")).join("|")}|`,
    ...rows.map((row) => `| ${headers.map((_, i) => cell(row[i], i)).join(" | ")} |`),
  ].join("\n");
}
