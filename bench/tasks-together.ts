// `npm run bench:tasks`, part 3: agents working together, through the worker in local workerd.
// (a) Four one-step tasks on an agent with `settings.tasks.concurrency: 4`, started together, against
//     the same four run one after the other, with a model that takes MODEL_LATENCY_MS per call:
//     wall time on the object's own clock (created to finished).
// (b) A delegation round trip: a chat turn whose agent asks another (ask_agent) with a model that
//     answers at once; the round trip as the caller's tool call measured it, minus the callee's
//     model service time, and the whole turn against a plain one (each minus its model time).
import {
  goalOf,
  oneStepScript,
  scriptTask,
  standInResponder,
} from "../test/helpers/task-script.ts";
import type { StandInCall, StandInStep } from "../test/stand-ins/openai-stand-in.ts";
import type { ModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import type { BenchWorker } from "./worker-harness.ts";

const MODEL_LATENCY_MS = 100;
const PARALLEL_ROUNDS = 8;
const TASKS_AT_ONCE = 4;
const DELEGATION_RUNS = 40;
const WARMUP = 3;

interface TaskTimes {
  status: string;
  createdAt: number;
  finishedAt: number | null;
}

async function created(worker: BenchWorker, body: Record<string, unknown>): Promise<void> {
  const response = await worker.call("POST", "/agents", body);
  if (response.status !== 201)
    throw new Error(`creating agent ${String(body.id)} failed: ${response.status}`);
}

async function startTask(worker: BenchWorker, agentId: string, goal: string): Promise<string> {
  const response = await worker.call("POST", `/agents/${agentId}/tasks`, { goal });
  if (response.status !== 202) throw new Error(`a task was refused: ${response.status}`);
  return ((await response.json()) as { taskId: string }).taskId;
}

async function finished(worker: BenchWorker, agentId: string, taskId: string): Promise<TaskTimes> {
  for (;;) {
    const task = (await (
      await worker.call("GET", `/agents/${agentId}/tasks/${taskId}`)
    ).json()) as TaskTimes;
    if (task.finishedAt !== null) {
      if (task.status !== "completed") throw new Error(`a bench task ended ${task.status}`);
      return task;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Each goal its own one-step script; every reply takes MODEL_LATENCY_MS. */
function slowScripts(goals: string[]): (call: StandInCall) => StandInStep {
  const responders = new Map(
    goals.map((goal) => [goal, standInResponder(scriptTask(oneStepScript(`${goal}: done.`)))]),
  );
  return (call) => {
    const reply = responders.get(goalOf(call))?.(call) ?? { text: "(no script)" };
    return { ...reply, delayMs: MODEL_LATENCY_MS };
  };
}

async function parallelRows(worker: BenchWorker, model: ModelServer) {
  const agentId = "tasks-parallel-bench";
  await created(worker, {
    id: agentId,
    name: "Parallel",
    bio: ["A benchmark agent."],
    settings: { tasks: { concurrency: TASKS_AT_ONCE } },
  });
  const sequential: number[] = [];
  const concurrent: number[] = [];
  for (let round = 0; round < WARMUP + PARALLEL_ROUNDS; round++) {
    const goals = Array.from({ length: TASKS_AT_ONCE }, (_, i) => `Bench goal ${round}.${i}`);
    model.respondWith(slowScripts(goals));
    let one = 0;
    for (const goal of goals) {
      const task = await finished(worker, agentId, await startTask(worker, agentId, goal));
      one += task.finishedAt! - task.createdAt;
    }
    const together = goals.map((goal) => `${goal} (together)`);
    model.respondWith(slowScripts(together));
    const ids = await Promise.all(together.map((goal) => startTask(worker, agentId, goal)));
    const tasks = await Promise.all(ids.map((taskId) => finished(worker, agentId, taskId)));
    const wall =
      Math.max(...tasks.map((t) => t.finishedAt!)) - Math.min(...tasks.map((t) => t.createdAt));
    if (round >= WARMUP) {
      sequential.push(one);
      concurrent.push(wall);
    }
  }
  const s = summarize(sequential);
  const c = summarize(concurrent);
  return [
    [`${TASKS_AT_ONCE} one-step tasks, one after the other`, s.p50, s.p95, 1],
    [
      `${TASKS_AT_ONCE} one-step tasks at once (concurrency ${TASKS_AT_ONCE})`,
      c.p50,
      c.p95,
      s.p50 / c.p50,
    ],
  ];
}

interface TurnOut {
  toolCalls: { name: string; durationMs: number; ok: boolean }[];
}

async function delegationRows(worker: BenchWorker, model: ModelServer) {
  const bob = "ask-bench-bob";
  const ada = "ask-bench-ada";
  await created(worker, {
    id: bob,
    name: "Bob",
    bio: ["A benchmark agent."],
    system: "You are Bob.",
  });
  await created(worker, {
    id: ada,
    name: "Ada",
    bio: ["A benchmark agent."],
    system: "You are Ada.",
    settings: { delegates: [bob] },
  });
  model.respondWith((call) => {
    const system = String(call.messages[0]?.content ?? "");
    if (system.includes("You are Bob.")) return { text: "42." };
    const asked = call.messages.some((message) => message.role === "tool");
    return asked
      ? { text: "Bob says 42." }
      : { toolCalls: [{ name: "ask_agent", arguments: { agentId: bob, message: "6 x 7?" } }] };
  });
  const roundTrip: number[] = [];
  const withAsk: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < WARMUP + DELEGATION_RUNS; i++) {
    model.takeServiceTimes();
    let started = performance.now();
    const response = await worker.call("POST", `/agents/${ada}/messages`, {
      userId: "bench",
      text: "Ask Bob what 6 x 7 is",
    });
    const turn = (await response.json()) as TurnOut;
    const askedWall = performance.now() - started;
    const [first, callee, last] = model.takeServiceTimes();
    const call = turn.toolCalls[0];
    if (response.status !== 200 || !call?.ok || last === undefined)
      throw new Error(`the delegation turn failed: ${response.status}`);

    started = performance.now();
    const direct = await worker.call("POST", `/agents/${bob}/messages`, {
      userId: "bench",
      text: "What is 6 x 7?",
    });
    await direct.arrayBuffer();
    const plainWall = performance.now() - started;
    const [only] = model.takeServiceTimes();
    if (i >= WARMUP) {
      roundTrip.push(call.durationMs - callee!);
      withAsk.push(askedWall - first! - callee! - last);
      plain.push(plainWall - only!);
    }
  }
  const r = summarize(roundTrip);
  const w = summarize(withAsk);
  const p = summarize(plain);
  return [
    ["ask_agent round trip, minus the callee's model call", r.p50, r.p95, r.p99],
    ["chat turn with one ask_agent, minus its 3 model calls", w.p50, w.p95, w.p99],
    ["plain chat turn, minus its model call", p.p50, p.p95, p.p99],
  ];
}

export async function benchTogether(worker: BenchWorker, model: ModelServer): Promise<void> {
  const parallel = await parallelRows(worker, model);
  console.log(
    `\n3a. Parallel tasks through the worker: ${TASKS_AT_ONCE} one-step tasks (5 model calls each, ${MODEL_LATENCY_MS} ms per call), ${PARALLEL_ROUNDS} rounds, wall time created to finished:\n`,
  );
  console.log(markdownTable(["tasks", "p50 ms", "p95 ms", "speed-up"], parallel, 2));
  const delegation = await delegationRows(worker, model);
  console.log(
    `\n3b. Delegation round trip through the worker (model answers at once, ${DELEGATION_RUNS} turns):\n`,
  );
  console.log(markdownTable(["measure", "p50 ms", "p95 ms", "p99 ms"], delegation, 2));
}
