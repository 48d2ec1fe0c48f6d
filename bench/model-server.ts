// The scripted OpenAI-compatible stand-in (test/stand-ins) on a Node http server on loopback, so
// the worker under benchmark reaches a "model" that answers at once. Records how long it spent per
// call, so the tables can show that the model itself cost nothing. Side prompts (fact extraction,
// summaries) get valid JSON of the asked shape, as a real model would give, whatever the
// benchmark's responder says: a "Hello!" there would make every extraction re-ask.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { hashEmbed } from "../src/runtime/retrieval/hash-embedder.ts";
import {
  createOpenAIStandIn,
  type StandInCall,
  type StandInResponder,
  type StandInStep,
} from "../test/stand-ins/openai-stand-in.ts";

export interface ModelServer {
  url: string;
  respondWith(responder: StandInResponder): void;
  /** Sees every chat request, side prompts included (`side`), before it is answered. */
  observe(observer: (call: StandInCall, side: boolean) => void): void;
  calls(): number;
  /** Of those, side prompts answered with JSON (fact extraction, summaries). */
  sideCalls(): number;
  /** Milliseconds spent inside the stand-in per call since the last take. */
  takeServiceTimes(): number[];
  /**
   * When each streamed answer's first content chunk was written, on this process's
   * performance.now() clock (a client in this process can subtract it from its own times).
   */
  takeFirstTokenTimes(): number[];
  /**
   * Side prompts answered with this HTTP status instead (null: answered again), as an endpoint
   * that does not serve SMALL_MODEL would.
   */
  failSideTasks(status: number | null): void;
  /** Requests to /embeddings since the start. */
  embeddingCalls(): number;
  /** Production's waits from now on (all zero: answers at once). */
  setLatency(latency: Partial<ModelLatency>): void;
  close(): Promise<void>;
}

/**
 * The waits of a model and an embedding API in production, for `npm run bench -- --embed-ms ...`
 * and `bench:compare`: every chat request waits `firstTokenMs` before its first chunk (a JSON
 * answer also waits out the writing, as the model writes at one pace), then writes
 * `tokensPerSecond` words a second; every /embeddings request waits `embedMs`.
 */
export interface ModelLatency {
  embedMs: number;
  firstTokenMs: number;
  /** 0: the whole answer at once after the first token's wait. */
  tokensPerSecond: number;
}

export interface ModelServerOptions {
  /** Streamed answers (`stream: true`) pause this long between chunks: a model writing at a fixed rate. */
  chunkDelayMs?: number;
  latency?: Partial<ModelLatency>;
}

/** A streamed chunk that carries text: `"content":"` and then not the closing quote. */
const FIRST_TOKEN = /"content":"[^"]/;

/** The size the stand-in's /embeddings answers with when the request names none. */
export const BENCH_EMBEDDING_DIMENSIONS = 384;

