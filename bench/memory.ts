// `npm run bench:memory [-- --only locomo|scale] [--sizes 10000,100000]`: long-term memory through
// the real worker in local workerd (offline default stack), over the HTTP API only. (a) LoCoMo:
// recall@5/10/25 of POST /memories/similar, the runtime's hybrid retrieval, per category and per
// conversation, turn-level and session-level (`--dump <file>` writes each question's outcome);
// (b) one agent holding 10k, then 100k synthetic memories: ingest rate and query latency.
// `--embed-ms N` (LoCoMo only): the worker embeds through the model stand-in's /embeddings
// (bench/model-server.ts, the same hashed vectors as a semantic embedder would vote them), which
// answers after N ms, and each search waits for its query's vector at most the default embedding
// budget of a turn (or `--budget-ms`): recall as a turn retrieves at that embedding latency.
import { existsSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  createCategoryTally,
  createRecallTally,
  loadLocomo,
  rankSessions,
  recallAtK,
  sessionRecallAtK,
  type LocomoConversation,
} from "./locomo.ts";
import { markdownTable, summarize, type Cell } from "./stats.ts";
import { createCorpus } from "./synthetic-memories.ts";
import { startBenchWorker, type Call } from "./worker-harness.ts";
import { BENCH_EMBEDDING_DIMENSIONS, startModelServer, type ModelServer } from "./model-server.ts";
import { DEFAULT_EMBEDDING_BUDGET_MS } from "../src/runtime/retrieval/query-embedding.ts";

/**
 * The LoCoMo dev set: the team's shared/ folder beside the repository (where CI and the
 * developers' machines have it), or LOCOMO_PATH. It is not in the repository (CC BY-NC).
 */
const LOCOMO_PATH =
  process.env.LOCOMO_PATH ??
  fileURLToPath(new URL("../../shared/data/locomo-dev.json", import.meta.url));
const BATCH_SIZE = 500; // the API's MAX_MEMORIES_PER_REQUEST
const RECALL_KS = [5, 10, 25];
const SESSION_KS = [5, 10];
const LOCOMO_LIMIT = 25;
const SCALE_QUERIES = 200;
const SCALE_WARMUP = 20;
const SCALE_LIMIT = 10;
const HELP = `Usage: npm run bench:memory -- [--only locomo|scale] [--sizes 10000,100000] [--embed-ms N [--budget-ms N]] [--dump <file.json>]`;

type MemoryInput = Record<string, unknown>;

/** A bad flag: printed without a stack trace. */
class UsageError extends Error {}

interface IngestResult {
  seconds: number;
  embeddedInline: number;
  embeddedLater: number;
}

