// `npm run bench:mcp`: what the runtime adds to an MCP tool call, and what a room pays to connect.
// The same loopback MCP server (built from the SDK, test/peers/mcp-peers.ts) is called
// 1. directly with the SDK client from Node, and 2. by the model through the worker in local
// workerd (a model stand-in that answers at once asks for the tool, then answers). The runtime's
// own figure is the tool call's duration as the room recorded it; the turn-level figure is a
// one-tool turn minus a plain turn (it also holds one more model round trip). Connect time: the
// first turn of a fresh room (a new Durable Object instance, as after hibernation, which must
// initialize and list tools) minus the next turn in the same room.
import { cpus } from "node:os";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startMcpPeers } from "../test/peers/mcp-peers.ts";
import { startModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import { startBenchWorker } from "./worker-harness.ts";

const CALLS = 300;
const WARMUP = 20;
const FRESH_ROOMS = 60;

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents MCP bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const peers = await startMcpPeers();
  const model = await startModelServer();
  const worker = await startBenchWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
    ALLOW_LOOPBACK_FETCH: "true",
  });
  try {
    // 1. Directly, with the SDK client.
    const client = new Client({ name: "bench", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(peers.plainUrl)));
    const direct: number[] = [];
    for (let i = 0; i < WARMUP + CALLS; i++) {
      const started = performance.now();
      await client.callTool({ name: "echo", arguments: { text: `ping ${i}` } });
      if (i >= WARMUP) direct.push(performance.now() - started);
    }
    await client.close();

    // 2. Through the runtime.
    const created = await worker.call("POST", "/agents", {
      id: "mcp-bench",
      name: "Bench",
      bio: ["A benchmark agent."],
      settings: { memory: { factsEvery: 1000, summarizeAfter: 10000 } },
    });
    if (created.status !== 201)
      throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);
    const added = await worker.call("POST", "/agents/mcp-bench/tools", {
      name: "plain",
      url: peers.plainUrl,
    });
    if (added.status !== 201)
      throw new Error(`adding the MCP server failed: ${added.status} ${await added.text()}`);

    const plainTurns = await turns(worker.call, model, "plain-room", WARMUP + CALLS, () => ({
      text: "Hello!",
    }));
    let round = 0;
    const toolScript = () => {
      round = (round + 1) % 2;
      return round === 1
        ? { toolCalls: [{ name: "plain__echo", arguments: { text: "ping" } }] }
        : { text: "It echoed." };
    };
    const toolTurns = await turns(worker.call, model, "tool-room", WARMUP + CALLS, toolScript);
    const inRoom = toolTurns
      .slice(WARMUP)
      .map((turn) => turn.toolMs)
      .filter((ms): ms is number => ms !== null);

    // 3. Connect time of a fresh room.
    const connect: number[] = [];
    const plainFirst: number[] = [];
    for (let i = 0; i < FRESH_ROOMS; i++) {
      round = 0;
      const [first, second] = await turns(worker.call, model, `fresh-${i}`, 2, toolScript);
      connect.push(first!.ms - second!.ms);
      const [bare] = await turns(worker.call, model, `fresh-plain-${i}`, 1, () => ({
        text: "Hello!",
      }));
      plainFirst.push(bare!.ms);
    }

    const d = summarize(direct);
    const r = summarize(inRoom);
    const plain = summarize(plainTurns.slice(WARMUP).map((turn) => turn.ms));
    const tool = summarize(toolTurns.slice(WARMUP).map((turn) => turn.ms));
    console.log(
      `\n1. One MCP tools/call (echo), ${CALLS} calls after ${WARMUP} warm-up, same loopback server:\n`,
    );
    console.log(
      markdownTable(
        ["path", "p50 ms", "p95 ms", "p99 ms"],
        [
          ["SDK client from Node, directly", d.p50, d.p95, d.p99],
          ["through the runtime (tool call as the room timed it)", r.p50, r.p95, r.p99],
        ],
        [0, 2, 2, 2],
      ),
    );
    console.log(
      `\n   median ratio runtime / direct: ${(r.p50 / d.p50).toFixed(2)}x (Workers' clock moves only across I/O: whole ms)`,
    );
    console.log(`\n2. Whole turns through the worker (client-measured):\n`);
    console.log(
      markdownTable(
        ["turn", "p50 ms", "p95 ms", "p99 ms"],
        [
          ["plain turn (1 model call)", plain.p50, plain.p95, plain.p99],
          ["one MCP tool call (2 model calls)", tool.p50, tool.p95, tool.p99],
          ["difference of medians", tool.p50 - plain.p50, NaN, NaN],
        ],
        [0, 1, 1, 1],
      ),
    );
    const c = summarize(connect);
    const f = summarize(plainFirst);
    console.log(
      `\n3. A fresh room (new Durable Object instance, as after hibernation), ${FRESH_ROOMS} rooms:\n`,
    );
    console.log(
      markdownTable(
        ["measure", "p50 ms", "p95 ms", "p99 ms"],
        [
          [
            "first tool turn minus the second (connect: initialize + tools/list)",
            c.p50,
            c.p95,
            c.p99,
          ],
          ["first plain turn of a room without MCP servers", f.p50, f.p95, f.p99],
        ],
        [0, 1, 1, 1],
      ),
    );
  } finally {
    await worker.stop();
    await model.close();
    await peers.close();
  }
}

async function turns(
  call: (method: string, path: string, body?: unknown) => Promise<Response>,
  model: Awaited<ReturnType<typeof startModelServer>>,
  roomId: string,
  count: number,
  script: () => { text: string } | { toolCalls: Array<{ name: string; arguments: unknown }> },
): Promise<Array<{ ms: number; toolMs: number | null }>> {
  model.respondWith(script);
  const results: Array<{ ms: number; toolMs: number | null }> = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await call("POST", "/agents/mcp-bench/messages", {
      roomId,
      userId: "bench-user",
      text: `message ${i}`,
    });
    const body = (await response.json()) as {
      toolCalls?: Array<{ ok: boolean; durationMs: number }>;
      error?: unknown;
    };
    const ms = performance.now() - started;
    if (response.status !== 200)
      throw new Error(`turn failed: ${response.status} ${JSON.stringify(body)}`);
    const toolCall = body.toolCalls?.[0];
    if (toolCall && !toolCall.ok)
      throw new Error(`the MCP call failed: ${JSON.stringify(toolCall)}`);
    results.push({ ms, toolMs: toolCall ? toolCall.durationMs : null });
  }
  return results;
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
