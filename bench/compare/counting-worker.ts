// Starts the worker for `npm run bench:compare` as bench/worker-harness.ts does (bundled as
// `wrangler deploy` would, in Miniflare's local workerd, fresh in-memory state), but bundled from
// counting-entry.ts so D1 and object SQL statements can be counted, and hands back the workerd
// process's id so its CPU time and resident memory can be read from /proc.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { convertV4MiniflareOptions, Miniflare, type V4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import type { Call } from "../worker-harness.ts";

export interface SqlCounts {
  d1Statements: number;
  d1RoundTrips: number;
  objectSqlStatements: number;
}

export interface CountingWorker {
  call: Call;
  /** The SQL counted since the last take. */
  takeCounts(): Promise<SqlCounts>;
  /** The workerd process (Miniflare's child) that runs the worker, D1 and the objects. */
  pid: number;
  stop(): Promise<void>;
}

export async function startCountingWorker(
  bindings: Record<string, string>,
): Promise<CountingWorker> {
  const token = randomBytes(24).toString("hex");
  // Inside the project: workerd resolves module names relative to it and refuses "..".
  const dist = join(".wrangler", "bench-compare-dist");
  const wrangler = join(
    dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
    "bin",
    "wrangler.js",
  );
  rmSync(dist, { recursive: true, force: true });
  try {
    execFileSync(
      process.execPath,
      [wrangler, "deploy", "bench/compare/counting-entry.ts", "--dry-run", "--outdir", dist],
      { stdio: "pipe" },
    );
  } catch (error) {
    const output = error instanceof Error && "stderr" in error ? String(error.stderr) : "";
    throw new Error(`bundling the worker (wrangler deploy --dry-run) failed:\n${output}`);
  }
  const { modulesRules: _rules, ...workerOptions } =
    unstable_getMiniflareWorkerOptions("wrangler.toml").workerOptions;
  const options: V4MiniflareOptions = {
    workers: [
      {
        ...workerOptions,
        name: "edge-agents",
        modules: [
          "counting-entry.js",
          ...readdirSync(dist).filter((file) => file.endsWith(".wasm")),
        ].map((file) => ({
          type: file.endsWith(".wasm") ? ("CompiledWasm" as const) : ("ESModule" as const),
          path: join(dist, file),
        })),
        bindings: {
          ...(workerOptions.bindings ?? {}),
          // The same bindings as bench/worker-harness.ts: no developer .dev.vars, limits that
          // never bite (the limiter still runs on every request), no remote-only AI binding.
          OPENAI_API_KEY: "",
          OPENAI_BASE_URL: "",
          EMBEDDING_MODEL: "",
          EMBEDDING_DIMENSIONS: "",
          ADMIN_TOKEN: token,
          RATE_LIMIT_PER_TOKEN: "1000000/s",
          RATE_LIMIT_PER_USER: "1000000/s",
          DAILY_TOKEN_LIMIT: "",
          SECRETS_KEY: randomBytes(32).toString("base64url"),
          WORKERS_AI: "false",
          SEED_CHARACTERS: "false",
          ...bindings,
        },
      },
    ],
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      stdout.resume();
      stderr.resume();
    },
    handleStructuredLogs: () => {},
  };
  const before = new Set(workerdChildren());
  const mf = new Miniflare(convertV4MiniflareOptions(options));
  const base = (await mf.ready).origin;
  const pid = workerdChildren().find((child) => !before.has(child));
  if (pid === undefined) throw new Error("could not find the workerd process Miniflare started");
  const health = (await (await fetch(`${base}/health`)).json()) as {
    schema?: { error: unknown } | null;
  };
  if (!health.schema || health.schema.error)
    throw new Error(`the worker could not migrate its database: ${JSON.stringify(health.schema)}`);
  const call: Call = (method, path, body, headers = {}) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return {
    call,
    takeCounts: async () => (await (await fetch(`${base}/__compare/counts`)).json()) as SqlCounts,
    pid,
    stop: () => mf.dispose(),
  };
}

/** workerd processes whose parent is this process. */
function workerdChildren(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (name.startsWith("workerd") && ppid === process.pid) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}