async function main(): Promise<void> {
  const { values } = (() => {
    try {
      return parseArgs({
        options: {
          only: { type: "string" },
          sizes: { type: "string" },
          "embed-ms": { type: "string" },
          "budget-ms": { type: "string" },
          dump: { type: "string" },
          help: { type: "boolean" },
        },
        strict: true,
      });
    } catch (error) {
      throw new UsageError(`${error instanceof Error ? error.message : String(error)}\n${HELP}`);
    }
  })();
  if (values.help) return console.log(HELP);
  if (values.only !== undefined && values.only !== "locomo" && values.only !== "scale")
    throw new UsageError(`--only takes locomo or scale\n${HELP}`);
  const sizes = (values.sizes ?? "10000,100000").split(",").map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 1))
    throw new UsageError(`--sizes takes positive integers, e.g. 10000,100000\n${HELP}`);

  const embedMs = values["embed-ms"] === undefined ? null : Number(values["embed-ms"]);
  const budgetMs = Number(values["budget-ms"] ?? DEFAULT_EMBEDDING_BUDGET_MS);
  if (embedMs !== null && (!Number.isInteger(embedMs) || embedMs < 0))
    throw new UsageError(`--embed-ms takes a whole number of milliseconds\n${HELP}`);
  if (!Number.isInteger(budgetMs) || budgetMs < 0 || budgetMs > 10_000)
    throw new UsageError(`--budget-ms takes 0 to 10000\n${HELP}`);
  if (embedMs !== null && values.only === "scale")
    throw new UsageError(`--embed-ms measures LoCoMo only\n${HELP}`);
  // Said before a worker starts: a clone without the data set runs the scale part alone.
  if (values.only !== "scale" && !existsSync(LOCOMO_PATH))
    throw new UsageError(
      `the LoCoMo dev set is not at ${LOCOMO_PATH} (it lives in the team's shared/data beside the repository; LOCOMO_PATH=<file> points elsewhere). Without it: npm run bench:memory -- --only scale`,
    );
  const started = performance.now();
  const cpu = cpus();
  console.log(
    `\nedge-agents memory bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const model: ModelServer | null =
    embedMs === null ? null : await startModelServer({ latency: { embedMs } });
  const worker = await startBenchWorker(
    model
      ? {
          OPENAI_API_KEY: "bench",
          OPENAI_BASE_URL: `${model.url}/v1`,
          EMBEDDING_MODEL: "bench-embed",
          EMBEDDING_DIMENSIONS: String(BENCH_EMBEDDING_DIMENSIONS),
        }
      : {},
  );
  try {
    const health = (await (await fetch(`${worker.base}/health`)).json()) as {
      embedding?: unknown;
      vectors?: unknown;
    };
    console.log(
      `worker in local workerd; embedder ${JSON.stringify(health.embedding)}, vectors ${JSON.stringify(health.vectors)}`,
    );
    if (embedMs !== null)
      console.log(
        `query embeddings through the stand-in's /embeddings after ${embedMs} ms; each search waits at most ${budgetMs} ms for its vector`,
      );
    if (values.only !== "scale")
      await locomo(worker.call, embedMs === null ? undefined : budgetMs, values.dump);
    if (values.only !== "locomo" && embedMs === null) await scale(worker.call, sizes);
  } finally {
    await worker.stop();
    await model?.close();
  }
  console.log(`\ndone in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** One question's outcome, as `--dump` writes it (for the leave-one-conversation-out check). */
interface QuestionOutcome {
  conversation: string;
  question: string;
  evidence: string[];
  /** The dia_ids retrieved, best first, with each one's score and legs ("text+neighbour"). */
  retrieved: string[];
  scores: number[];
  matchedBy: string[];
  category: number;
  /** Turn-level recall at RECALL_KS, then session-level any and all at SESSION_KS. */
  turn: number[];
  sessionAny: number[];
  sessionAll: number[];
}

async function locomo(call: Call, budgetMs?: number, dump?: string): Promise<void> {
  const conversations = loadLocomo(LOCOMO_PATH);
  const tally = createRecallTally(RECALL_KS);
  // Session-level: any evidence session in the top k, then all of them.
  const sessions = createCategoryTally(SESSION_KS.length * 2);
  const byConversation = new Map<string, ReturnType<typeof createRecallTally>>();
  const outcomes: QuestionOutcome[] = [];
  const latencies: number[] = [];
  const legs = new Map<string, number[]>();
  let turns = 0;
  let ingest: IngestResult = { seconds: 0, embeddedInline: 0, embeddedLater: 0 };
  let dropped = 0;
  let withoutEvidence = 0;
  let late = 0;
  for (const conversation of conversations) {
    const agentId = `locomo-${conversation.id}`;
    await createAgent(call, agentId, `LoCoMo ${conversation.id}`);
    const result = await ingestAll(call, agentId, locomoMemories(conversation, agentId));
    turns += conversation.turns.length;
    const sessionOfTurn = new Map(conversation.turns.map((turn) => [turn.diaId, turn.session]));
    const sessionOf = (diaId: string) => sessionOfTurn.get(diaId);
    const ownTally = createRecallTally(RECALL_KS);
    byConversation.set(conversation.id, ownTally);
    ingest = {
      seconds: ingest.seconds + result.seconds,
      embeddedInline: ingest.embeddedInline + result.embeddedInline,
      embeddedLater: ingest.embeddedLater + result.embeddedLater,
    };
    for (const question of conversation.questions) {
      const t0 = performance.now();
      const response = await call("POST", "/memories/similar", {
        agentId,
        query: question.question,
        type: "message",
        limit: LOCOMO_LIMIT,
        ...(budgetMs === undefined ? {} : { embeddingBudgetMs: budgetMs }),
      });
      const body = (await expectJson(Promise.resolve(response), 200)) as {
        memories: Array<{ metadata: Record<string, unknown>; score: number; matchedBy: string[] }>;
        queryEmbedding?: string;
      };
      if (body.queryEmbedding === "late") late++;
      latencies.push(performance.now() - t0);
      for (const [leg, ms] of serverTimings(response))
        legs.set(leg, [...(legs.get(leg) ?? []), ms]);
      const retrieved = body.memories.map((m) =>
        typeof m.metadata.dia_id === "string" ? m.metadata.dia_id : "",
      );
      tally.add(question.category, retrieved, question.evidence);
      ownTally.add(question.category, retrieved, question.evidence);
      const ranked = rankSessions(retrieved, sessionOf);
      const evidenceSessions = [...new Set(question.evidence.map((id) => sessionOf(id)!))];
      const any = SESSION_KS.map((k) => sessionRecallAtK(ranked, evidenceSessions, k, "any"));
      const all = SESSION_KS.map((k) => sessionRecallAtK(ranked, evidenceSessions, k, "all"));
      sessions.add(question.category, [...any, ...all]);
      outcomes.push({
        conversation: conversation.id,
        question: question.question,
        evidence: question.evidence,
        retrieved,
        category: question.category,
        turn: RECALL_KS.map((k) => recallAtK(retrieved, question.evidence, k)),
        sessionAny: any,
        sessionAll: all,
        scores: body.memories.map((m) => m.score),
        matchedBy: body.memories.map((m) => m.matchedBy.join("+")),
      });
      dropped += question.dropped.length;
      if (question.evidence.length === 0) withoutEvidence++;
    }
    // FTS5's BM25 statistics span every agent's memories: remove this conversation so the next
    // one is ranked over its own turns only, as in the paper, whatever the order.
    await expectJson(call("DELETE", `/memories?agentId=${agentId}`), 200);
  }

  const rows = tally.rows();
  const questions = rows.at(-1)?.questions ?? 0;
  console.log(
    `\n1. LoCoMo retrieval: ${conversations.length} conversations, ${turns} turns, ${questions} questions; turn-level recall@k in %`,
  );
  console.log(
    `   (POST /memories/similar, type message, limit ${LOCOMO_LIMIT}; the reference rows are on all 10 conversations)\n`,
  );
  const table: Cell[][] = rows.map((row) => [row.category, row.questions, ...row.recall]);
  table.push(
    ["*DRAGON dense retriever (paper, Table 3)*", "", 56.7, 66.2, 76.7],
    ["*plain BM25, stopwords removed (data README)*", "", 52.2, 58.8, 67.0],
  );
  console.log(
    markdownTable(
      ["retriever / category", "questions", ...RECALL_KS.map((k) => `R@${k}`)],
      table,
      [0, 0, 1, 1, 1],
    ),
  );
  console.log(
    `\n   Session-level recall@k in %: sessions ranked by their best turn in the same 25 results; "any": a`,
  );
  console.log(
    `   session holding the question's evidence is in the top k; "all": every such session is.\n`,
  );
  console.log(
    markdownTable(
      [
        "category",
        "questions",
        ...SESSION_KS.map((k) => `any R@${k}`),
        ...SESSION_KS.map((k) => `all R@${k}`),
      ],
      sessions.rows().map((row) => [row.category, row.questions, ...row.recall]),
      [0, 0, ...SESSION_KS.flatMap(() => [1, 1])],
    ),
  );
  console.log(`\n   Turn-level recall@k in % per conversation (the spread across the five):\n`);
  console.log(
    markdownTable(
      ["conversation", "questions", ...RECALL_KS.map((k) => `R@${k}`)],
      [...byConversation].map(([id, own]) => {
        const overall = own.rows().at(-1)!;
        return [id, overall.questions, ...overall.recall];
      }),
      [0, 0, 1, 1, 1],
    ),
  );
  if (dump !== undefined) writeFileSync(dump, JSON.stringify(outcomes));
  const lat = summarize(latencies);
  console.log(
    `\ningest: ${turns} memories in ${ingest.seconds.toFixed(1)} s = ${Math.round(turns / ingest.seconds)} memories/s through POST /memories (batches of ${BATCH_SIZE}); ${describeEmbedding(ingest)}`,
  );
  console.log(
    `query latency (client-measured, ${lat.n} queries): p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms`,
  );
  console.log(
    `inside the worker (Server-Timing), p50 ms: ${LEGS.map((leg) => `${leg} ${summarize(legs.get(leg) ?? []).p50.toFixed(1)}`).join(", ")}`,
  );
  console.log(
    `evidence: ${dropped} cited ids name no turn and were dropped; ${withoutEvidence} questions are left without evidence and count as 1`,
  );
  if (budgetMs !== undefined)
    console.log(
      `query vectors past the ${budgetMs} ms budget (searched by text alone): ${late} of ${lat.n}`,
    );
}

