// The scripted OpenAI-compatible stand-in (test/stand-ins) on a Node http server on loopback, so
// the worker under benchmark reaches a "model" that answers at once. Records how long it spent per
// call, so the tables can show that the model itself cost nothing.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenAIStandIn, type StandInResponder } from "../test/stand-ins/openai-stand-in.ts";

export interface ModelServer {
  url: string;
  respondWith(responder: StandInResponder): void;
  calls(): number;
  /** Milliseconds spent inside the stand-in per call since the last take. */
  takeServiceTimes(): number[];
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
    respondWith: (responder) => standIn.respondWith(responder),
    calls: () => count,
    takeServiceTimes() {
      const taken = serviceTimes;
      serviceTimes = [];
      return taken;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
