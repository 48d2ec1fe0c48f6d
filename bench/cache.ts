// `npm run bench:cache [-- --turns 30]`: how much of each model request a provider could serve from
// its prompt cache. A provider caches an identical prefix of the request (tools, then messages in
// order); this plays turns in one room through the real worker against the stand-in model and
// prints, per turn, the request's input tokens, the tokens it shares as an identical prefix with
// the previous request (as a share), and the embedding calls the turn made; then the same share
// for a task's consecutive model calls and for the small model's side calls. Issue 56's baseline.
import { parseArgs } from "node:util";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { BENCH_EMBEDDING_DIMENSIONS, startModelServer } from "./model-server.ts";
import { markdownTable } from "./stats.ts";
import type { StandInCall } from "../test/stand-ins/openai-stand-in.ts";
import { createBenchAgent, startBenchWorker } from "./worker-harness.ts";

const { values: args } = parseArgs({
  options: { turns: { type: "string", default: "30" } },
  strict: true,
});
const TURNS = Number(args.turns);
if (!Number.isInteger(TURNS) || TURNS < 2) throw new Error("--turns takes a whole number >= 2");
/** How long the worker must stay quiet (no model or embedding request) to count as idle. */
const IDLE_MS = 400;

/** The request as a provider sees it for caching: the tools, then each message in order. */
function promptTokens(call: StandInCall): number[] {
  const parts = [JSON.stringify(call.tools ?? [])];
  for (const message of call.messages) {
    const { role, content, name, tool_calls, tool_call_id } = message as Record<string, unknown>;
    parts.push(
      `<|${String(role)}${name ? `:${String(name)}` : ""}|>${typeof content === "string" ? content : JSON.stringify(content ?? "")}${tool_calls ? JSON.stringify(tool_calls) : ""}${tool_call_id ? String(tool_call_id) : ""}`,
    );
  }
  return encode(parts.join(""));
}

function sharedPrefix(a: number[], b: number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

interface Seen {
  tokens: number[];
  side: boolean;
  /** The task's calls carry its goal; a turn's do not. */
  task: boolean;
}

const model = await startModelServer();
const seen: Seen[] = [];
model.observe((call, side) => {
  const text = JSON.stringify(call.messages);
  seen.push({ tokens: promptTokens(call), side, task: !side && text.includes("Check the time") });
});
model.respondWith(() => ({
  text: `Noted, reply ${seen.length}. Anything else about the lake and the boats?`,
}));
const worker = await startBenchWorker({
  OPENAI_API_KEY: "bench",
  OPENAI_BASE_URL: `${model.url}/v1`,
  MODEL: "bench-model",
  SMALL_MODEL: "bench-small",
  // Embeddings from the stand-in's /embeddings, so each call is counted.
  EMBEDDING_MODEL: "bench-embed",
  EMBEDDING_DIMENSIONS: String(BENCH_EMBEDDING_DIMENSIONS),
});

/** Waits until neither the model nor the embeddings were asked anything for IDLE_MS. */
async function idle(): Promise<void> {
  let last = -1;
  for (;;) {
    const now = model.calls() + model.embeddingCalls();
    if (now === last) return;
    last = now;
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  }
}

try {
  await createBenchAgent(worker.call);
  const rows: string[][] = [];
  let previous: number[] | null = null;
  const shares: number[] = [];
  let embeddingTotal = 0;
  for (let turn = 1; turn <= TURNS; turn++) {
    const embeddingsBefore = model.embeddingCalls();
    const mainBefore = seen.filter((s) => !s.side && !s.task).length;
    const response = await worker.call("POST", "/agents/bench/messages", {
      userId: "ana",
      userName: "Ana",
      roomId: "cache-room",
      text: `Message ${turn}: we took the red kayak out on the lake again, and the wind picked up near the island.`,
    });
    if (response.status !== 200) throw new Error(`turn ${turn}: ${response.status}`);
    await idle();
    const requests = seen.filter((s) => !s.side && !s.task).slice(mainBefore);
    for (const request of requests) {
      const prefix = previous ? sharedPrefix(previous, request.tokens) : 0;
      const share = previous ? prefix / request.tokens.length : null;
      if (share !== null) shares.push(share);
      rows.push([
        String(turn),
        String(request.tokens.length),
        String(prefix),
        share === null ? "-" : `${(share * 100).toFixed(1)}%`,
        String(model.embeddingCalls() - embeddingsBefore),
      ]);
      previous = request.tokens;
    }
    embeddingTotal += model.embeddingCalls() - embeddingsBefore;
  }
  console.log(`\n${TURNS} plain turns in one room (the turn's model requests, as sent):\n`);
  console.log(
    markdownTable(["turn", "input tokens", "identical prefix", "share", "embedding calls"], rows),
  );
  const sorted = [...shares].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  const broken = shares.filter((share) => share < 0.5).length;
  console.log(
    `\nmedian share ${(median * 100).toFixed(1)}%, lowest ${((sorted[0] ?? 0) * 100).toFixed(1)}%; the prefix broke (under half shared) on ${broken} of ${shares.length} turns; embedding calls per turn ${(embeddingTotal / TURNS).toFixed(2)}`,
  );

  // A task: its consecutive model calls (plan, steps, checks) carry the same goal.
  const started = await worker.call("POST", "/agents/bench/tasks", { goal: "Check the time" });
  if (started.status !== 202) throw new Error(`task: ${started.status} ${await started.text()}`);
  await idle();
  printConsecutive(
    "a task's consecutive model calls",
    seen.filter((s) => s.task),
  );
  printConsecutive(
    "the small model's side calls (facts, summaries)",
    seen.filter((s) => s.side),
  );
} finally {
  await worker.stop();
  await model.close();
}

function printConsecutive(what: string, calls: Seen[]): void {
  const rows = calls.slice(1).map((call, i) => {
    const prefix = sharedPrefix(calls[i]!.tokens, call.tokens);
    return [
      String(i + 2),
      String(call.tokens.length),
      String(prefix),
      `${((prefix / call.tokens.length) * 100).toFixed(1)}%`,
    ];
  });
  console.log(`\n${what} (each against the one before):\n`);
  console.log(markdownTable(["call", "input tokens", "identical prefix", "share"], rows));
}