/** Every turn as a message memory; its id is derived from the conversation and the dia_id. */
function locomoMemories(conversation: LocomoConversation, agentId: string): MemoryInput[] {
  return conversation.turns.map((turn) => ({
    agentId,
    id: `${conversation.id}:${turn.diaId}`,
    type: "message",
    roomId: `session-${turn.session}`,
    userId: slug(turn.speaker),
    userName: turn.speaker,
    text: turn.text,
    createdAt: turn.at,
    metadata: { dia_id: turn.diaId },
  }));
}

async function scale(call: Call, sizes: number[]): Promise<void> {
  const rows: Cell[][] = [];
  const legRows: Cell[][] = [];
  for (const size of sizes) {
    const agentId = `scale-${size}`;
    await createAgent(call, agentId, `Scale ${size}`);
    const corpus = createCorpus(size);
    const ingest = await ingestAll(call, agentId, corpus.memories(agentId));
    const queries = corpus.queries(SCALE_WARMUP + SCALE_QUERIES + 1);
    const legs = new Map<string, number[]>();
    const search = async (query: string, record: boolean) => {
      const response = await call("POST", "/memories/similar", {
        agentId,
        query,
        limit: SCALE_LIMIT,
      });
      if (record)
        for (const [leg, ms] of serverTimings(response))
          legs.set(leg, [...(legs.get(leg) ?? []), ms]);
      await expectJson(Promise.resolve(response), 200);
    };
    const t0 = performance.now();
    await search(queries[0]!, false);
    const cold = performance.now() - t0;
    const latencies: number[] = [];
    for (const [i, query] of queries.slice(1).entries()) {
      const q0 = performance.now();
      await search(query, i >= SCALE_WARMUP);
      if (i >= SCALE_WARMUP) latencies.push(performance.now() - q0);
    }
    const lat = summarize(latencies);
    rows.push([
      size.toLocaleString("en"),
      ingest.seconds,
      Math.round(size / ingest.seconds),
      describeEmbedding(ingest),
      cold,
      lat.p50,
      lat.p95,
      lat.p99,
    ]);
    legRows.push([
      size.toLocaleString("en"),
      ...LEGS.map((leg) => summarize(legs.get(leg) ?? []).p50),
    ]);
  }
  console.log(
    `\n2. One agent holding N synthetic memories (messages, facts, profiles, lore, summaries in 200 rooms), ingested through`,
  );
  console.log(
    `   POST /memories (batches of ${BATCH_SIZE}) until nothing waits for a vector; then POST /memories/similar (limit ${SCALE_LIMIT}):`,
  );
  console.log(
    `   the first query after ingest, then ${SCALE_QUERIES} queries after ${SCALE_WARMUP} warm-up, client-measured.\n`,
  );
  console.log(
    markdownTable(
      [
        "memories",
        "ingest s",
        "memories/s",
        "vectors",
        "first query ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
      ],
      rows,
      [0, 1, 0, 0, 0, 1, 1, 1],
    ),
  );
  console.log(
    `\n   Inside the worker (Server-Timing of the same queries), median ms per leg; text and vector run at once:\n`,
  );
  console.log(
    markdownTable(["memories", ...LEGS.map((leg) => `${leg} p50`)], legRows, [
      0,
      ...LEGS.map(() => 1),
    ]),
  );
}

