// A loopback pass-through in front of the model stand-in for `npm run bench:compare` under delays:
// records when each chat or /embeddings request arrived and when its answer was fully written, on
// this process's clock (the one the turns are timed with), so call-sequence.ts can tell which calls
// a reply waited for. Bodies pass through untouched, a streamed answer chunk by chunk.
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import type { TimedCall } from "./call-sequence.ts";

export interface TimedProxy {
  url: string;
  /** Every request so far, in the order they ended. */
  calls(): TimedCall[];
  /** Resolves once no request is open and none has started or ended for `quietMs` (or at `maxMs`). */
  settled(quietMs: number, maxMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTimedProxy(target: string): Promise<TimedProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true });
  const calls: TimedCall[] = [];
  let open = 0;
  let lastActivity = performance.now();
  const server = createServer((req, res) => {
    const startMs = performance.now();
    open += 1;
    lastActivity = startMs;
    const kind = req.url?.endsWith("/embeddings") ? "embedding" : "model";
    res.on("close", () => {
      const endMs = performance.now();
      open -= 1;
      lastActivity = endMs;
      calls.push({ kind, startMs, endMs });
    });
    const forward = request(
      {
        agent,
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", (error) => res.destroy(error));
    req.pipe(forward);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls: () => calls,
    async settled(quietMs, maxMs = 15_000) {
      const deadline = performance.now() + maxMs;
      while (
        (open > 0 || performance.now() - lastActivity < quietMs) &&
        performance.now() < deadline
      )
        await new Promise((resolve) => setTimeout(resolve, 25));
    },
    close: () =>
      new Promise((resolve) => {
        agent.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
