// Our side of `npm run bench:compare`: one user's plain turns in one room (the DM) through the
// real worker in local workerd, the model stand-in on loopback answering at once (side prompts,
// fact extraction and summaries, with valid JSON as a real model would). CPU time and resident
// memory are the workerd process's (worker, D1 and Durable Objects all run in it).
import { startModelServer } from "../model-server.ts";
import { createBenchAgent } from "../worker-harness.ts";
import { startCountingWorker } from "./counting-worker.ts";
import { cpuQuiet, type PeerResult, processCpuMs, processRssMb } from "./peer-result.ts";

export async function runWorkerdSide(turns: number, warmup: number): Promise<PeerResult> {
  const model = await startModelServer();
  // The model server answers side prompts itself (and counts them); the rest are replies.
  let replyCalls = 0;
  model.respondWith(() => {
    replyCalls += 1;
    return { text: "Hello!" };
  });
  const worker = await startCountingWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
  });
  try {
    await createBenchAgent(worker.call);
    for (let i = 0; i < warmup; i++) await turn(worker.call, `warm-up ${i}`);
    await cpuQuiet(worker.pid);
    await worker.takeCounts();
    const cpuBefore = processCpuMs(worker.pid);
    const replyBefore = replyCalls;
    const sideBefore = model.sideCalls();
    const allBefore = model.calls();
    const replyMs: number[] = [];
    for (let i = 0; i < turns; i++) replyMs.push(await turn(worker.call, `message ${i}`));
    // After-reply work (evaluators, embeddings, outboxes) belongs to the turns that caused it.
    await cpuQuiet(worker.pid);
    const cpuMs = processCpuMs(worker.pid) - cpuBefore;
    const counts = await worker.takeCounts();
    const side = model.sideCalls() - sideBefore;
    const chat = replyCalls - replyBefore + side;
    const sql = counts.d1Statements + counts.objectSqlStatements;
    const per = (n: number) => (n / turns).toFixed(1);
    return {
      turns,
      replyMs,
      cpuMsPerMessage: cpuMs / turns,
      modelCallsPerMessage: chat / turns,
      modelDetail: `reply ${((chat - side) / turns).toFixed(2)} + fact extraction/summary ${(side / turns).toFixed(2)}`,
      embeddingCallsPerMessage: (model.calls() - allBefore - chat) / turns,
      sqlPerMessage: sql / turns,
      sqlDetail: `D1 ${per(counts.d1Statements)} in ${per(counts.d1RoundTrips)} round trips + object SQLite ${per(counts.objectSqlStatements)}`,
      rssMb: processRssMb(worker.pid),
    };
  } finally {
    await worker.stop();
    await model.close();
  }
}

async function turn(
  call: (method: string, path: string, body?: unknown) => Promise<Response>,
  text: string,
): Promise<number> {
  const started = performance.now();
  const response = await call("POST", "/agents/bench/messages", {
    roomId: "dm",
    userId: "bench-user",
    text,
  });
  const body = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${body}`);
  return ms;
}
