// `npm run bench:memory`: long-term memory through the real worker (local workerd, offline
// default stack: hashed embedder, local vector index in D1, FTS5). (a) LoCoMo: each conversation
// becomes one agent's messages; every question goes through POST /memories/similar, the same
// hybrid retrieval the runtime's providers use; prints recall@5/10/25 per category. (b) Scale:
// one agent with 10k and 100k memories, query latency. Flags: --only locomo|scale, --sizes a,b.
import { cpus } from "node:os";
import { CATEGORY_NAMES, loadLocomo, recallAtK } from "./locomo.ts";
import { summarize } from "./stats.ts";
import { startBenchWorker, type Call } from "./worker-harness.ts";

const BATCH = 400;
const args = process.argv.slice(2);
const only = flag("--only");
const sizes = (flag("--sizes") ?? "10000,100000").split(",").map(Number);

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(`\nedge-agents memory bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`);
  const worker = await startBenchWorker({});
  try {
    const health = (await (await fetch(`${worker.base}/health`)).json()) as { embedding: unknown; vectors: unknown };
    console.log(`embedding: ${JSON.stringify(health.embedding)}  vectors: ${JSON.stringify(health.vectors)}`);
    if (only !== "scale") await locomo(worker.call);
    if (only !== "locomo") for (const size of sizes) await scale(worker.call, size);
  } finally {
    await worker.stop();
  }
}

async function locomo(call: Call): Promise<void> {
  const conversations = loadLocomo("../shared/data/locomo-dev.json");
  const ks = [5, 10, 25];
  const sums = new Map<string, { n: number; r: number[] }>();
  const add = (key: string, recalls: number[]) => {
    const entry = sums.get(key) ?? { n: 0, r: ks.map(() => 0) };
    entry.n++;
    recalls.forEach((r, i) => (entry.r[i]! += r));
    sums.set(key, entry);
  };
  const latencies: number[] = [];
  let ingested = 0;
  let ingestMs = 0;
  for (const [index, conversation] of conversations.entries()) {
    const agentId = `locomo-${index}`;
    await expectStatus(call("POST", "/agents", { id: agentId, name: `Locomo ${index}`, bio: ["A LoCoMo conversation."] }), 201);
    const memories = conversation.turns.map((turn) => ({
      agentId,
      id: `lc${index}-${turn.diaId}`,
      type: "message",
      roomId: `session-${turn.session}`,
      userId: slug(turn.speaker),
      userName: turn.speaker,
      text: turn.text,
      createdAt: turn.at,
      metadata: { dia_id: turn.diaId },
    }));
    const started = performance.now();
    for (let i = 0; i < memories.length; i += BATCH) {
      const body = (await expectStatus(call("POST", "/memories", { memories: memories.slice(i, i + BATCH) }), 201)) as { pending: number };
      if (body.pending > 0) throw new Error(`${body.pending} memories were not embedded inline`);
    }
    ingestMs += performance.now() - started;
    ingested += memories.length;
    for (const question of conversation.questions) {
      const t0 = performance.now();
      const body = (await expectStatus(call("POST", "/memories/similar", { agentId, query: question.question, type: "message", limit: 25 }), 200)) as {
        memories: Array<{ metadata: { dia_id?: string } }>;
      };
      latencies.push(performance.now() - t0);
      const retrieved = body.memories.map((m) => m.metadata.dia_id ?? "");
      const recalls = ks.map((k) => recallAtK(retrieved, question.evidence, k));
      add(CATEGORY_NAMES[question.category] ?? `category ${question.category}`, recalls);
      add("overall", recalls);
    }
  }
  console.log(`\n1. LoCoMo retrieval (${conversations.length} conversations, ${ingested} turns, ${sums.get("overall")?.n ?? 0} questions), turn-level recall@k in %:\n`);
  console.log("| category | questions | R@5 | R@10 | R@25 |\n|---|---:|---:|---:|---:|");
  for (const name of [...Object.values(CATEGORY_NAMES), "overall"]) {
    const entry = sums.get(name);
    if (!entry) continue;
    console.log(`| ${name} | ${entry.n} | ${entry.r.map((r) => ((100 * r) / entry.n).toFixed(1)).join(" | ")} |`);
  }
  console.log("| *DRAGON dense retriever (paper, all 10 conversations)* | | 56.7 | 66.2 | 76.7 |");
  console.log("| *plain BM25, stopwords removed (data README)* | | 52.2 | 58.8 | 67.0 |");
  const lat = summarize(latencies);
  console.log(`\ningest: ${ingested} memories in ${(ingestMs / 1000).toFixed(1)} s = ${Math.round((ingested * 1000) / ingestMs)} memories/s (API, embedded inline, batches of ${BATCH})`);
  console.log(`query (POST /memories/similar, limit 25, client-measured): p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms`);
}

