// `npm run bench:floor`: what local workerd costs a turn before any of our code runs, next to the
// real turn, in one run. The worker is bench/floor/entry.ts (the real worker plus three routes):
// a request answered at once, one call to a room object, and a turn reduced to its I/O (the room
// journals the message in its SQLite, one D1 batch writes it and reads the room's history and
// full-text hits, one model request, the reply journaled, one D1 batch after the answer). The real
// plain turn (`POST /agents/bench/messages`, admin token, same room) runs in blocks interleaved
// with the floor's, so both see the same machine, and so does a greeting (a message with no
// content words, which skips retrieval), to show retrieval's share of the turn. Then the floor
// and the plain turn under load (`--load`, 2,000 turns across 100 rooms, 50 in flight, as in
// `npm run bench:load`), in alternating halves: turns per second and workerd's CPU per turn, the
// ceiling local workerd sets on throughput. A fresh temporary state every run, as in
// `npm run bench`. With `--traced`, traces go to a collector on loopback: run it with and without
// to see what tracing costs a turn.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { startModelServer } from "./model-server.ts";
import { processCpuMs } from "./compare/peer-result.ts";
import { markdownTable, summarize, type Summary } from "./stats.ts";
import { createBenchAgent, startBenchWorker } from "./worker-harness.ts";

const { values: flags } = parseArgs({
  options: {
    turns: { type: "string" },
    blocks: { type: "string" },
    load: { type: "string" },
    // Traces on: OTEL_EXPORTER_OTLP_ENDPOINT at a collector on loopback that answers 200.
    traced: { type: "boolean" },
  },
});
const TURNS = Number(flags.turns ?? 300);
const BLOCKS = Number(flags.blocks ?? 6);
if (!Number.isInteger(TURNS) || TURNS < BLOCKS || !Number.isInteger(BLOCKS) || BLOCKS < 1)
  throw new Error("--turns and --blocks must be whole numbers, with at least one turn per block");
/** Turns per path under load (0: none); rooms and turns in flight as in `npm run bench:load`. */
const LOAD_TURNS = Number(flags.load ?? 2_000);
const LOAD_ROOMS = 100;
const LOAD_IN_FLIGHT = 50;
if (!Number.isInteger(LOAD_TURNS) || LOAD_TURNS < 0 || LOAD_TURNS % 2 !== 0)
  throw new Error("--load must be an even whole number of turns (0 for none)");

/** workerd's CPU time (all its threads) while `work` ran, ms; 0 where there is no /proc. */
async function workerdCpuDuring(pid: number | null, work: () => Promise<unknown>): Promise<number> {
  const before = pid === null ? 0 : processCpuMs(pid);
  await work();
  return pid === null ? 0 : processCpuMs(pid) - before;
}

