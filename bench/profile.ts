// `npm run bench:profile [-- --turns 300]`: where workerd's JavaScript time goes in plain turns.
// Runs the worker in local workerd with its inspector open, plays warm-up turns in one room, then
// samples every isolate workerd lists (the worker with its Durable Objects, and Miniflare's own
// workers such as D1's and R2's) over `--turns` plain REST turns against the model stand-in,
// waiting for each turn's after-reply work (bench/profiler.ts). The process's whole CPU is
// `npm run bench:compare`'s figure; a Gateway message's profile is `npm run bench:discord --
// --gateway --profile`.
import { parseArgs } from "node:util";
import { startModelServer } from "./model-server.ts";
import { profileIsolates } from "./profiler.ts";
import { createBenchAgent, startBenchWorker } from "./worker-harness.ts";

const { values: args } = parseArgs({
  options: {
    turns: { type: "string", default: "300" },
    warmup: { type: "string", default: "30" },
    top: { type: "string", default: "25" },
  },
  strict: true,
});
const TURNS = Number(args.turns);
const WARMUP = Number(args.warmup);
const TOP = Number(args.top);
const INSPECTOR_PORT = 9_329;

const model = await startModelServer();
const worker = await startBenchWorker(
  {
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
    SMALL_MODEL: "bench-small",
  },
  { inspectorPort: INSPECTOR_PORT },
);
let turn = 0;
const say = async () => {
  turn += 1;
  const response = await worker.call("POST", "/agents/bench/messages", {
    userId: "ana",
    userName: "Ana",
    roomId: "profile-room",
    text: `Message ${turn}: we took the red kayak out on the lake again, and the wind picked up.`,
  });
  if (response.status !== 200) throw new Error(`turn ${turn}: ${response.status}`);
  await response.arrayBuffer();
};
/** Until the model stand-in has been quiet for 100 ms: the turn's after-reply work is done. */
const settled = async () => {
  let last = -1;
  while (model.calls() !== last) {
    last = model.calls();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

try {
  await createBenchAgent(worker.call);
  for (let i = 0; i < WARMUP; i++) await say();
  await settled();
  const profiler = await profileIsolates(INSPECTOR_PORT);
  for (let i = 0; i < TURNS; i++) {
    await say();
    await settled();
  }
  console.log(`\n${TURNS} plain turns in one room after ${WARMUP} warm-up`);
  await profiler.stop(TURNS, "turn", TOP);
} finally {
  await worker.stop();
  await model.close();
}
