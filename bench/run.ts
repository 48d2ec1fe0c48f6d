// `npm run bench`: runtime overhead per turn through the real worker in local workerd (wrangler),
// with a zero-latency OpenAI-compatible stand-in on loopback. Prints a table per scenario: a plain
// turn, a two-tool turn, and a turn in a room that already holds 1,000 messages. Only loopback
// traffic; a fresh temporary D1/Durable Object state every run.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { startModelServer, type ModelServer } from "./model-server.ts";
import { runCoreBench } from "./core.ts";
import { coreTable, summarize, table, type Row } from "./stats.ts";
import { startBenchWorker } from "./worker-harness.ts";

const workDir = mkdtempSync(join(tmpdir(), "edge-agents-bench-"));

interface Scenario {
  name: string;
  turns: number;
  warmup: number;
  room: (i: number) => string;
  script: (model: ModelServer) => void;
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const core = await runCoreBench();
  console.log(
    "\n1. Runtime core per turn (src/runtime in Node, in-memory stores, a model that answers instantly):\n",
  );
  console.log(coreTable(core));

  const model = await startModelServer();
  const worker = await startBenchWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
  });
  const call = worker.call;

  try {
    const created = await call("POST", "/agents", {
      id: "bench",
      name: "Bench",
      bio: ["A benchmark agent."],
      system: "You are Bench.",
    });
    if (created.status !== 201)
      throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);

    // 500 turns = 1,000 stored messages, through the API (not timed).
    model.respondWith(() => ({ text: "Noted." }));
    for (let i = 0; i < 500; i++) await turn(call, "long-room", `filler message ${i}`);

    const scenarios: Scenario[] = [
      {
        name: "plain turn (same room)",
        turns: 300,
        warmup: 20,
        room: () => "plain-room",
        script: (m) => m.respondWith(() => ({ text: "Hello!" })),
      },
      {
        name: "plain turn (new room each)",
        turns: 200,
        warmup: 10,
        room: (i) => `fresh-${i}`,
        script: (m) => m.respondWith(() => ({ text: "Hello!" })),
      },
      {
        name: "two-tool turn (3 model calls)",
        turns: 200,
        warmup: 10,
        room: () => "tool-room",
        script: twoToolScript,
      },
      {
        name: "room with 1,000 prior messages",
        turns: 200,
        warmup: 10,
        room: () => "long-room",
        script: (m) => m.respondWith(() => ({ text: "Hello!" })),
      },
    ];
    const rows: Row[] = [];
    for (const scenario of scenarios) {
      scenario.script(model);
      const latencies: number[] = [];
      const serverMs: number[] = [];
      let modelCalls = 0;
      for (let i = 0; i < scenario.warmup + scenario.turns; i++) {
        const before = model.calls();
        const result = await turn(call, scenario.room(i), `message ${i}`);
        if (i < scenario.warmup) continue;
        latencies.push(result.ms);
        if (result.serverMs !== null) serverMs.push(result.serverMs);
        modelCalls += model.calls() - before;
      }
      rows.push({
        scenario: scenario.name,
        turns: scenario.turns,
        latency: summarize(latencies),
        server: summarize(serverMs),
        modelCallsPerTurn: modelCalls / scenario.turns,
        modelMs: model.takeServiceTimes(),
      });
    }

    console.log(
      "\n2. Whole turn through the worker in local workerd (Miniflare; D1 and Durable Objects local), model stand-in",
    );
    console.log(
      "   answering at once over loopback HTTP. Latency measured by the client; `in worker` is the worker's",
    );
    console.log("   Server-Timing for the room RPC (journal, D1, model round trip).\n");
    console.log(table(rows));
  } finally {
    await worker.stop();
    await model.close();
    rmSync(workDir, { recursive: true, force: true });
  }
}

function twoToolScript(model: ModelServer): void {
  let round = 0;
  model.respondWith(() => {
    round = (round + 1) % 3;
    if (round === 1)
      return { toolCalls: [{ name: "current_time", arguments: { timeZone: "UTC" } }] };
    if (round === 2) return { toolCalls: [{ name: "list_available_tools", arguments: {} }] };
    return { text: "It is now, and these are my tools." };
  });
}

async function turn(
  call: (method: string, path: string, body?: unknown) => Promise<Response>,
  roomId: string,
  text: string,
) {
  const started = performance.now();
  const response = await call("POST", "/agents/bench/messages", {
    roomId,
    userId: "bench-user",
    text,
  });
  const body = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${body}`);
  const timing = /turn;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "");
  return { ms, serverMs: timing ? Number(timing[1]) : null };
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  rmSync(workDir, { recursive: true, force: true });
  process.exit(1);
});
