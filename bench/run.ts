// `npm run bench`: runtime overhead per turn through the real worker in local workerd (wrangler),
// with a zero-latency OpenAI-compatible stand-in on loopback. Prints a table per scenario: a plain
// turn (admin token, minted token, new room), a two-tool turn, a turn in a room that already
// holds 1,000 messages, and one in a busy room of an agent holding 20,000 memories; then a burst of 20 turns sent at once to one room against isolated turns
// (bench/burst.ts). Only loopback traffic; a fresh temporary D1/Durable Object state every run.
// `npm run bench -- --d1-ms 20 --do-ms 10` runs the worker with every D1 round trip and Durable
// Object call delayed by that much (bench/latency/) and also prints, per scenario, how many of them
// are sequential before the model request, before the reply, and after it.
// `npm run bench -- --embed-ms 400 --first-token-ms 300 [--tokens-per-s 50]` (with or without the
// two above) runs only a plain turn at production latencies instead: bench/production.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BURST_SIZE, burstSender, runBurstBench } from "./burst.ts";
import { analyzeTurn, type TurnTrips } from "./latency/critical-path.ts";
import type { Trip } from "./latency/instrument.ts";
import { startModelServer, type ModelServer } from "./model-server.ts";
import { runProductionBench } from "./production.ts";
import { createCorpus } from "./synthetic-memories.ts";
import { runCoreBench } from "./core.ts";
import { coreTable, markdownTable, summarize, table, type Row } from "./stats.ts";
import { createBenchAgent, startBenchWorker, type Call } from "./worker-harness.ts";

const workDir = mkdtempSync(join(tmpdir(), "edge-agents-bench-"));

interface Scenario {
  name: string;
  turns: number;
  warmup: number;
  room: (i: number) => string;
  script: (model: ModelServer) => void;
  /** A minted token instead of the admin token. */
  minted?: boolean;
  /** The turn's text and sender (default: `message <i>` from bench-user). */
  text?: (i: number) => string;
  userId?: string;
  /** Another agent than `bench`. */
  agentId?: string;
}

const { values: flags } = parseArgs({
  options: {
    "d1-ms": { type: "string" },
    "do-ms": { type: "string" },
    "embed-ms": { type: "string" },
    "first-token-ms": { type: "string" },
    "tokens-per-s": { type: "string" },
    turns: { type: "string" },
  },
});
const delays = { d1Ms: Number(flags["d1-ms"] ?? 0), doMs: Number(flags["do-ms"] ?? 0) };
const modelLatency = {
  embedMs: Number(flags["embed-ms"] ?? 0),
  firstTokenMs: Number(flags["first-token-ms"] ?? 0),
  tokensPerSecond: Number(flags["tokens-per-s"] ?? 0),
};
for (const [name, value] of Object.entries({ ...delays, ...modelLatency }))
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`bench: ${name} must be a number of 0 or more`);
const production =
  modelLatency.embedMs > 0 || modelLatency.firstTokenMs > 0 || modelLatency.tokensPerSecond > 0;
