// Starts the worker exactly as `wrangler deploy` would bundle it, in Miniflare's local workerd with
// the bindings wrangler.toml declares, for the benchmarks: D1 and Durable Objects fresh each run but
// on disk, as under `npm run dev` (a temporary directory; each SQLite commit fsyncs). The worker
// applies its D1 migrations itself; the harness waits for that. Returns an authenticated JSON caller.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, extname, join } from "node:path";
import type { Readable } from "node:stream";
import { convertV4MiniflareOptions, Miniflare, type V4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

export type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<Response>;

export interface BenchWorker {
  base: string;
  /** The worker's ADMIN_TOKEN, for callers that build their own requests (e.g. the memory CLI). */
  token: string;
  call: Call;
  /** The workerd process running the worker, D1 and the objects (from /proc; null without it). */
  pid: number | null;
  stop(): Promise<void>;
}

export interface BenchWorkerOptions {
  /**
   * Another entry module to bundle instead of wrangler.toml's `main` (it must export the same
   * Durable Object classes): bench/latency/entry.ts, which delays and records D1 and object calls.
   */
  entry?: string;
  /** Memory databases MEMORY_DB_1..n besides DB (src/db/shards.ts); none by default. */
  memoryDatabases?: number;
  /** Opens workerd's inspector (Chrome DevTools protocol) on this port, for profiling. */
  inspectorPort?: number;
}

/** wrangler's own entry, to run under this Node (22): from npm scripts and from a bare `node bench/x.ts`. */
export function wranglerEntry(): string {
  return join(
    dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
    "bin",
    "wrangler.js",
  );
}

/** Creates the benchmarks' agent, "Bench" (id `bench` unless given); throws if it is refused. */
export async function createBenchAgent(
  call: Call,
  agent: { id?: string; settings?: Record<string, unknown> } = {},
): Promise<void> {
  const created = await call("POST", "/agents", {
    id: agent.id ?? "bench",
    name: "Bench",
    bio: ["A benchmark agent."],
    system: "You are Bench.",
    ...(agent.settings ? { settings: agent.settings } : {}),
  });
  if (created.status !== 201)
    throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);
}

export async function startBenchWorker(
  bindings: Record<string, string>,
  options: BenchWorkerOptions = {},
): Promise<BenchWorker> {
  // Hex: a base64url token can start with "-", which a command line reads as an option.
  const token = randomBytes(24).toString("hex");
  // Inside the project: workerd resolves module names relative to it and refuses "..".
  const dist = join(".wrangler", options.entry ? "bench-dist-entry" : "bench-dist");
  const wrangler = wranglerEntry();
  rmSync(dist, { recursive: true, force: true });
  try {
    const entry = options.entry ? [options.entry] : [];
    execFileSync(process.execPath, [wrangler, "deploy", ...entry, "--dry-run", "--outdir", dist], {
      stdio: "pipe",
    });
  } catch (error) {
    const output = error instanceof Error && "stderr" in error ? String(error.stderr) : "";
    throw new Error(`bundling the worker (wrangler deploy --dry-run) failed:\n${output}`);
  }
  // The dry-run output is already bundled: one JavaScript module, plus the WebAssembly it imports.
  const { modulesRules: _rules, ...workerOptions } =
    unstable_getMiniflareWorkerOptions("wrangler.toml").workerOptions;
  // wrangler hands out Miniflare's v4-style worker options; Miniflare 5 converts them.
  const miniflareOptions: V4MiniflareOptions = {
    ...(options.inspectorPort ? { inspectorPort: options.inspectorPort } : {}),
    workers: [
      {
        ...workerOptions,
        name: "edge-agents",
        ...(options.memoryDatabases
          ? {
              d1Databases: {
                ...(workerOptions.d1Databases as Record<string, string> | undefined),
                ...Object.fromEntries(
                  Array.from({ length: options.memoryDatabases }, (_, i) => [
                    `MEMORY_DB_${i + 1}`,
                    `memory-db-${i + 1}`,
                  ]),
                ),
              },
            }
          : {}),
        // The entry first, then what it imports (named as in its import statements).
        modules: [
          options.entry ? `${basename(options.entry, extname(options.entry))}.js` : "index.js",
          ...readdirSync(dist).filter((file) => file.endsWith(".wasm")),
        ].map((file) => ({
          type: file.endsWith(".wasm") ? ("CompiledWasm" as const) : ("ESModule" as const),
          path: join(dist, file),
        })),
        bindings: {
          ...(workerOptions.bindings ?? {}),
          // wrangler reads a developer's .dev.vars; benchmarks must not pick up its model or keys.
          OPENAI_API_KEY: "",
          OPENAI_BASE_URL: "",
          EMBEDDING_MODEL: "",
          EMBEDDING_DIMENSIONS: "",
          ADMIN_TOKEN: token,
          // Benchmarks drive one token and few users hard: limits that never bite, but the limiter
          // still runs on every request, so its cost is in the figures.
          RATE_LIMIT_PER_TOKEN: "1000000/s",
          RATE_LIMIT_PER_USER: "1000000/s",
          DAILY_TOKEN_LIMIT: "",
          SECRETS_KEY: randomBytes(32).toString("base64url"),
          // The AI binding answers only remotely; benchmarks make their own agents.
          WORKERS_AI: "false",
          VECTORIZE: "false",
          SEED_CHARACTERS: "false",
          ...bindings,
        },
      },
    ],
    // The worker logs one JSON line per runtime event, as in production; keep them off the tables.
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      if (process.env.BENCH_WORKER_LOGS) {
        stdout.pipe(process.stderr);
        stderr.pipe(process.stderr);
        return;
      }
      stdout.resume();
      stderr.resume();
    },
    handleStructuredLogs: process.env.BENCH_WORKER_LOGS
      ? (entry: { message: string }) => console.error(entry.message)
      : () => {},
  };
  const before = new Set(workerdChildren());
  const mf = new Miniflare(convertV4MiniflareOptions(miniflareOptions));
  const url = await mf.ready;
  const pid = workerdChildren().find((child) => !before.has(child)) ?? null;
  const base = url.origin;
  // The first request brings D1 up to the bundled migrations (the SchemaGate).
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
  return { base, token, call, pid, stop: () => mf.dispose() };
}

/** workerd processes whose parent is this process (none where there is no /proc). */
function workerdChildren(): number[] {
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
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
