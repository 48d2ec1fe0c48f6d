// Our side of `npm run bench:compare`: one user's plain turns in one room (the DM) through the
// real worker in local workerd, the model stand-in on loopback answering at once (side prompts,
// fact extraction and summaries, with valid JSON as a real model would). CPU time and resident
// memory are the workerd process's (worker, D1 and Durable Objects all run in it). Under delays the
// worker embeds through the stand-in's /embeddings too, and a second room times streamed turns.
import { BENCH_EMBEDDING_DIMENSIONS, startModelServer } from "../model-server.ts";
import { readStream } from "../stream.ts";
import type { Call } from "../worker-harness.ts";
import { createBenchAgent } from "../worker-harness.ts";
import { callSequence, type TimedTurn } from "./call-sequence.ts";
import { startCountingWorker } from "./counting-worker.ts";
import { anyDelay, type CompareDelays, SETTLE_QUIET_MS } from "./delays.ts";
import { cpuQuiet, type PeerResult, processCpuMs, processRssMb } from "./peer-result.ts";
import { startTimedProxy, type TimedProxy } from "./timed-proxy.ts";

export async function runWorkerdSide(
  turns: number,
  warmup: number,
  delays: CompareDelays,
): Promise<PeerResult> {
  const delayed = anyDelay(delays);
  const model = await startModelServer({ latency: delays });
  // The model server answers side prompts itself (and counts them); the rest are replies.
  let replyCalls = 0;
  model.respondWith(() => {
    replyCalls += 1;
    return { text: "Hello!" };
  });
  // Under delays only: the timings of each call, and embeddings as production makes them (over
  // HTTP, waiting like the model), not the in-process hashed embedder that costs nothing.
  const proxy = delayed ? await startTimedProxy(model.url) : null;
  const worker = await startCountingWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${proxy?.url ?? model.url}/v1`,
    MODEL: "bench-model",
    ...(delayed
      ? { EMBEDDING_MODEL: "bench-embed", EMBEDDING_DIMENSIONS: String(BENCH_EMBEDDING_DIMENSIONS) }
      : {}),
  });
  try {
    await createBenchAgent(worker.call);
    for (let i = 0; i < warmup; i++) await turn(worker.call, `warm-up ${i}`, proxy);
    await cpuQuiet(worker.pid);
    await worker.takeCounts();
    const cpuBefore = processCpuMs(worker.pid);
    const replyBefore = replyCalls;
    const sideBefore = model.sideCalls();
    const embeddingsBefore = model.embeddingCalls();
    const timed: TimedTurn[] = [];
    for (let i = 0; i < turns; i++) timed.push(await turn(worker.call, `message ${i}`, proxy));
    // After-reply work (evaluators, embeddings, outboxes) belongs to the turns that caused it.
    await cpuQuiet(worker.pid);
    const cpuMs = processCpuMs(worker.pid) - cpuBefore;
    const counts = await worker.takeCounts();
    const side = model.sideCalls() - sideBefore;
    const chat = replyCalls - replyBefore + side;
    const sql = counts.d1Statements + counts.objectSqlStatements;
    const per = (n: number) => (n / turns).toFixed(1);
    const result: PeerResult = {
      turns,
      replyMs: timed.map((t) => t.repliedMs - t.sentMs),
      cpuMsPerMessage: cpuMs / turns,
      modelCallsPerMessage: chat / turns,
      modelDetail: `reply ${((chat - side) / turns).toFixed(2)} + fact extraction/summary ${(side / turns).toFixed(2)}`,
      embeddingCallsPerMessage: (model.embeddingCalls() - embeddingsBefore) / turns,
      sqlPerMessage: sql / turns,
      sqlDetail: `D1 ${per(counts.d1Statements)} in ${per(counts.d1RoundTrips)} round trips + object SQLite ${per(counts.objectSqlStatements)}`,
      rssMb: processRssMb(worker.pid),
    };
    if (!proxy) return result;
    const sequence = callSequence(proxy.calls(), timed);
    // The same turn streamed, in a room of its own so the DM above keeps its history.
    for (let i = 0; i < warmup; i++) await streamedTurn(worker.call, `warm-up ${i}`, proxy);
    const firstTokenMs: number[] = [];
    for (let i = 0; i < turns; i++)
      firstTokenMs.push(await streamedTurn(worker.call, `message ${i}`, proxy));
    return { ...result, sequence, firstTokenMs };
  } finally {
    await worker.stop();
    await proxy?.close();
    await model.close();
  }
}

async function turn(call: Call, text: string, proxy: TimedProxy | null): Promise<TimedTurn> {
  await proxy?.settled(SETTLE_QUIET_MS);
  const sentMs = performance.now();
  const response = await call("POST", "/agents/bench/messages", {
    roomId: "dm",
    userId: "bench-user",
    text,
  });
  const body = await response.text();
  const repliedMs = performance.now();
  if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${body}`);
  return { sentMs, repliedMs };
}

/** Milliseconds from sending to the first `event: delta` of the reply's event stream. */
async function streamedTurn(call: Call, text: string, proxy: TimedProxy): Promise<number> {
  await proxy.settled(SETTLE_QUIET_MS);
  const started = performance.now();
  const response = await call(
    "POST",
    "/agents/bench/messages",
    { roomId: "dm-streamed", userId: "bench-user", text },
    { accept: "text/event-stream" },
  );
  return (await readStream(response, started)).firstToken;
}
