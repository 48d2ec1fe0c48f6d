// `npm run bench:smoke`: every benchmark once, at its smallest size, one after another, to show
// each still runs (on a fresh clone too); the figures it prints are not for RESULTS.md. Part of the
// full tier (docs/testing.md): about 20 minutes on 2 cores, never needed to land a change.
// Prints a table of command, result and seconds, and exits 1 if any failed.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { markdownTable } from "./stats.ts";

/** Each bench script at its smallest size (the flags its own usage line names). */
const RUNS: Array<{ script: string; args: string[]; needsLocomo?: boolean }> = [
  { script: "bench", args: [] },
  { script: "bench", args: ["--turns", "2", "--embed-ms", "1", "--first-token-ms", "1"] },
  { script: "bench", args: ["--d1-ms", "1", "--do-ms", "1"] },
  { script: "bench:memory", args: ["--only", "scale", "--sizes", "100"] },
  { script: "bench:memory", args: ["--only", "locomo"], needsLocomo: true },
  { script: "bench:discord", args: [] },
  { script: "bench:channels", args: ["--acks", "10", "--chatter", "16", "--replies", "3"] },
  { script: "bench:filter", args: ["--runs", "10"] },
  { script: "bench:mcp", args: [] },
  { script: "bench:load", args: [] },
  { script: "bench:media", args: [] },
  { script: "bench:stream", args: ["--turns", "3", "--warmup", "1"] },
  { script: "bench:page", args: [] },
  { script: "bench:tasks", args: [] },
  { script: "bench:web", args: [] },
  { script: "bench:compare", args: ["--runs", "1", "--turns", "5", "--warmup", "1"] },
  { script: "bench:dev", args: ["--turns", "3", "--warmup", "1"] },
  { script: "bench:floor", args: ["--turns", "6", "--blocks", "1", "--load", "0"] },
  { script: "bench:capacity", args: ["--turns", "20", "--rooms", "5"] },
  { script: "bench:cache", args: ["--turns", "3"] },
  { script: "bench:profile", args: ["--turns", "5", "--warmup", "1", "--top", "5"] },
];

/** Where bench:memory reads the LoCoMo dev set (bench/memory.ts): not in the repository. */
const LOCOMO =
  process.env.LOCOMO_PATH ??
  fileURLToPath(new URL("../../shared/data/locomo-dev.json", import.meta.url));
/** A single bench run may take this long before it counts as failed. */
const RUN_TIMEOUT_MS = 6 * 60_000;

const rows: Array<Array<string | number>> = [];
let failed = 0;
for (const run of RUNS) {
  const command = `npm run ${run.script}${run.args.length > 0 ? ` -- ${run.args.join(" ")}` : ""}`;
  if (run.needsLocomo && !existsSync(LOCOMO)) {
    rows.push([command, `skipped: no LoCoMo dev set at ${LOCOMO} (LOCOMO_PATH)`, 0]);
    continue;
  }
  const started = performance.now();
  console.log(`\n$ ${command}`);
  const result = spawnSync(
    "npm",
    ["run", run.script, ...(run.args.length > 0 ? ["--", ...run.args] : [])],
    {
      stdio: ["ignore", "inherit", "inherit"],
      timeout: RUN_TIMEOUT_MS,
    },
  );
  const seconds = Math.round((performance.now() - started) / 1000);
  const ok = result.status === 0;
  if (!ok) failed += 1;
  rows.push([
    command,
    ok ? "ok" : result.signal ? `timed out (${result.signal})` : `exit ${result.status}`,
    seconds,
  ]);
}
console.log(`\n${markdownTable(["command", "result", "s"], rows)}`);
process.exit(failed > 0 ? 1 : 0);