const injected = delays.d1Ms > 0 || delays.doMs > 0;
/** With injected latency every turn also waits for the worker to go idle: fewer turns. */
const TURNS_SHARE = injected ? 0.2 : 1;

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  if (production) {
    rmSync(workDir, { recursive: true, force: true });
    return runProductionBench({ ...delays, ...modelLatency }, Number(flags.turns ?? 15));
  }
  const core = await runCoreBench();
  console.log(
    "\n1. Runtime core per turn (src/runtime in Node, in-memory stores, a model that answers instantly):\n",
  );
  console.log(coreTable(core));

  const model = await startModelServer();
  const worker = await startBenchWorker(
    { OPENAI_API_KEY: "bench", OPENAI_BASE_URL: `${model.url}/v1`, MODEL: "bench-model" },
    injected ? { entry: "bench/latency/entry.ts" } : {},
  );
  const call = worker.call;

  try {
    await createBenchAgent(call);

    const minted = await call("POST", "/auth/tokens", {
      name: "bench",
      scopes: ["messages:write"],
      agents: ["bench"],
    });
    if (minted.status !== 201)
      throw new Error(`minting a token failed: ${minted.status} ${await minted.text()}`);
    const mintedToken = ((await minted.json()) as { token: string }).token;

    // 500 turns = 1,000 stored messages, through the API (not timed).
    model.respondWith(() => ({ text: "Noted." }));
    for (let i = 0; i < 500; i++) await turn(call, "long-room", `filler message ${i}`);
    const busy = await loadBusyRoom(call);
    if (injected) {
      const set = await fetch(`${worker.base}/__bench/delays`, {
        method: "POST",
        body: JSON.stringify(delays),
      });
      if (set.status !== 204) throw new Error(`setting the delays failed: ${set.status}`);
      await takeTrips(call);
    }

    const scenarios: Scenario[] = [
      {
        name: "plain turn (same room)",
        turns: 300,
        warmup: 20,
        room: () => "plain-room",
        script: (m) => m.respondWith(() => ({ text: "Hello!" })),
      },
      {
        name: "plain turn, minted token (same room)",
        turns: 200,
        warmup: 10,
        room: () => "minted-room",
        script: (m) => m.respondWith(() => ({ text: "Hello!" })),
        minted: true,
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
      {
        name: `busy room (${busy.messages.toLocaleString("en")} of ${BUSY_MEMORIES.toLocaleString("en")} memories)`,
        turns: 200,
        warmup: 10,
        room: () => BUSY_ROOM,
        script: (m) => m.respondWith(() => ({ text: "Hello!" })),
        text: (i) => busy.questions[i % busy.questions.length]!,
        userId: busy.userId,
        agentId: BUSY_AGENT,
      },
    ];
    const rows: Row[] = [];
    const tripRows: Array<Array<string | number>> = [];
    for (const scenario of scenarios) {
      scenario.script(model);
      const latencies: number[] = [];
      const serverMs: number[] = [];
      const analyses: TurnTrips[] = [];
      let modelCalls = 0;
      const turns = Math.round(scenario.turns * TURNS_SHARE);
      const headers = scenario.minted ? { authorization: `Bearer ${mintedToken}` } : {};
      for (let i = 0; i < scenario.warmup + turns; i++) {
        const before = model.calls();
        const result = await turn(
          call,
          scenario.room(i),
          scenario.text?.(i) ?? `message ${i}`,
          headers,
          scenario.userId,
          scenario.agentId,
        );
        // Injected mode: the turn's trips, after-reply work included (the worker goes idle first).
        const analysis = injected ? analyzeTurn(await takeTrips(call), delays.doMs) : null;
        if (i < scenario.warmup) continue;
        latencies.push(result.ms);
        if (result.serverMs !== null) serverMs.push(result.serverMs);
        modelCalls += model.calls() - before;
        if (analysis) analyses.push(analysis);
      }
      rows.push({
        scenario: scenario.name,
        turns,
        latency: summarize(latencies),
        server: summarize(serverMs),
        modelCallsPerTurn: modelCalls / turns,
        modelMs: model.takeServiceTimes(),
      });
      if (injected) tripRows.push(tripRow(scenario.name, turns, latencies, analyses));
    }

    console.log(
      "\n2. Whole turn through the worker in local workerd (Miniflare; D1 and Durable Objects local), model stand-in",
    );
    console.log(
      "   answering at once over loopback HTTP. Latency measured by the client; `in worker` is the worker's",
    );
    console.log("   Server-Timing for the room RPC (journal, D1, model round trip).\n");
    console.log(table(rows));
    if (!injected) {
      model.respondWith(() => ({ text: "Hello!" }));
      const burst = await runBurstBench(burstSender(call));
      console.log(
        `\n   Burst of ${BURST_SIZE} turns in one room, sent at once (5 bursts after a warm-up one), against isolated`,
      );
      console.log(
        "   turns in another room (each after the previous reply has settled). `gap` = time between consecutive replies.\n",
      );
      const ratio = (n: number) => n / burst.isolated.p50;
      console.log(
        markdownTable(
          ["row", "p50 ms", "p99 ms", "p50 / isolated p50"],
          [
            ["isolated turn", burst.isolated.p50, burst.isolated.p99, 1],
            [
              "burst reply, from its send",
              burst.reply.p50,
              burst.reply.p99,
              ratio(burst.reply.p50),
            ],
            ["burst gap between replies", burst.gap.p50, burst.gap.p99, ratio(burst.gap.p50)],
            ["whole burst (last reply)", burst.last.p50, burst.last.p99, ratio(burst.last.p50)],
          ],
          [0, 1, 1, 2],
        ),
      );
    }
    if (injected) {
      console.log(
        `\n3. Sequential round trips per turn (means) with ${delays.d1Ms} ms added to every D1 round trip and ${delays.doMs} ms to every`,
      );
      console.log(
        "   Durable Object call: before the model request, after the model before the reply, and after the reply",
      );
      console.log("   (nothing waits for those; `seq` = how many ran one after another).\n");
      console.log(
        markdownTable(
          [
            "scenario",
            "turns",
            "p50 ms",
            "p99 ms",
            "D1 before model",
            "DO before model",
            "D1 / DO model to reply",
            "after reply: D1 trips (seq) / DO calls",
            "model calls after reply",
            "D1 calls / statements per turn",
          ],
          tripRows,
          [0, 0, 1, 1, 2, 2, 0, 0, 2, 0],
        ),
      );
    }
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
  call: Call,
  roomId: string,
  text: string,
  headers = {},
  userId = "bench-user",
  agentId = "bench",
) {
  const started = performance.now();
  const response = await call(
    "POST",
    `/agents/${agentId}/messages`,
    { roomId, userId, text },
    headers,
  );
  const body = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${body}`);
  const timing = /turn;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "");
  return { ms, serverMs: timing ? Number(timing[1]) : null };
}

const BUSY_AGENT = "busy";
const BUSY_ROOM = "busy-room";
const BUSY_MEMORIES = 20_000;

/**
 * A community's long-running channel: an agent of its own (so the other scenarios' agent stays as
 * it was) holding bench:memory's synthetic corpus of 20,000 memories (messages, facts and profiles
 * of 300 people, summaries, lore), its messages and summaries all in one room, through
 * POST /memories and embedded (not timed). A turn there recalls from the whole room and
 * reads what the agent knows about its sender, one of the corpus's people.
 */
async function loadBusyRoom(
  call: Call,
): Promise<{ messages: number; questions: string[]; userId: string }> {
  await createBenchAgent(call, { id: BUSY_AGENT });
  const corpus = createCorpus(BUSY_MEMORIES);
  const memories = corpus
    .memories(BUSY_AGENT)
    .map((m) => (m.roomId === undefined ? m : { ...m, roomId: BUSY_ROOM }));
  for (let i = 0; i < memories.length; i += 500) {
    const response = await call("POST", "/memories", { memories: memories.slice(i, i + 500) });
    if (response.status !== 201)
      throw new Error(`loading the busy room failed: ${response.status} ${await response.text()}`);
  }
  for (let pending = true; pending; ) {
    const response = await call("POST", "/memories/embed", { agentId: BUSY_AGENT });
    if (response.status !== 200)
      throw new Error(
        `embedding the busy room failed: ${response.status} ${await response.text()}`,
      );
    pending = Boolean(((await response.json()) as { pending: boolean | number }).pending);
  }
  const facts = new Map<string, number>();
  for (const m of memories)
    if (m.type === "fact") facts.set(String(m.userId), (facts.get(String(m.userId)) ?? 0) + 1);
  return {
    messages: memories.filter((m) => m.type === "message").length,
    questions: corpus.queries(50),
    // The person the corpus knows most about: their facts are read on every turn.
    userId: [...facts].sort((a, b) => b[1] - a[1])[0]![0],
  };
}

async function takeTrips(call: Call): Promise<Trip[]> {
  const response = await call("GET", "/__bench/trips");
  if (response.status !== 200) throw new Error(`reading the trips failed: ${response.status}`);
  return ((await response.json()) as { trips: Trip[] }).trips;
}

function tripRow(
  scenario: string,
  turns: number,
  latencies: number[],
  analyses: TurnTrips[],
): Array<string | number> {
  const mean = (pick: (a: TurnTrips) => number) =>
    analyses.reduce((sum, a) => sum + pick(a), 0) / Math.max(1, analyses.length);
  const latency = summarize(latencies);
  return [
    scenario,
    turns,
    latency.p50,
    latency.p99,
    mean((a) => a.beforeModel.d1),
    mean((a) => a.beforeModel.do),
    `${mean((a) => a.beforeReply.d1).toFixed(2)} / ${mean((a) => a.beforeReply.do).toFixed(2)}`,
    `${mean((a) => a.afterReply.d1).toFixed(2)} (${mean((a) => a.afterReply.d1Sequential).toFixed(2)}) / ${mean((a) => a.afterReply.do).toFixed(2)}`,
    mean((a) => a.modelCallsAfter),
    `${mean((a) => a.d1Calls).toFixed(2)} / ${mean((a) => a.d1Statements).toFixed(1)}`,
  ];
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  rmSync(workDir, { recursive: true, force: true });
  process.exit(1);
});
