// What each side of `npm run bench:compare` measures over its N messages (after warm-up), the
// /proc readings for a process's CPU time and resident memory, and the median of several runs.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { summarize } from "../stats.ts";
import type { CallSequence } from "./call-sequence.ts";

export interface PeerResult {
  turns: number;
  /** Per message: from sending it to the reply reaching the sender. */
  replyMs: number[];
  /** CPU time (user + system) of the process doing the work, after-reply work included. */
  cpuMsPerMessage: number;
  /** Text generations (reply and side prompts such as reflection or fact extraction). */
  modelCallsPerMessage: number;
  /** Which prompts they were, e.g. "reply 1.00 + fact extraction 0.30". */
  modelDetail: string;
  embeddingCallsPerMessage: number;
  sqlPerMessage: number;
  /** Where the SQL went, e.g. "D1 3.0 in 2.0 round trips + object SQLite 4.0". */
  sqlDetail: string;
  rssMb: number;
  /** Under delays only: per streamed message, from sending it to the first token of the reply. */
  firstTokenMs?: number[];
  /** Under delays only: the model and embedding calls each reply waited for. */
  sequence?: CallSequence;
}

let ticksPerSecond: number | undefined;

/** CPU milliseconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function processCpuMs(pid: number): number {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name: state is field 3, utime 14 and stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

/** Resident memory of a process in MiB, from /proc/<pid>/status. */
export function processRssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Resolves once the process has used no more CPU for two readings in a row (after-reply work). */
export async function cpuQuiet(pid: number, maxMs = 15_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = processCpuMs(pid);
  let still = 0;
  while (still < 2 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = processCpuMs(pid);
    still = now - last <= 10 ? still + 1 : 0;
    last = now;
  }
}

export interface Figures {
  p50: number;
  p99: number;
  cpuMs: number;
  modelCalls: number;
  modelDetail: string;
  embeddingCalls: number;
  sql: number;
  sqlDetail: string;
  rssMb: number;
  firstTokenP50?: number;
  sequence?: CallSequence;
}

/** Each figure the median over the runs (a detail: the median run's by that figure). */
export function medianFigures(runs: PeerResult[]): Figures {
  const median = (values: number[]) => summarize(values).p50;
  const middle = (by: (r: PeerResult) => number) =>
    [...runs].sort((a, b) => by(a) - by(b))[Math.floor((runs.length - 1) / 2)];
  return {
    p50: median(runs.map((r) => summarize(r.replyMs).p50)),
    p99: median(runs.map((r) => summarize(r.replyMs).p99)),
    cpuMs: median(runs.map((r) => r.cpuMsPerMessage)),
    modelCalls: median(runs.map((r) => r.modelCallsPerMessage)),
    modelDetail: middle((r) => r.modelCallsPerMessage)?.modelDetail ?? "",
    embeddingCalls: median(runs.map((r) => r.embeddingCallsPerMessage)),
    sql: median(runs.map((r) => r.sqlPerMessage)),
    sqlDetail: middle((r) => r.sqlPerMessage)?.sqlDetail ?? "",
    rssMb: median(runs.map((r) => r.rssMb)),
    ...(runs.every((r) => r.firstTokenMs)
      ? { firstTokenP50: median(runs.map((r) => summarize(r.firstTokenMs ?? []).p50)) }
      : {}),
    ...(runs.every((r) => r.sequence) ? { sequence: medianSequence(runs, median) } : {}),
  };
}

function medianSequence(runs: PeerResult[], median: (values: number[]) => number): CallSequence {
  const of = (key: keyof CallSequence) => median(runs.map((r) => r.sequence?.[key] ?? 0));
  return {
    modelBefore: of("modelBefore"),
    embeddingBefore: of("embeddingBefore"),
    modelInSequence: of("modelInSequence"),
    embeddingInSequence: of("embeddingInSequence"),
  };
}