/** The legs POST /memories/similar reports, in the order a search runs them. */
const LEGS = ["embed", "text", "vector", "load", "search"] as const;

/** `leg;dur=ms` pairs of a response's Server-Timing header. */
function serverTimings(response: Response): Array<[string, number]> {
  const header = response.headers.get("server-timing") ?? "";
  return [...header.matchAll(/([\w-]+);dur=([\d.]+)/g)].map((m) => [m[1]!, Number(m[2])]);
}

/** Stores the memories in batches, then embeds whatever is still pending, and checks the count. */
async function ingestAll(
  call: Call,
  agentId: string,
  memories: MemoryInput[],
): Promise<IngestResult> {
  const started = performance.now();
  let embeddedInline = 0;
  let pending = 0;
  for (let i = 0; i < memories.length; i += BATCH_SIZE) {
    const body = (await expectJson(
      call("POST", "/memories", { memories: memories.slice(i, i + BATCH_SIZE) }),
      201,
    )) as { embedded: number; pending: number };
    embeddedInline += body.embedded;
    pending += body.pending;
  }
  // The contract says `pending` is a count; the route answers a boolean. Either works here.
  let embeddedLater = 0;
  for (let backlog = pending > 0; backlog; ) {
    const body = (await expectJson(call("POST", "/memories/embed", { agentId }), 200)) as {
      embedded: number;
      pending: boolean | number;
    };
    embeddedLater += body.embedded;
    backlog = body.pending === true || (typeof body.pending === "number" && body.pending > 0);
    if (backlog && body.embedded === 0)
      throw new Error(`${agentId}: POST /memories/embed makes no progress`);
  }
  const seconds = (performance.now() - started) / 1000;
  const stats = (await expectJson(call("GET", `/memories/stats?agentId=${agentId}`), 200)) as {
    total: number;
    pendingEmbedding: number;
  };
  if (stats.total !== memories.length || stats.pendingEmbedding !== 0) {
    throw new Error(
      `${agentId}: sent ${memories.length} memories, the agent holds ${stats.total} with ${stats.pendingEmbedding} waiting for a vector`,
    );
  }
  return { seconds, embeddedInline, embeddedLater };
}

function describeEmbedding(ingest: IngestResult): string {
  return ingest.embeddedLater === 0
    ? "all embedded inline"
    : `${ingest.embeddedInline} embedded inline, ${ingest.embeddedLater} by POST /memories/embed`;
}

async function createAgent(call: Call, id: string, name: string): Promise<void> {
  await expectJson(
    call("POST", "/agents", {
      id,
      name,
      bio: ["A memory benchmark agent."],
      system: `You are ${name}.`,
    }),
    201,
  );
}

async function expectJson(pending: Promise<Response>, status: number): Promise<unknown> {
  const response = await pending;
  const text = await response.text();
  if (response.status !== status)
    throw new Error(`expected HTTP ${status}, got ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "") || "someone"
  );
}

main().catch((error: unknown) => {
  console.error(
    error instanceof UsageError
      ? error.message
      : `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  process.exit(1);
});
