// `npm run bench:dev`: a plain turn through the local dev server as `npm run dev` runs it
// (`wrangler dev --local` with wrangler's environment from scripts/wrangler-dev.env: wrangler's own
// build, its proxy worker, its disk-backed D1 and Durable Object state), against the zero-latency
// model stand-in on loopback. The state goes to a temporary directory and
// every variable is passed on the command line, so a developer's .wrangler/state and .dev.vars are
// neither read nor touched. Prints one table: the turns in one room, after a warm-up, as the room
// grows (history and recall reads grow with it).
// `--embed-ms N --first-token-ms N`: the case a new user meets with an embedding API configured:
// the stand-in answers /embeddings after N ms (EMBEDDING_MODEL set) and streams its first token
// after the other N; the turns are streamed (`Accept: text/event-stream`) and the table gives the
// time to the first `delta` event as well.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BENCH_EMBEDDING_DIMENSIONS, startModelServer } from "./model-server.ts";
import { summarize } from "./stats.ts";
import { readStream } from "./stream.ts";
import { createBenchAgent, wranglerEntry } from "./worker-harness.ts";

const { values: flags } = parseArgs({
  options: {
    turns: { type: "string" },
    warmup: { type: "string" },
    "embed-ms": { type: "string" },
    "first-token-ms": { type: "string" },
  },
});
const latency = {
  embedMs: Number(flags["embed-ms"] ?? 0),
  firstTokenMs: Number(flags["first-token-ms"] ?? 0),
};
const delayed = latency.embedMs > 0 || latency.firstTokenMs > 0;
const TURNS = Number(flags.turns ?? (delayed ? 30 : 300));
const WARMUP = Number(flags.warmup ?? (delayed ? 5 : 30));

/** What `npm run dev` hands node before wrangler's entry: the same file, or this bench measures something else. */
const DEV_ENV_FILE = "scripts/wrangler-dev.env";

function checkDevScript(): void {
  const scripts = (
    JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> }
  ).scripts;
  if (!scripts.dev?.includes(`--env-file=${DEV_ENV_FILE}`) || !scripts.dev.includes("dev --local"))
    throw new Error(
      `package.json's dev script no longer runs wrangler as this bench does: ${scripts.dev}`,
    );
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

async function main(): Promise<void> {
  checkDevScript();
  const model = await startModelServer({ latency });
  const state = mkdtempSync(join(tmpdir(), "edge-agents-dev-bench-"));
  const token = randomBytes(24).toString("hex");
  const port = await freePort();
  const vars: Record<string, string> = {
    ADMIN_TOKEN: token,
    SECRETS_KEY: randomBytes(32).toString("base64url"),
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
    WORKERS_AI: "false",
    VECTORIZE: "false",
    SEED_CHARACTERS: "false",
    RATE_LIMIT_PER_TOKEN: "1000000/s",
    RATE_LIMIT_PER_USER: "1000000/s",
    ...(delayed
      ? { EMBEDDING_MODEL: "bench-embed", EMBEDDING_DIMENSIONS: String(BENCH_EMBEDDING_DIMENSIONS) }
      : {}),
  };
  // An env file of our own: wrangler reads it instead of the project's .dev.vars.
  const envFile = join(state, "bench.env");
  writeFileSync(
    envFile,
    Object.entries(vars)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n"),
  );
  const wrangler = spawn(
    process.execPath,
    [
      `--env-file=${DEV_ENV_FILE}`,
      wranglerEntry(),
      "dev",
      "--local",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      join(state, "state"),
      "--env-file",
      envFile,
      "--show-interactive-dev-session=false",
      ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "1" } },
  );
  let output = "";
  wrangler.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  wrangler.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const base = `http://127.0.0.1:${port}`;
  const call = (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        ...extra,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  try {
    const started = Date.now();
    for (;;) {
      if (wrangler.exitCode !== null) throw new Error(`wrangler dev exited:\n${output}`);
      if (Date.now() - started > 120_000) throw new Error(`wrangler dev did not start:\n${output}`);
      try {
        const health = await fetch(`${base}/health`);
        if (health.status === 200) break;
      } catch {
        // Not listening yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await createBenchAgent(call);
    model.respondWith(() => ({ text: "Hello!" }));
    const samples: number[] = [];
    const firstDeltas: number[] = [];
    const serverSamples: number[] = [];
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const began = performance.now();
      const response = await call(
        "POST",
        "/agents/bench/messages",
        {
          roomId: "dev-room",
          userId: "bench-user",
          text: `How is the weather today, question ${i}?`,
        },
        delayed ? { accept: "text/event-stream" } : {},
      );
      if (response.status !== 200) throw new Error(`turn failed: ${response.status}`);
      const timed = delayed ? await readStream(response, began) : null;
      if (!timed) await response.text();
      const ms = performance.now() - began;
      if (i < WARMUP) continue;
      samples.push(ms);
      if (timed) firstDeltas.push(timed.firstToken);
      const timing = /turn;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "");
      if (timing) serverSamples.push(Number(timing[1]));
    }
    const f = (n: number) => n.toFixed(1);
    const all = summarize(samples);
    const server = summarize(serverSamples);
    const rows = [
      ["all turns", all],
      ["first third", summarize(samples.slice(0, Math.floor(TURNS / 3)))],
      ["last third", summarize(samples.slice(-Math.floor(TURNS / 3)))],
    ] as const;
    console.log(
      `\nA plain turn through \`wrangler dev --local\` (as \`npm run dev\`; disk-backed state), one room, ${TURNS} turns after ${WARMUP}:\n`,
    );
    console.log("| turns | p50 ms | p95 ms | p99 ms | mean ms |");
    console.log("|---|---:|---:|---:|---:|");
    for (const [name, s] of rows)
      console.log(`| ${name} | ${f(s.p50)} | ${f(s.p95)} | ${f(s.p99)} | ${f(s.mean)} |`);
    if (delayed) {
      const first = summarize(firstDeltas);
      console.log(
        `\nstreamed, embedding ${latency.embedMs} ms and first token ${latency.firstTokenMs} ms: first delta p50 / p99 ${f(first.p50)} / ${f(first.p99)} ms`,
      );
    } else console.log(`\nin worker (room RPC) p50 / p99: ${f(server.p50)} / ${f(server.p99)} ms`);
  } finally {
    wrangler.kill("SIGTERM");
    await new Promise((resolve) => wrangler.once("exit", resolve));
    await model.close();
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
