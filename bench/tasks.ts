// `npm run bench:tasks`: what an autonomous task costs.
// 1. Model calls and tokens per task on a fixed set of scripted tasks, run by the real task loop
//    (src/runtime/tasks/advance-task.ts) in Node. Tokens are counted with the project's o200k tokenizer on
//    what the loop actually sends and receives, so prompt growth (and what summaries save) shows.
// 2. Runtime overhead per unit of work (plan, act step + reflection, summary, completion check)
//    with a zero-latency model: the loop alone in Node, then through the worker in local workerd
//    (AgentTasks Durable Object, SQLite persistence after every unit, built-in tools).
// 3. Agents working together: 4 tasks at once against 4 one after the other, and the overhead of
//    a delegation round trip (bench/tasks-together.ts).
import { cpus } from "node:os";
import { parseCharacter } from "../src/characters/parse-character.ts";
import { runTask, type TaskLoopDeps } from "../src/runtime/tasks/advance-task.ts";
import {
  DEFAULT_TASK_LIMITS,
  newTaskState,
  type TaskState,
} from "../src/runtime/tasks/task-types.ts";
import { loadTokenCounter, type TokenCounter } from "../src/runtime/util/tokens.ts";
import type { ChatModel, ChatRequest } from "../src/runtime/ports/model.ts";
import type { ToolHost } from "../src/runtime/ports/tools.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
  type ScriptReply,
  type TaskScript,
} from "../test/helpers/task-script.ts";
import { startModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import { benchTogether } from "./tasks-together.ts";
import { startBenchWorker } from "./worker-harness.ts";

const CORE_RUNS = 300;
const WORKER_RUNS = 40;
const WARMUP = 5;

const failing = { toolCalls: [{ name: "fetch_page", arguments: { url: "https://down.example" } }] };

/** The fixed scripted tasks. `tools` are what the in-process tool host offers. */
const SCENARIOS: { name: string; goal: string; script: TaskScript; maxSteps?: number }[] = [
  {
    name: "3 steps with tools",
    goal: "Find out what causes tides and write a two-line note",
    script: {
      plan: [
        planReply(
          ["Search for tide causes", "Read the best source", "Write the note"],
          ["The note names the moon's gravity"],
        ),
      ],
      act: [
        { toolCalls: [{ name: "search", arguments: { q: "what causes tides" } }] },
        { text: "Found three sources; the encyclopedia one is best." },
        {
          toolCalls: [
            { name: "fetch_page", arguments: { url: "https://encyclopedia.example/tides" } },
          ],
        },
        { text: "Tides come from the moon's gravity, with the sun adding spring and neap tides." },
        {
          text: "Note: tides are raised mainly by the moon's gravity; the sun makes them larger or smaller.",
        },
      ],
      reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
      summary: [{ text: "Searched, read the encyclopedia, wrote the note." }],
      evaluate: [evaluateReply([true], "Tides are raised mainly by the moon's gravity.")],
    },
  },
  {
    name: "tool fails, other approach",
    goal: "Get today's tide table for Brest",
    script: {
      plan: [
        planReply(
          ["Fetch the tide table", "Report the high tides"],
          ["The high tides are reported"],
        ),
      ],
      act: [
        failing,
        { text: "The harbour site is down." },
        { toolCalls: [{ name: "search", arguments: { q: "Brest tide table mirror" } }] },
        { text: "Got the table from a mirror." },
        { text: "High tides at 06:12 and 18:40." },
      ],
      reflect: [
        reflectReply(false, {
          failureAnalysis: "the harbour site refuses connections",
          nextApproach: "search for a mirror",
        }),
        reflectReply(true),
        reflectReply(true),
      ],
      summary: [{ text: "Harbour site down; a mirror had the table; high tides reported." }],
      evaluate: [evaluateReply([true], "High tides at 06:12 and 18:40.")],
    },
  },
  {
    name: "invalid plan re-asked",
    goal: "Say hello",
    script: {
      plan: [{ text: "Sure, I'll say hello!" }, planReply(["Say hello"], ["Hello is said"])],
      act: [{ text: "Hello!" }],
      reflect: [reflectReply(true)],
      evaluate: [evaluateReply([true], "Hello!")],
    },
  },
  {
    name: "criterion unmet, extra step",
    goal: "Draft a note with a title and a source",
    script: {
      plan: [planReply(["Draft the note"], ["It has a title", "It cites a source"])],
      act: [
        { text: "Drafted with a title." },
        { toolCalls: [{ name: "search", arguments: { q: "tide source" } }] },
        { text: "Added a source." },
      ],
      reflect: [reflectReply(true), reflectReply(true)],
      evaluate: [
        evaluateReply([true, false]),
        evaluateReply([true, true], "Titled note with a source."),
      ],
    },
  },
  {
    name: "6 steps, revised plan, summaries",
    goal: "Collect nine facts about the sea",
    script: {
      plan: [
        planReply(
          ["Facts 1-2", "Facts 3-4", "Facts 5-6", "Facts 7-8", "Fact 9"],
          ["Nine facts are collected"],
        ),
      ],
      act: Array.from(
        { length: 9 },
        (_, i): ScriptReply => ({
          text: `Fact ${i + 1}: the sea ${["is salty", "covers 71% of Earth", "has tides", "has currents", "absorbs CO2", "is deep", "is cold at depth", "holds most life", "shapes weather"][i]}.`,
        }),
      ),
      reflect: [
        reflectReply(true, {
          revisedRemainingSteps: [
            { title: "Facts 3-4", doneWhen: "two more" },
            { title: "Facts 5-6", doneWhen: "two more" },
            { title: "Facts 7-8", doneWhen: "two more" },
            { title: "Fact 9", doneWhen: "one more" },
            { title: "Check all nine", doneWhen: "nine listed" },
          ],
        }),
        ...Array.from({ length: 8 }, () => reflectReply(true)),
      ],
      summary: [
        { text: "Facts 1-3 collected." },
        { text: "Facts 1-6 collected." },
        { text: "Facts 1-9 collected." },
      ],
      evaluate: [evaluateReply([true], "Nine facts about the sea.")],
    },
  },
  {
    name: "exhausted (step budget)",
    goal: "Get the tide table from the harbour site",
    maxSteps: 3,
    script: {
      plan: [planReply(["Fetch the table", "Report"], ["Reported"])],
      act: [failing, { text: "down" }, failing, { text: "down" }, failing, { text: "down" }],
      reflect: [reflectReply(false), reflectReply(false), reflectReply(false)],
      summary: [{ text: "Three failed fetches." }],
    },
  },
];

function toolHost(): ToolHost {
  return {
    async list() {
      return [
        {
          name: "search",
          description: "Search the web",
          parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
          source: "builtin",
        },
        {
          name: "fetch_page",
          description: "Fetch a page",
          parameters: {
            type: "object",
            properties: { url: { type: "string" } },
            required: ["url"],
          },
          source: "builtin",
        },
      ];
    },
    async call(name, args) {
      if (name === "fetch_page" && args.url === "https://down.example")
        return { ok: false, error: "connection refused" };
      return {
        ok: true,
        content: `${name} result for ${JSON.stringify(args)}: some text about tides and the sea.`,
      };
    },
  };
}

/** The scripted model, reporting the tokens of what it really got and gave. */
function countingModel(script: TaskScript, tokens: TokenCounter | null): ChatModel {
  const scripted = scriptTask(script);
  const respond = standInResponder(scripted);
  let sequence = 0;
  return {
    backend: "openai",
    async complete(request: ChatRequest) {
      const reply = respond({
        messages: request.messages.map((m) => ({
          role: m.role,
          content: "content" in m ? m.content : null,
        })),
      });
      const promptText =
        request.messages
          .map(
            (m) =>
              ("content" in m && m.content ? m.content : "") +
              ("toolCalls" in m && m.toolCalls ? JSON.stringify(m.toolCalls) : ""),
          )
          .join("\n") + (request.tools ? JSON.stringify(request.tools) : "");
      const replyText =
        "text" in reply ? reply.text : "toolCalls" in reply ? JSON.stringify(reply.toolCalls) : "";
      const usage = tokens
        ? { promptTokens: tokens.count(promptText), completionTokens: tokens.count(replyText) }
        : { promptTokens: 0, completionTokens: 0 };
      if ("status" in reply) throw new Error(`scripted status ${reply.status}`);
      if ("toolCalls" in reply) {
        return {
          model: request.model,
          text: null,
          toolCalls: reply.toolCalls.map((c) => ({
            id: `c${++sequence}`,
            name: c.name,
            arguments: JSON.stringify(c.arguments),
          })),
          usage,
          finishReason: "tool_calls",
        };
      }
      return { model: request.model, text: reply.text, toolCalls: [], usage, finishReason: "stop" };
    },
  };
}

function deps(model: ChatModel): TaskLoopDeps {
  return {
    model,
    models: { primary: "bench-model", fallbacks: [], small: "bench-small" },
    character: parseCharacter({ name: "Bench", bio: ["A benchmark agent."] }),
    tools: toolHost(),
    now: () => Date.now(),
    emit: () => {},
    signal: new AbortController().signal,
    toolTimeoutMs: 10_000,
    maxToolResultChars: 16_000,
    // The benchmark's character gates no tool, so nothing waits for an approval.
    approvalWindowMs: 10 * 60_000,
    newApprovalId: () => crypto.randomUUID().replaceAll("-", "").slice(0, 16),
    stepTimeoutMs: 60_000,
  };
}

function initial(goal: string, maxSteps?: number): TaskState {
  return newTaskState({
    taskId: "bench",
    agentId: "bench",
    roomId: "task:bench",
    goal,
    limits: { ...DEFAULT_TASK_LIMITS, maxSteps: maxSteps ?? DEFAULT_TASK_LIMITS.maxSteps },
    source: "api",
    now: Date.now(),
  });
}

/** Units of work a finished task took, from its event log: the plan, each act step, each summary, each check. */
function unitsFromEvents(text: string): number {
  const count = (type: string) => text.split(`event: ${type}\n`).length - 1;
  return 1 + count("step_finished") + count("summary") + count("evaluation");
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents tasks bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const tokens = await loadTokenCounter();

  // 1. Calls and tokens per scripted task.
  const rows = [];
  for (const scenario of SCENARIOS) {
    const final = await runTask(
      initial(scenario.goal, scenario.maxSteps),
      deps(countingModel(scenario.script, tokens)),
      () => {},
    );
    rows.push([
      scenario.name,
      final.status,
      final.steps.length,
      final.usage.modelCalls,
      final.usage.promptTokens,
      final.usage.completionTokens,
      final.usage.promptTokens + final.usage.completionTokens,
    ]);
  }
  console.log(
    "\n1. Model calls and tokens per task (scripted replies; tokens counted with o200k on what the loop sent and got):\n",
  );
  console.log(
    markdownTable(
      [
        "task",
        "status",
        "act steps",
        "model calls",
        "prompt tokens",
        "completion tokens",
        "total tokens",
      ],
      rows,
      0,
    ),
  );
  const completed = rows.filter((row) => row[1] === "completed");
  console.log(
    `\nCompleted tasks: median ${summarize(completed.map((r) => r[3] as number)).p50} model calls and ${summarize(completed.map((r) => r[6] as number)).p50} tokens per task.`,
  );

  // 2a. The loop alone, zero-latency model, persisting as JSON after every unit (as the object does).
  const coreRows = [];
  for (const scenario of SCENARIOS.slice(0, 2)) {
    const perUnit: number[] = [];
    let unitCount = 0;
    for (let i = 0; i < WARMUP + CORE_RUNS; i++) {
      let last = performance.now();
      const samples: number[] = [];
      await runTask(
        initial(scenario.goal),
        deps(countingModel(scenario.script, null)),
        ({ state, audit }) => {
          JSON.stringify(state);
          JSON.stringify(audit);
          const now = performance.now();
          samples.push(now - last);
          last = now;
        },
      );
      unitCount = samples.length;
      if (i >= WARMUP) perUnit.push(...samples);
    }
    const s = summarize(perUnit);
    coreRows.push([scenario.name, CORE_RUNS, unitCount, s.p50 * 1000, s.p95 * 1000, s.p99 * 1000]);
  }
  console.log(
    `\n2a. Runtime overhead per unit of work, the loop alone in Node (zero-latency model, ${CORE_RUNS} tasks each):\n`,
  );
  console.log(
    markdownTable(
      ["task", "tasks", "units/task", "p50 µs/unit", "p95 µs/unit", "p99 µs/unit"],
      coreRows,
      0,
    ),
  );

  // 2b. Through the worker: the AgentTasks object, SQLite after every unit, D1 spend, built-in tools.
  const model = await startModelServer();
  const worker = await startBenchWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
  });
  try {
    const created = await worker.call("POST", "/agents", {
      id: "tasks-bench",
      name: "Bench",
      bio: ["A benchmark agent."],
    });
    if (created.status !== 201)
      throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);
    const workerScript: TaskScript = {
      plan: [
        planReply(
          ["Check the time", "List the tools", "Write the note"],
          ["The note gives the time"],
        ),
      ],
      act: [
        { toolCalls: [{ name: "current_time", arguments: {} }] },
        { text: "It is noon." },
        { toolCalls: [{ name: "list_available_tools", arguments: {} }] },
        { text: "Four tools." },
        { text: "Noon; four tools." },
      ],
      reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
      summary: [{ text: "Time, tools, note." }],
      evaluate: [evaluateReply([true], "Noon; four tools.")],
    };
    const perUnit: number[] = [];
    const perTask: number[] = [];
    let unitCount = 0;
    for (let i = 0; i < WARMUP + WORKER_RUNS; i++) {
      model.respondWith(standInResponder(scriptTask(workerScript)));
      model.takeServiceTimes();
      const response = await worker.call("POST", "/agents/tasks-bench/tasks", {
        goal: "Tell me the time and how many tools you have",
      });
      const { taskId } = (await response.json()) as { taskId: string };
      let state: TaskState & { audit: unknown[] };
      for (;;) {
        state = (await (
          await worker.call("GET", `/agents/tasks-bench/tasks/${taskId}`)
        ).json()) as TaskState & { audit: unknown[] };
        if (["completed", "failed", "exhausted", "cancelled"].includes(state.status)) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      if (state.status !== "completed")
        throw new Error(`a bench task ended ${state.status}: ${state.report}`);
      const modelMs = model.takeServiceTimes().reduce((a, b) => a + b, 0);
      // The object's own clock, start to finish, without the model's (loopback) service time.
      const ms = state.finishedAt! - state.startedAt! - modelMs;
      unitCount = unitsFromEvents(
        await (await worker.call("GET", `/agents/tasks-bench/tasks/${taskId}/events`)).text(),
      );
      if (i >= WARMUP) {
        perTask.push(ms);
        perUnit.push(ms / unitCount);
      }
    }
    const u = summarize(perUnit);
    const t = summarize(perTask);
    console.log(
      `\n2b. Through the worker (local workerd), "3 steps with tools", ${WORKER_RUNS} tasks, ${unitCount} units each, model service time subtracted:\n`,
    );
    console.log(
      markdownTable(
        ["measure", "p50 ms", "p95 ms", "p99 ms"],
        [
          ["per unit of work", u.p50, u.p95, u.p99],
          ["per task", t.p50, t.p95, t.p99],
        ],
        2,
      ),
    );
    // 3. Parallel tasks and a delegation round trip (bench/tasks-together.ts).
    await benchTogether(worker, model);
  } finally {
    await worker.stop();
    await model.close();
  }
}

await main();
