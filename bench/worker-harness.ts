// Starts the worker exactly as `wrangler deploy` would bundle it, in Miniflare's local workerd
// with the bindings wrangler.toml declares (D1, R2, Durable Objects in a fresh in-memory state)
// and the D1 migrations applied, for the benchmarks. Returns an authenticated JSON caller.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { convertV4MiniflareOptions, Miniflare, type V4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_splitSqlQuery } from "wrangler";

export type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>;

export interface BenchWorker {
  base: string;
  /** The worker's ADMIN_TOKEN, for callers that build their own requests (e.g. the memory CLI). */
  token: string;
  call: Call;
  stop(): Promise<void>;
}

export async function startBenchWorker(bindings: Record<string, string>): Promise<BenchWorker> {
  // Hex: a base64url token can start with "-", which a command line reads as an option.
  const token = randomBytes(24).toString("hex");
  // Inside the project: workerd resolves module names relative to it and refuses "..".
  const dist = join(".wrangler", "bench-dist");
  // wrangler's own entry under this Node (22): works from npm scripts and from a bare `node bench/x.ts`.
  const wrangler = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");
  try {
    execFileSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", dist], { stdio: "pipe" });
  } catch (error) {
    const output = error instanceof Error && "stderr" in error ? String(error.stderr) : "";
    throw new Error(`bundling the worker (wrangler deploy --dry-run) failed:\n${output}`);
  }
  // The dry-run output is already bundled: one JavaScript module, plus the WebAssembly it imports.
  const { modulesRules: _rules, ...workerOptions } = unstable_getMiniflareWorkerOptions("wrangler.toml").workerOptions;
  // wrangler hands out Miniflare's v4-style worker options; Miniflare 5 converts them.
  const options: V4MiniflareOptions = {
    workers: [
      {
        ...workerOptions,
        name: "edge-agents",
        // The entry first, then what it imports (named as in its import statements).
        modules: ["index.js", ...readdirSync(dist).filter((file) => file.endsWith(".wasm"))].map((file) => ({
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
          ...bindings,
        },
      },
    ],
    // The worker logs one JSON line per runtime event, as in production; keep them off the tables.
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      stdout.resume();
      stderr.resume();
    },
    handleStructuredLogs: () => {},
  };
  const mf = new Miniflare(convertV4MiniflareOptions(options));
  const url = await mf.ready;
  const db = await mf.getD1Database("DB");
  for (const file of readdirSync("migrations").filter((name) => name.endsWith(".sql")).sort()) {
    for (const query of unstable_splitSqlQuery(readFileSync(join("migrations", file), "utf8"))) await db.prepare(query).run();
  }
  const base = url.origin;
  const call: Call = (method, path, body, headers = {}) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { base, token, call, stop: () => mf.dispose() };
}
