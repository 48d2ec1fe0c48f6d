// `npm run bench:compare [-- --runs 3 --turns 200]`: our plain DM turn through local workerd and
// ElizaOS 1.7.2's real runtime answering a DM in-process, both with a model that answers at once,
// measured in one run and printed side by side: reply p50/p99, CPU ms, model calls and SQL
// statements per message, resident memory, and the ratio of reply p50s. With --runs N each
// figure is the median of N runs (the sides alternate). Installs ElizaOS into
// bench/peers/elizaos/node_modules the first time (from the npm registry).
// `--embed-ms N --first-token-ms N --tokens-per-s N` give both sides' models the same production-like
// waits (our stand-in and its /embeddings; ElizaOS's registered handlers) and add first-token p50 of
// the same turn streamed, and the model and embedding calls each reply waited for one after another.
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { runElizaOSSide, installElizaOS } from "./compare/elizaos-side.ts";
import { anyDelay, type CompareDelays, describeDelays } from "./compare/delays.ts";
import { type Figures, medianFigures, type PeerResult } from "./compare/peer-result.ts";
import { runWorkerdSide } from "./compare/workerd-side.ts";
import { markdownTable } from "./stats.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "1" },
    turns: { type: "string", default: "200" },
    warmup: { type: "string", default: "20" },
    "embed-ms": { type: "string", default: "0" },
    "first-token-ms": { type: "string", default: "0" },
    "tokens-per-s": { type: "string", default: "0" },
  },
});
const runs = Number(values.runs);
const turns = Number(values.turns);
const warmup = Number(values.warmup);
const delays: CompareDelays = {
  embedMs: Number(values["embed-ms"]),
  firstTokenMs: Number(values["first-token-ms"]),
  tokensPerSecond: Number(values["tokens-per-s"]),
};

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nbench:compare: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        " ",
      )}; ${runs} run(s) of ${turns} messages after ${warmup} warm-up; ${describeDelays(delays)}`,
  );
  installElizaOS();
  const ours: PeerResult[] = [];
  const theirs: PeerResult[] = [];
  for (let run = 1; run <= runs; run++) {
    console.log(`run ${run}/${runs}: edge-agents in local workerd...`);
    ours.push(await runWorkerdSide(turns, warmup, delays));
    console.log(`run ${run}/${runs}: ElizaOS 1.7.2 in-process...`);
    theirs.push(await runElizaOSSide(turns, warmup, delays));
  }
  console.log(
    `\nload after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
  );
  console.log(compareTable(medianFigures(ours), medianFigures(theirs), delays));
}

export function compareTable(ours: Figures, theirs: Figures, delays: CompareDelays): string {
  const row = (name: string, pick: (f: Figures) => number, digits: number) => [
    name,
    pick(ours).toFixed(digits),
    pick(theirs).toFixed(digits),
  ];
  const both = (name: string, show: (f: Figures) => string) => [name, show(ours), show(theirs)];
  const sequenceOf = (model: boolean) => (f: Figures) => {
    const s = f.sequence;
    if (!s) return "-";
    const [inSequence, before] = model
      ? [s.modelInSequence, s.modelBefore]
      : [s.embeddingInSequence, s.embeddingBefore];
    return `${inSequence.toFixed(2)} (of ${before.toFixed(2)} ended before it)`;
  };
  const delayed = anyDelay(delays)
    ? [
        both("first token p50 ms (streamed)", (f) =>
          f.firstTokenP50 === undefined ? "does not stream" : f.firstTokenP50.toFixed(1),
        ),
        both("model calls in sequence before the reply", sequenceOf(true)),
        both("embedding calls in sequence before the reply", sequenceOf(false)),
      ]
    : [];
  return [
    markdownTable(
      [
        `per message (DM, ${describeDelays(delays)})`,
        "edge-agents (local workerd)",
        "ElizaOS 1.7.2 (in-process)",
      ],
      [
        row("reply p50 ms", (f) => f.p50, 1),
        row("reply p99 ms", (f) => f.p99, 1),
        ...delayed,
        row("CPU ms", (f) => f.cpuMs, 1),
        row("model calls (text)", (f) => f.modelCalls, 2),
        ["model calls: which prompts", ours.modelDetail, theirs.modelDetail],
        row("embedding calls", (f) => f.embeddingCalls, 2),
        row("SQL statements", (f) => f.sql, 1),
        ["SQL statements: where", ours.sqlDetail, theirs.sqlDetail],
        row("resident memory MiB", (f) => f.rssMb, 0),
      ],
    ),
    "",
    `ElizaOS reply p50 / edge-agents reply p50: ${(theirs.p50 / ours.p50).toFixed(2)}x`,
  ].join("\n");
}

main().catch((error: unknown) => {
  console.error(`bench:compare failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