interface Path {
  name: string;
  send: (i: number) => Promise<Response>;
  samples: number[];
  /** workerd's CPU time (all its threads) while this path's blocks ran, ms. */
  cpuMs: number;
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents floor bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const model = await startModelServer();
  model.respondWith(() => ({ text: "Hello!" }));
  const collector = flags.traced ? await startCollector() : null;
  const worker = await startBenchWorker(
    {
      OPENAI_API_KEY: "bench",
      OPENAI_BASE_URL: `${model.url}/v1`,
      MODEL: "bench-model",
      ...(collector ? { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } : {}),
    },
    { entry: "bench/floor/entry.ts" },
  );
  try {
    await createBenchAgent(worker.call);
    const floor = (route: string) => (i: number) =>
      worker.call("POST", `/__floor/${route}`, {
        agentId: "bench",
        roomId: "floor-room",
        userId: "u",
        text: `message number ${i} about the weather`,
      });
    const paths: Path[] = [
      {
        name: "request answered at once (loopback HTTP)",
        send: () => fetch(`${worker.base}/__floor/ping`),
        samples: [],
        cpuMs: 0,
      },
      { name: "+ one call to a room object", send: floor("hop"), samples: [], cpuMs: 0 },
      { name: "turn reduced to its I/O (floor)", send: floor("turn"), samples: [], cpuMs: 0 },
      {
        name: "plain turn (same room), the product",
        send: (i) =>
          worker.call("POST", "/agents/bench/messages", {
            roomId: "plain-room",
            userId: "u",
            text: `message number ${i} about the weather`,
          }),
        samples: [],
        cpuMs: 0,
      },
      {
        // No content words, so the turn skips retrieval (no query embedding, no knowledge or
        // recall search): the difference to the row above is what retrieval costs a turn.
        name: "the same, a greeting (no retrieval)",
        send: () =>
          worker.call("POST", "/agents/bench/messages", {
            roomId: "greeting-room",
            userId: "u",
            text: "hi there, thanks!",
          }),
        samples: [],
        cpuMs: 0,
      },
    ];
    const once = async (path: Path, i: number, record: boolean) => {
      const started = performance.now();
      const response = await path.send(i);
      const body = await response.text();
      const ms = performance.now() - started;
      if (response.status !== 200)
        throw new Error(`${path.name}: ${response.status} ${body.slice(0, 200)}`);
      if (record) path.samples.push(ms);
    };
    // Warm-up, then the same number of turns per path in interleaved blocks.
    for (const path of paths) for (let i = 0; i < 30; i++) await once(path, i, false);
    const perBlock = Math.floor(TURNS / BLOCKS);
    let n = 30;
    for (let block = 0; block < BLOCKS; block++) {
      for (const path of paths) {
        path.cpuMs += await workerdCpuDuring(worker.pid, async () => {
          for (let i = 0; i < perBlock; i++) await once(path, n + i, true);
        });
      }
      n += perBlock;
    }
    const summaries = paths.map((path) => summarize(path.samples));
    const floorP50 = summaries[2]!.p50;
    const row = (path: Path, s: Summary) => [
      path.name,
      s.n,
      s.p50,
      s.p95,
      s.p99,
      s.mean,
      s.p50 / floorP50,
      worker.pid === null ? "-" : path.cpuMs / s.n,
    ];
    console.log(
      `\nClient-measured, sequential, ${BLOCKS} interleaved blocks of ${perBlock} per path (after 30 warm-up each); the model stand-in answers at once on loopback.\n`,
    );
    console.log(
      markdownTable(
        [
          "path",
          "requests",
          "p50 ms",
          "p95 ms",
          "p99 ms",
          "mean ms",
          "p50 / floor p50",
          "workerd CPU ms / request",
        ],
        paths.map((path, i) => row(path, summaries[i]!)),
        [0, 0, 1, 1, 1, 1, 2, 1],
      ),
    );
    if (LOAD_TURNS > 0) {
      const loadPaths = [
        { name: "turn reduced to its I/O (floor)", route: "floor" as const },
        { name: "plain turn, the product", route: "product" as const },
      ].map((path) => ({ ...path, turns: 0, wallMs: 0, cpuMs: 0 }));
      const sendIn = (route: "floor" | "product", room: string, i: number) => {
        const body = { userId: "u", text: `message number ${i} about the weather` };
        return route === "floor"
          ? worker.call("POST", "/__floor/turn", { agentId: "bench", roomId: room, ...body })
          : worker.call("POST", "/agents/bench/messages", { roomId: room, ...body });
      };
      // Alternating halves, so a drift of the machine's speed touches both paths alike.
      for (let half = 0; half < 2; half++) {
        for (const path of loadPaths) {
          const count = LOAD_TURNS / 2;
          const started = performance.now();
          let next = 0;
          path.cpuMs += await workerdCpuDuring(worker.pid, () =>
            Promise.all(
              Array.from({ length: LOAD_IN_FLIGHT }, async () => {
                while (next < count) {
                  const i = next++;
                  const room = `load-${path.route}-${(half * count + i) % LOAD_ROOMS}`;
                  const response = await sendIn(path.route, room, i);
                  const body = await response.text();
                  if (response.status !== 200)
                    throw new Error(`${path.name}: ${response.status} ${body.slice(0, 200)}`);
                }
              }),
            ),
          );
          path.wallMs += performance.now() - started;
          path.turns += count;
        }
      }
      console.log(
        `\nUnder load: ${LOAD_TURNS} turns per path across ${LOAD_ROOMS} rooms, ${LOAD_IN_FLIGHT} in flight, in two alternating halves.\n`,
      );
      console.log(
        markdownTable(
          ["path", "turns", "turns/s", "workerd CPU ms / turn", "ceiling at that CPU, turns/s"],
          loadPaths.map((path) => [
            path.name,
            path.turns,
            path.turns / (path.wallMs / 1000),
            worker.pid === null ? "-" : path.cpuMs / path.turns,
            worker.pid === null ? "-" : 1000 / (path.cpuMs / path.turns),
          ]),
          [0, 0, 1, 1, 1],
        ),
      );
    }
    if (collector)
      console.log(
        `\nTraced: the collector received ${collector.batches} export requests, ${collector.spans} spans.`,
      );
  } finally {
    await worker.stop();
    await model.close();
    collector?.server.close();
  }
}

/** An OTLP/HTTP collector on loopback that counts what it is sent and answers 200. */
async function startCollector() {
  const collector = { url: "", batches: 0, spans: 0, server: createServer() };
  collector.server.on("request", (request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      collector.batches += 1;
      collector.spans += (body.match(/"spanId"/g) ?? []).length;
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((done) => collector.server.listen(0, "127.0.0.1", done));
  collector.url = `http://127.0.0.1:${(collector.server.address() as AddressInfo).port}`;
  return collector;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