async function scale(call: Call, size: number): Promise<void> {
  const agentId = `scale-${size}`;
  await expectStatus(call("POST", "/agents", { id: agentId, name: `Scale ${size}`, bio: ["A benchmark agent."] }), 201);
  const random = prng(size);
  const started = performance.now();
  for (let i = 0; i < size; i += BATCH) {
    const memories = Array.from({ length: Math.min(BATCH, size - i) }, (_, j) => {
      const n = i + j;
      const type = n % 10 === 0 ? "fact" : n % 25 === 0 ? "lore" : "message";
      return {
        agentId,
        type,
        text: sentence(random),
        ...(type === "message" ? { roomId: `room-${n % 50}`, userId: `user-${n % 200}` } : {}),
        ...(type === "fact" ? { userId: `user-${n % 200}` } : {}),
        createdAt: 1_700_000_000_000 + n * 1000,
      };
    });
    await expectStatus(call("POST", "/memories", { memories }), 201);
  }
  const ingestS = (performance.now() - started) / 1000;
  const queries = Array.from({ length: 220 }, () => sentence(random));
  const t0 = performance.now();
  await expectStatus(call("POST", "/memories/similar", { agentId, query: queries[0], limit: 10 }), 200);
  const cold = performance.now() - t0;
  const latencies: number[] = [];
  for (const [i, query] of queries.entries()) {
    const q0 = performance.now();
    await expectStatus(call("POST", "/memories/similar", { agentId, query, limit: 10 }), 200);
    if (i >= 20) latencies.push(performance.now() - q0);
  }
  const lat = summarize(latencies);
  console.log(
    `\n2. One agent with ${size.toLocaleString("en")} memories: ingest ${ingestS.toFixed(1)} s (${Math.round(size / ingestS)} memories/s); ` +
      `first query (vector cache cold) ${cold.toFixed(0)} ms; then ${lat.n} queries: p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms`,
  );
}

const WORDS = {
  who: ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jon", "Kofi", "Lena"],
  verb: ["visited", "painted", "cooked", "fixed", "bought", "sold", "planned", "wrote about", "photographed", "repaired", "studied", "lost"],
  adj: ["old", "tiny", "bright", "broken", "famous", "quiet", "blue", "wooden", "strange", "new", "noisy", "golden"],
  noun: ["bicycle", "garden", "guitar", "lighthouse", "recipe", "novel", "mountain", "violin", "kitchen", "harbour", "museum", "telescope", "bakery", "river", "camera", "piano"],
  when: ["last week", "yesterday", "in spring", "on Sunday", "after work", "during the holidays", "this morning", "in 2022"],
  where: ["in Lisbon", "near the station", "at the market", "with friends", "in the park", "by the sea", "at home", "in Oslo"],
};

function sentence(random: () => number): string {
  const pick = (list: string[]) => list[Math.floor(random() * list.length)]!;
  return `${pick(WORDS.who)} ${pick(WORDS.verb)} the ${pick(WORDS.adj)} ${pick(WORDS.noun)} ${pick(WORDS.where)} ${pick(WORDS.when)}`;
}

/** Mulberry32: a small seeded PRNG, so every run ingests the same memories. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function expectStatus(pending: Promise<Response>, status: number): Promise<unknown> {
  const response = await pending;
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

function slug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "someone";
}

function flag(name: string): string | undefined {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