export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const standIn = createOpenAIStandIn({ chunkDelayMs: options.chunkDelayMs });
  let serviceTimes: number[] = [];
  let count = 0;
  let sideCount = 0;
  let responder: StandInResponder = () => ({ text: "ok" });
  let sideFailure: number | null = null;
  let embeddings = 0;
  let firstTokens: number[] = [];
  let observer: ((call: StandInCall, side: boolean) => void) | null = null;
  let latency: ModelLatency = {
    embedMs: 0,
    firstTokenMs: 0,
    tokensPerSecond: 0,
    ...options.latency,
  };
  standIn.respondWith(async (call) => {
    const side = sideTaskAnswer(call);
    if (side) sideCount += 1;
    observer?.(call, side !== null);
    const step = !side
      ? await responder(call)
      : sideFailure === null
        ? side
        : { status: sideFailure };
    return withLatency(step, call, latency);
  });
  const server = createServer(async (req, res) => {
    const started = performance.now();
    const body = await readBody(req);
    if (req.method === "POST" && req.url?.endsWith("/embeddings")) {
      embeddings += 1;
      await answerEmbeddings(body, latency.embedMs, res);
      serviceTimes.push(performance.now() - started);
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string") headers.set(name, value);
    const response = await standIn.fetch(
      new Request(`http://127.0.0.1${req.url ?? "/"}`, {
        method: req.method,
        headers,
        body: req.method === "POST" ? body : undefined,
      }),
    );
    res.writeHead(response.status, Object.fromEntries(response.headers));
    // Passed on chunk by chunk, so a streamed answer reaches the worker at the stand-in's pace.
    let firstToken = true;
    if (response.body)
      for await (const chunk of response.body) {
        if (firstToken && FIRST_TOKEN.test(Buffer.from(chunk).toString("utf8"))) {
          firstToken = false;
          firstTokens.push(performance.now());
        }
        res.write(chunk);
      }
    res.end();
    count += 1;
    serviceTimes.push(performance.now() - started);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    respondWith: (next) => {
      responder = next;
    },
    observe: (next) => {
      observer = next;
    },
    calls: () => count,
    sideCalls: () => sideCount,
    takeFirstTokenTimes() {
      const taken = firstTokens;
      firstTokens = [];
      return taken;
    },
    takeServiceTimes() {
      const taken = serviceTimes;
      serviceTimes = [];
      return taken;
    },
    failSideTasks: (status) => {
      sideFailure = status;
    },
    embeddingCalls: () => embeddings,
    setLatency: (next) => {
      latency = { ...latency, ...next };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A step as the model would give it at `latency`: the first token's wait, then the writing. */
function withLatency(step: StandInStep, call: StandInCall, latency: ModelLatency): StandInStep {
  if (latency.firstTokenMs === 0 && latency.tokensPerSecond === 0) return step;
  const perToken = latency.tokensPerSecond > 0 ? 1000 / latency.tokensPerSecond : 0;
  const words = "text" in step && typeof step.text === "string" ? step.text.split(/\s+/).length : 1;
  const streamed = call.body.stream === true;
  // Streamed, the stand-in's first chunk is the role alone and each later one waits `perToken`:
  // the role goes one interval early, so the first word leaves at `firstTokenMs`.
  const wait = streamed
    ? Math.max(0, latency.firstTokenMs - perToken)
    : latency.firstTokenMs + words * perToken;
  return {
    ...step,
    delayMs: (step.delayMs ?? 0) + wait,
    ...(streamed ? { chunkDelayMs: perToken } : {}),
  };
}

/**
 * An OpenAI-compatible /embeddings answer after `delayMs`: each input's hashed vector (the local
 * embedder's own, so what is found is what the worker's local embedder would find), of the
 * requested `dimensions`.
 */
async function answerEmbeddings(body: Buffer, delayMs: number, res: ServerResponse): Promise<void> {
  let request: { input?: unknown; dimensions?: unknown; model?: unknown };
  try {
    request = JSON.parse(body.toString("utf8")) as typeof request;
  } catch {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ error: { message: "body is not JSON", type: "invalid_request_error" } }),
    );
    return;
  }
  const inputs = Array.isArray(request.input) ? request.input : [request.input];
  const dimensions =
    typeof request.dimensions === "number" ? request.dimensions : BENCH_EMBEDDING_DIMENSIONS;
  if (delayMs > 0) await sleep(delayMs);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      object: "list",
      model: request.model,
      data: inputs.map((input, index) => ({
        object: "embedding",
        index,
        embedding: Array.from(hashEmbed(String(input), dimensions)),
      })),
      usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
    }),
  );
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * What a model asked for JSON answers: the runtime's side prompts end with "Reply with JSON only:"
 * and the shape. A conversation of benchmark messages holds no lasting facts; a summary is text.
 */
export function sideTaskAnswer(call: StandInCall): StandInStep | null {
  const system = call.messages.find((m) => m.role === "system")?.content;
  if (typeof system !== "string" || !system.includes("Reply with JSON only:")) return null;
  const summary = "The person sent numbered test messages.";
  // A reflection can carry a due summary: then its shape asks for both.
  if (system.includes('{"facts"'))
    return {
      text: JSON.stringify({
        facts: [],
        description: null,
        ...(system.includes('"summary":') ? { summary } : {}),
      }),
    };
  if (system.includes('{"summary"')) return { text: JSON.stringify({ summary }) };
  return null;
}
