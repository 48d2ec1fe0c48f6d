// ElizaOS's side of `npm run bench:compare`: installs bench/peers/elizaos (ElizaOS 1.7.2 pinned by
// its own package-lock) into its own node_modules the first time, then runs its driver in a child
// process, so the CPU time and resident memory it reports are ElizaOS's alone. The driver's log
// (ElizaOS logs at its default level) goes to bench/results/elizaos.log. Under delays the driver
// hands back each call's and each message's times, read here as call-sequence.ts reads ours.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callSequence, type TimedCall, type TimedTurn } from "./call-sequence.ts";
import { anyDelay, type CompareDelays, delaysEnv } from "./delays.ts";
import type { PeerResult } from "./peer-result.ts";

const peer = join("bench", "peers", "elizaos");
const version = "1.7.2";

export function installElizaOS(): void {
  const installed = join(peer, "node_modules", "@elizaos", "core", "package.json");
  if (existsSync(installed)) {
    const { version: found } = JSON.parse(readFileSync(installed, "utf8")) as { version: string };
    if (found === version) return;
  }
  console.log(`installing ElizaOS ${version} into ${peer}/node_modules (once)...`);
  // npm ci: exactly the locked tree. No install scripts: nothing here needs building (the `bun`
  // package plugin-bootstrap lists would fetch a binary the driver never runs).
  execFileSync("npm", ["ci", "--prefix", peer, "--no-audit", "--no-fund", "--ignore-scripts"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
}

interface DriverOutput {
  turns: number;
  replyMs: number[];
  cpuMsPerMessage: number;
  modelCallsPerMessage: number;
  modelCallKinds: Record<string, number>;
  embeddingCallsPerMessage: number;
  sqlPerMessage: number;
  rssMb: number;
  /** Under delays only (see driver.ts). */
  timedTurns?: TimedTurn[];
  calls?: TimedCall[];
  firstTokenMs?: number[];
}

export async function runElizaOSSide(
  turns: number,
  warmup: number,
  delays: CompareDelays,
): Promise<PeerResult> {
  const out = join(tmpdir(), `elizaos-compare-${process.pid}-${Date.now()}.json`);
  mkdirSync(join("bench", "results"), { recursive: true });
  const log = openSync(join("bench", "results", "elizaos.log"), "w");
  const child = spawn(process.execPath, ["driver.ts", out], {
    cwd: peer,
    env: {
      ...process.env,
      COMPARE_TURNS: String(turns),
      COMPARE_WARMUP: String(warmup),
      ...delaysEnv(delays),
    },
    stdio: ["ignore", log, log],
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0)
    throw new Error(`the ElizaOS driver exited with ${code}: see bench/results/elizaos.log`);
  const result = JSON.parse(readFileSync(out, "utf8")) as DriverOutput;
  rmSync(out, { force: true });
  const { modelCallKinds, timedTurns, calls, firstTokenMs, ...figures } = result;
  return {
    ...figures,
    ...(anyDelay(delays) && timedTurns && calls
      ? { sequence: callSequence(calls, timedTurns), ...(firstTokenMs ? { firstTokenMs } : {}) }
      : {}),
    modelDetail: Object.entries(modelCallKinds)
      .map(([kind, n]) => `${kind} ${(n / turns).toFixed(2)}`)
      .join(" + "),
    sqlDetail: `PGlite in-process: ${result.sqlPerMessage.toFixed(1)} queries`,
  };
}
