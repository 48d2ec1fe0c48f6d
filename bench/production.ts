// `npm run bench -- --embed-ms 400 --first-token-ms 300 [--tokens-per-s 50] [--d1-ms 20 --do-ms 10]`:
// a plain turn at production latencies. The model stand-in waits `--first-token-ms` before its
// first token and writes `--tokens-per-s` words a second; the worker embeds through the
// stand-in's /embeddings (EMBEDDING_MODEL), which answers after `--embed-ms`; D1 round trips and
// object calls wait `--d1-ms` / `--do-ms` (bench/latency/). For a plain turn that retrieves,
// streamed and not, it prints the time to the first streamed token and to the whole reply, and the
// waits in sequence before the model request (object hops, D1 round trips, the embedding), with
// the floor beside them: what those waits and the model's first token cost with no work of ours.
// Rows for the default embedding budget, for waiting for the embedding however long it takes (as
// before the budget), and for a question asked again (its vector kept).
import { analyzeTurn, type TurnTrips } from "./latency/critical-path.ts";
import type { Trip } from "./latency/instrument.ts";
import { BENCH_EMBEDDING_DIMENSIONS, type ModelLatency, startModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import { readStream } from "./stream.ts";
import { type Call, createBenchAgent, startBenchWorker } from "./worker-harness.ts";
import { DEFAULT_EMBEDDING_BUDGET_MS } from "../src/runtime/retrieval/query-embedding.ts";

export interface ProductionDelays extends ModelLatency {
  d1Ms: number;
  doMs: number;
}

const REPLY = "Sunny all day, with a light breeze from the west in the afternoon.";

interface Sample {
  /** Client-side: the first `event: delta` (streamed) or the whole body (JSON). */
  firstMs: number;
  /** Streamed: the first delta's time on this process's performance.now() clock. */
  firstAt: number;
  /** Streamed: from the model's first content chunk leaving the stand-in to the client's first delta. */
  streamPathMs: number;
  totalMs: number;
  trips: TurnTrips | null;
}

interface Case {
  name: string;
  agentId: string;
  budgetMs: number;
  /** The turn's text: a new question each turn unless `repeat`. */
  repeat?: boolean;
}

export async function runProductionBench(delays: ProductionDelays, turns: number): Promise<void> {
  const model = await startModelServer({ latency: delays });
  const worker = await startBenchWorker(
    {
      OPENAI_API_KEY: "bench",
      OPENAI_BASE_URL: `${model.url}/v1`,
      MODEL: "bench-model",
      SMALL_MODEL: "bench-small",
      EMBEDDING_MODEL: "bench-embed",
      EMBEDDING_DIMENSIONS: String(BENCH_EMBEDDING_DIMENSIONS),
    },
    { entry: "bench/latency/entry.ts" },
  );
  const { call } = worker;
  try {
    model.respondWith(() => ({ text: REPLY }));
    await createBenchAgent(call);
    const unbounded = 10_000;
    await createBenchAgent(call, {
      id: "bench-wait",
      settings: { memory: { embeddingBudgetMs: unbounded } },
    });
    const set = await fetch(`${worker.base}/__bench/delays`, {
      method: "POST",
      body: JSON.stringify({ d1Ms: delays.d1Ms, doMs: delays.doMs }),
    });
    if (set.status !== 204) throw new Error(`setting the delays failed: ${set.status}`);
    const cases: Case[] = [
      { name: "default budget", agentId: "bench", budgetMs: DEFAULT_EMBEDDING_BUDGET_MS },
      { name: "no budget (waits for the embedding)", agentId: "bench-wait", budgetMs: unbounded },
      {
        name: "default budget, the same question again",
        agentId: "bench",
        budgetMs: DEFAULT_EMBEDDING_BUDGET_MS,
        repeat: true,
      },
    ];
    const rows: Array<Array<string | number>> = [];
    const waits: Array<Array<string | number>> = [];
    for (const c of cases) {
      const samples: Record<"streamed" | "json", Sample[]> = { streamed: [], json: [] };
      const warmup = 3;
      for (let i = 0; i < warmup + turns; i++) {
        for (const mode of ["streamed", "json"] as const) {
          const text = c.repeat
            ? "How is the weather looking for the picnic on Saturday?"
            : `How is the weather looking for the picnic, question ${mode} ${i}?`;
          model.takeFirstTokenTimes();
          const sample = await timedTurn(call, c.agentId, `${c.agentId}-${mode}`, text, mode);
          if (mode === "streamed") {
            const [modelFirst] = model.takeFirstTokenTimes();
            sample.streamPathMs =
              modelFirst === undefined ? Number.NaN : sample.firstAt - modelFirst;
          }
          sample.trips = analyzeTurn(await takeTrips(call), delays.doMs);
          if (i >= warmup) samples[mode].push(sample);
        }
      }
      for (const mode of ["streamed", "json"] as const) {
        const list = samples[mode];
        const first = summarize(list.map((s) => s.firstMs));
        const whole = summarize(list.map((s) => s.totalMs));
        const trips = list.map((s) => s.trips).filter((t): t is TurnTrips => t !== null);
        const mean = (pick: (t: TurnTrips) => number) =>
          trips.reduce((sum, t) => sum + pick(t), 0) / Math.max(1, trips.length);
        const embedded = trips.filter((t) => t.embedding !== null);
        const embedOut = summarize(embedded.map((t) => t.embedding!.outMs));
        const late = embedded.filter((t) => t.embedding!.late).length;
        const d1 = mean((t) => t.beforeModel.d1);
        const hops = mean((t) => t.beforeModel.do);
        // What no code of ours could save: the hops and round trips in sequence, the embedding
        // or the budget (whichever is shorter; none for a repeated question), the first token.
        const embedFloor =
          embedded.length === 0
            ? 0
            : Math.min(delays.embedMs, c.budgetMs) * (embedded.length / trips.length);
        const firstFloor = hops * delays.doMs + d1 * delays.d1Ms + embedFloor + delays.firstTokenMs;
        const writing =
          delays.tokensPerSecond > 0
            ? (REPLY.split(/\s+/).length * 1000) / delays.tokensPerSecond
            : 0;
        rows.push([
          c.name,
          mode === "streamed" ? "streamed" : "JSON",
          list.length,
          mode === "streamed" ? first.p50 : "-",
          whole.p50,
          whole.p99,
          firstFloor,
          (mode === "streamed" ? first.p50 : whole.p50) -
            firstFloor -
            (mode === "json" ? writing : 0),
        ]);
        waits.push([
          c.name,
          mode === "streamed" ? "streamed" : "JSON",
          hops,
          d1,
          embedded.length === 0
            ? "none"
            : `${embedOut.p50.toFixed(0)} (${late} of ${embedded.length} cut)`,
          summarize(trips.map((t) => t.beforeModelMs)).p50,
          mode === "streamed" ? summarize(list.map((s) => s.streamPathMs)).p50.toFixed(1) : "-",
        ]);
      }
    }
    console.log(
      `\nA plain turn that retrieves, at production latencies: embedding ${delays.embedMs} ms, model first token ${delays.firstTokenMs} ms, ${delays.tokensPerSecond || "all"} words/s, D1 +${delays.d1Ms} ms a round trip, objects +${delays.doMs} ms a call; default embedding budget ${DEFAULT_EMBEDDING_BUDGET_MS} ms. ${turns} turns per row after 3 warm-up; medians.\n`,
    );
    console.log(
      markdownTable(
        [
          "case",
          "answer",
          "turns",
          "first token p50 ms",
          "whole reply p50 ms",
          "whole reply p99 ms",
          "floor to first token ms",
          "ours beyond the floor ms",
        ],
        rows,
        [0, 0, 0, 1, 1, 1, 1, 1],
      ),
    );
    console.log(
      "\n`floor` = object hops x object delay + D1 round trips x D1 delay (both in sequence before the model) + the embedding or the budget, whichever is shorter + the model's first token. `ours beyond` = first token (streamed) or whole reply less the model's writing (JSON), less the floor.\n",
    );
    console.log(
      markdownTable(
        [
          "case",
          "answer",
          "object hops before the model",
          "D1 round trips before the model",
          "embedding out before the model, p50 ms (cut by the budget)",
          "request to model request p50 ms",
          "model's first token to the client's first delta p50 ms",
        ],
        waits,
        [0, 0, 2, 2, 0, 1, 0],
      ),
    );
  } finally {
    await worker.stop();
    await model.close();
  }
}

async function timedTurn(
  call: Call,
  agentId: string,
  roomId: string,
  text: string,
  mode: "streamed" | "json",
): Promise<Sample> {
  const started = performance.now();
  const response = await call(
    "POST",
    `/agents/${agentId}/messages`,
    { roomId, userId: "bench-user", text },
    mode === "streamed" ? { accept: "text/event-stream" } : {},
  );
  if (response.status !== 200 || !response.body)
    throw new Error(`turn failed: ${response.status} ${await response.text()}`);
  if (mode === "json") {
    await response.arrayBuffer();
    const totalMs = performance.now() - started;
    return {
      firstMs: totalMs,
      firstAt: Number.NaN,
      streamPathMs: Number.NaN,
      totalMs,
      trips: null,
    };
  }
  const streamed = await readStream(response, started);
  return {
    firstMs: streamed.firstToken,
    firstAt: started + streamed.firstToken,
    streamPathMs: Number.NaN,
    totalMs: streamed.total,
    trips: null,
  };
}

async function takeTrips(call: Call): Promise<Trip[]> {
  const response = await call("GET", "/__bench/trips");
  if (response.status !== 200) throw new Error(`reading the trips failed: ${response.status}`);
  return ((await response.json()) as { trips: Trip[] }).trips;
}
