// `npm run bench:stream`: time to the first streamed token through the worker (local workerd),
// against a model stand-in on loopback that streams a word every CHUNK_DELAY_MS. Compared with the
// stand-in's own first chunk (the floor: what the model costs) and with the same turn answered as
// one JSON body (what a client waits without streaming). Loopback only; fresh state every run.
// `-- --turns N --warmup N` sizes it (100 and 10 by default, about 6 minutes on 2 cores).
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { startModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import { createBenchAgent, startBenchWorker } from "./worker-harness.ts";

const CHUNK_DELAY_MS = 20;
const WORDS = 40;
const REPLY = Array.from({ length: WORDS }, (_, i) => `word${i}`).join(" ");

function positive(value: string | undefined, flag: string, min = 1): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min) {
    console.error(`${flag} takes a whole number of at least ${min}`);
    process.exit(2);
  }
  return parsed;
}

export interface Timed {
  firstToken: number;
  total: number;
}

/** Reads the worker's event stream to its end: the first `event: delta` and the end, from `started`. */
export async function readStream(response: Response, started: number): Promise<Timed> {
  if (!response.ok || !response.body)
    throw new Error(`stream failed: ${response.status} ${await response.text()}`);
  const decoder = new TextDecoder();
  let text = "";
  let firstToken = NaN;
  for await (const chunk of response.body) {
    text += decoder.decode(chunk, { stream: true });
    if (Number.isNaN(firstToken) && /^event: delta$/m.test(text))
      firstToken = performance.now() - started;
  }
  if (!/^event: done$/m.test(text))
    throw new Error(`the stream ended without done: ${text.slice(-300)}`);
  return { firstToken, total: performance.now() - started };
}

async function main(): Promise<void> {
  // Turns measured and warm-up turns before them (a smoke run: `-- --turns 3 --warmup 1`). Read
  // here, not at the top: bench:dev and the production bench import readStream from this file.
  const { values: args } = parseArgs({
    options: {
      turns: { type: "string", default: "100" },
      warmup: { type: "string", default: "10" },
    },
  });
  const TURNS = positive(args.turns, "--turns");
  const WARMUP = positive(args.warmup, "--warmup", 0);
  const cpu = cpus();
  console.log(
    `\nedge-agents bench:stream: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  console.log(
    `Model stand-in streams ${WORDS} words, one every ${CHUNK_DELAY_MS} ms; ${TURNS} turns per row after ${WARMUP} warm-up turns.\n`,
  );
  const model = await startModelServer({ chunkDelayMs: CHUNK_DELAY_MS });
  // Unstreamed, the stand-in takes as long as its stream would: the model writes at one pace.
  // The evaluators' small-model calls after each reply answer at once, as in `npm run bench`.
  model.respondWith((call) => {
    if (call.model === "bench-small") return { text: "{}" };
    return call.body.stream === true
      ? { text: REPLY }
      : { text: REPLY, delayMs: WORDS * CHUNK_DELAY_MS };
  });
  const worker = await startBenchWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
    SMALL_MODEL: "bench-small",
  });
  try {
    await createBenchAgent(worker.call);

    const direct: Timed[] = [];
    const streamed: Timed[] = [];
    const plain: number[] = [];
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const keep = i >= WARMUP;
      // The floor: the stand-in's own stream, called straight from here.
      let started = performance.now();
      const own = await fetch(`${model.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "bench-model",
          stream: true,
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      const floor = await readModelStream(own, started);
      if (keep) direct.push(floor);

      started = performance.now();
      const response = await worker.call(
        "POST",
        "/agents/bench/messages",
        { userId: "alice", roomId: "stream-room", text: `message ${i}` },
        { accept: "text/event-stream" },
      );
      const timed = await readStream(response, started);
      if (keep) streamed.push(timed);

      started = performance.now();
      const json = await worker.call("POST", "/agents/bench/messages", {
        userId: "alice",
        roomId: "json-room",
        text: `message ${i}`,
      });
      if (json.status !== 200) throw new Error(`turn failed: ${json.status} ${await json.text()}`);
      await json.arrayBuffer();
      if (keep) plain.push(performance.now() - started);
    }

    const ttft = summarize(streamed.map((t) => t.firstToken));
    const floor = summarize(direct.map((t) => t.firstToken));
    const rows = [
      [
        "model stand-in called directly (floor)",
        TURNS,
        floor.p50,
        floor.p99,
        summarize(direct.map((t) => t.total)).p50,
      ],
      [
        "through the worker, Accept: text/event-stream",
        TURNS,
        ttft.p50,
        ttft.p99,
        summarize(streamed.map((t) => t.total)).p50,
      ],
      [
        "through the worker, JSON (first byte = whole reply)",
        TURNS,
        summarize(plain).p50,
        summarize(plain).p99,
        summarize(plain).p50,
      ],
    ];
    console.log(
      markdownTable(
        ["path", "turns", "first token p50 ms", "first token p99 ms", "whole reply p50 ms"],
        rows,
        [0, 0, 1, 1, 1],
      ),
    );
    console.log(
      `\nFirst token through the worker: ${(ttft.p50 - floor.p50).toFixed(1)} ms above the model's own (p50), ${(summarize(plain).p50 / ttft.p50).toFixed(1)}x sooner than the JSON answer.`,
    );
  } finally {
    await worker.stop();
    await model.close();
  }
}

/** The stand-in's own Chat Completions stream: first content chunk, and the end. */
async function readModelStream(response: Response, started: number): Promise<Timed> {
  if (!response.ok || !response.body) throw new Error(`model stream failed: ${response.status}`);
  const decoder = new TextDecoder();
  let text = "";
  let firstToken = NaN;
  for await (const chunk of response.body) {
    text += decoder.decode(chunk, { stream: true });
    if (Number.isNaN(firstToken) && text.includes('"content":"word'))
      firstToken = performance.now() - started;
  }
  return { firstToken, total: performance.now() - started };
}

// Run, not imported (bench:compare imports readStream).
if (import.meta.main)
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
