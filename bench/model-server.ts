// The scripted OpenAI-compatible stand-in (test/stand-ins) on a Node http server on loopback, so
// the worker under benchmark reaches a "model" that answers at once. Records how long it spent per
// call, so the tables can show that the model itself cost nothing. Side prompts (fact extraction,
// summaries) get valid JSON of the asked shape, as a real model would give, whatever the
// benchmark's responder says: a "Hello!" there would make every extraction re-ask.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createOpenAIStandIn,
  type StandInCall,
  type StandInResponder,
  type StandInStep,
} from "../test/stand-ins/openai-stand-in.ts";

export interface ModelServer {
  url: string;
  respondWith(responder: StandInResponder): void;
  calls(): number;
  /** Of those, side prompts answered with JSON (fact extraction, summaries). */
  sideCalls(): number;
  /** Milliseconds spent inside the stand-in per call since the last take. */
  takeServiceTimes(): number[];
  /**
   * Side prompts answered with this HTTP status instead (null: answered again), as an endpoint
   * that does not serve SMALL_MODEL would.
   */
  failSideTasks(status: number | null): void;
  close(): Promise<void>;
}

export interface ModelServerOptions {
  /** Streamed answers (`stream: true`) pause this long between chunks: a model writing at a fixed rate. */
  chunkDelayMs?: number;
}

export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const standIn = createOpenAIStandIn({ chunkDelayMs: options.chunkDelayMs });
  let serviceTimes: number[] = [];
  let count = 0;
  let sideCount = 0;
  let responder: StandInResponder = () => ({ text: "ok" });
  let sideFailure: number | null = null;
  standIn.respondWith((call) => {
    const side = sideTaskAnswer(call);
    if (!side) return responder(call);
    sideCount += 1;
    return sideFailure === null ? side : { status: sideFailure };
  });
  const server = createServer(async (req, res) => {
    const started = performance.now();
    const body = await readBody(req);
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
    if (response.body) for await (const chunk of response.body) res.write(chunk);
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
    calls: () => count,
    sideCalls: () => sideCount,
    takeServiceTimes() {
      const taken = serviceTimes;
      serviceTimes = [];
      return taken;
    },
    failSideTasks: (status) => {
      sideFailure = status;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
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
