// Parallel tasks and the compiled spec through the worker: an agent runs up to
// `settings.tasks.concurrency` tasks at once and queues the rest in order (at most 50 waiting,
// then 429); a schedule firing held back only by the limit waits in the queue; a task whose spec
// lacks a required input pauses as `needs_input`, resumes with the answer given over REST, and
// ends cancelled when nobody answers. The scripted model stand-in answers each task by its goal.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentTasks } from "../../../src/durable-objects.ts";
import { api, createTestAgent, json, useModelStandIn } from "../../helpers/api.ts";
import {
  goalOf,
  oneStepScript,
  perGoalResponder,
  roleOf,
  scriptTask,
  specReply,
  standInResponder,
} from "../../helpers/task-script.ts";
import type { StandInCall, StandInStep } from "../../stand-ins/openai-stand-in.ts";

const model = useModelStandIn();

interface TaskBody {
  taskId: string;
  status: string;
  source: string;
  stopReason: string | null;
  report: string | null;
  result: { text: string } | null;
  spec: {
    goal: string;
    inputs: { provided: string[]; missing: { input: string; question: string }[] };
  } | null;
  input: { question: string; expiresAt: number } | null;
  startedAt: number | null;
  finishedAt: number | null;
}

async function start(agentId: string, goal: string): Promise<string> {
  const response = await api("POST", `/agents/${agentId}/tasks`, { body: { goal } });
  expect(response.status).toBe(202);
  return (await json<{ taskId: string }>(response)).taskId;
}

async function read(agentId: string, taskId: string): Promise<TaskBody> {
  const response = await api("GET", `/agents/${agentId}/tasks/${taskId}`);
  expect(response.status).toBe(200);
  return json<TaskBody>(response);
}

async function waitForStatus(agentId: string, taskId: string, statuses: string[]) {
  let task!: TaskBody;
  await vi.waitFor(
    async () => {
      task = await read(agentId, taskId);
      expect(statuses).toContain(task.status);
    },
    { timeout: 15_000, interval: 50 },
  );
  return task;
}

const roleOfCall = (call: StandInCall) => {
  const first = call.messages[0];
  return roleOf(first?.role === "system" && typeof first.content === "string" ? first.content : "");
};

/** Holds every task's act call until `open()`; records when each task's act call arrived. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const arrived: string[] = [];
  return {
    arrived,
    open,
    /** Wraps a responder: act calls of the goals held wait for the gate. */
    hold(goals: string[], respond: (call: StandInCall) => StandInStep) {
      return async (call: StandInCall): Promise<StandInStep> => {
        const goal = goalOf(call);
        if (roleOfCall(call) === "act") {
          arrived.push(goal);
          if (goals.includes(goal)) await opened;
        }
        return respond(call);
      };
    },
  };
}

describe("parallel tasks", () => {
  it("runs two tasks at once with interleaved steps and queues the third until a slot frees", async () => {
    const agentId = await createTestAgent();
    const goals = ["Count the apples", "Count the pears", "Count the plums"];
    const scripts = Object.fromEntries(
      goals.map((goal, i) => [goal, scriptTask(oneStepScript(`${i + 3} of them.`))]),
    );
    const held = gate();
    model.respondWith(held.hold(goals.slice(0, 2), perGoalResponder(scripts)));
    const [apples, pears, plums] = [
      await start(agentId, goals[0]!),
      await start(agentId, goals[1]!),
      await start(agentId, goals[2]!),
    ];
    // Both first tasks are in their act step at the same time; the third has not started.
    await vi.waitFor(() => expect(held.arrived).toHaveLength(2), { timeout: 10_000 });
    expect(new Set(held.arrived)).toEqual(new Set(goals.slice(0, 2)));
    expect(await read(agentId, apples!)).toMatchObject({ status: "running" });
    expect(await read(agentId, pears!)).toMatchObject({ status: "running" });
    expect(await read(agentId, plums!)).toMatchObject({ status: "queued", startedAt: null });

    held.open();
    const done = await Promise.all(
      [apples!, pears!, plums!].map((taskId) =>
        waitForStatus(agentId, taskId, ["completed", "failed", "exhausted", "cancelled"]),
      ),
    );
    expect(done.map((task) => [task.status, task.result?.text])).toEqual([
      ["completed", "3 of them."],
      ["completed", "4 of them."],
      ["completed", "5 of them."],
    ]);
    // The third started only once one of the first two had finished.
    const firstFinished = Math.min(done[0]!.finishedAt!, done[1]!.finishedAt!);
    expect(done[2]!.startedAt!).toBeGreaterThanOrEqual(firstFinished);
    expect(held.arrived.at(-1)).toBe(goals[2]);
  });

  it("cancels one of two running tasks without disturbing the other", async () => {
    const agentId = await createTestAgent();
    const goals = ["Wait for the bus", "Wait for the train"];
    const respond = perGoalResponder(
      Object.fromEntries(
        goals.map((goal) => [goal, scriptTask(oneStepScript(`${goal}: arrived.`))]),
      ),
    );
    // The bus's act call hangs (aborted by its cancel); the train's waits for the gate.
    const held = gate();
    model.respondWith(
      held.hold([goals[1]!], (call) =>
        roleOfCall(call) === "act" && goalOf(call) === goals[0] ? { hang: true } : respond(call),
      ),
    );
    const bus = await start(agentId, goals[0]!);
    const train = await start(agentId, goals[1]!);
    await vi.waitFor(() => expect(held.arrived).toHaveLength(2), { timeout: 10_000 });
    await model.waitForHang();
    const cancelled = await api("DELETE", `/agents/${agentId}/tasks/${bus}`);
    expect(await json(cancelled)).toMatchObject({ status: "cancelled" });
    expect(model.hangingCount).toBe(0);
    held.open();
    expect(await waitForStatus(agentId, train, ["completed", "failed"])).toMatchObject({
      status: "completed",
      result: { text: "Wait for the train: arrived." },
    });
    expect(await read(agentId, bus)).toMatchObject({ status: "cancelled" });
  });

  it("holds the daily ceiling across concurrent tasks: one started while another runs sees its spend", async () => {
    const agentId = await createTestAgent({
      settings: { memory: { factsEvery: 1000 }, dailyTokens: 300 },
    });
    const goals = ["Spend a lot", "Spend some more"];
    const respond = perGoalResponder(
      Object.fromEntries(goals.map((goal) => [goal, scriptTask(oneStepScript(`${goal}: done.`))])),
    );
    const held = gate();
    // Every call reports 200 tokens: the first task's spec and plan spend 400 before it acts.
    model.respondWith(
      held.hold([goals[0]!], (call) => ({
        ...respond(call),
        usage: { promptTokens: 150, completionTokens: 50 },
      })),
    );
    const first = await start(agentId, goals[0]!);
    await vi.waitFor(() => expect(held.arrived).toEqual([goals[0]]), { timeout: 10_000 });
    const second = await waitForStatus(agentId, await start(agentId, goals[1]!), [
      "completed",
      "failed",
    ]);
    expect(second).toMatchObject({ status: "failed", stopReason: "error" });
    expect(second.report).toContain("daily model budget");
    expect(held.arrived).toEqual([goals[0]]);
    held.open();
    // The task admitted earlier finishes its work (a started task is not cut off mid-way).
    expect(await waitForStatus(agentId, first, ["completed", "failed"])).toMatchObject({
      status: "completed",
    });
  });

  it("refuses a task with 429 once 50 are waiting, and takes it again when there is room", async () => {
    const agentId = await createTestAgent({
      settings: { memory: { factsEvery: 1000 }, tasks: { concurrency: 1 } },
    });
    model.respondWith(() => ({ hang: true }));
    const running = await start(agentId, "Task 0");
    await waitForStatus(agentId, running, ["running"]);
    const queued: string[] = [];
    for (let i = 1; i <= 50; i++) queued.push(await start(agentId, `Task ${i}`));
    expect(await read(agentId, queued[49]!)).toMatchObject({ status: "queued" });
    const refused = await api("POST", `/agents/${agentId}/tasks`, { body: { goal: "Task 51" } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(await json(refused)).toMatchObject({
      error: { code: "rate_limited", message: expect.stringContaining("50 tasks waiting") },
    });
    // A queued task cancelled makes room for one more.
    await api("DELETE", `/agents/${agentId}/tasks/${queued[0]}`);
    await start(agentId, "Task 51");
    // Clean up: the agent's deletion cancels them all.
    expect((await api("DELETE", `/agents/${agentId}`)).status).toBe(204);
    expect(
      await runInDurableObject(
        env.TASKS.getByName(agentId),
        async (instance: AgentTasks) => (await instance.getTask(running))?.state.status,
      ),
    ).toBe("cancelled");
  });

  it("queues a schedule's firing while two tasks hold the slots, instead of skipping it", async () => {
    const agentId = await createTestAgent();
    const goals = ["Sort the mail", "Water the plants", "Say good morning"];
    const scripts = Object.fromEntries(
      goals.map((goal) => [goal, scriptTask(oneStepScript(`${goal}: done.`))]),
    );
    const held = gate();
    model.respondWith(held.hold(goals.slice(0, 2), perGoalResponder(scripts)));
    await start(agentId, goals[0]!);
    await start(agentId, goals[1]!);
    await vi.waitFor(() => expect(held.arrived).toHaveLength(2), { timeout: 10_000 });

    const created = await api("POST", `/agents/${agentId}/schedules`, {
      body: { at: new Date(Date.now() + 1_000).toISOString(), goal: goals[2] },
    });
    expect(created.status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    let schedule!: { runs: number; skipped: number; lastTaskId: string | null };
    await vi.waitFor(
      async () => {
        await runDurableObjectAlarm(env.TASKS.getByName(agentId));
        const listed = await json<{ schedules: (typeof schedule)[] }>(
          await api("GET", `/agents/${agentId}/schedules`),
        );
        schedule = listed.schedules[0] ?? { runs: 0, skipped: 0, lastTaskId: null };
        expect(schedule.runs).toBe(1);
      },
      { timeout: 10_000, interval: 200 },
    );
    expect(schedule.skipped).toBe(0);
    expect(await read(agentId, schedule.lastTaskId!)).toMatchObject({
      status: "queued",
      source: "schedule",
    });
    held.open();
    expect(
      await waitForStatus(agentId, schedule.lastTaskId!, ["completed", "failed"]),
    ).toMatchObject({ status: "completed", result: { text: "Say good morning: done." } });
  });
});

/** A task whose compiled spec lacks the city, which it cannot do without. */
function needsCityScript(goal: string) {
  return scriptTask({
    spec: [
      specReply(goal, {
        missing: [
          { input: "city", question: "Which city should the forecast be for?", required: true },
        ],
      }),
    ],
    ...oneStepScript("Sunny in Lyon."),
  });
}

describe("needs_input", () => {
  it("pauses a task that lacks a required input, and resumes it with the answer given over REST", async () => {
    const agentId = await createTestAgent();
    const goal = "Give me tomorrow's forecast";
    const scripted = needsCityScript(goal);
    model.respondWith(standInResponder(scripted));
    const taskId = await start(agentId, goal);
    const paused = await waitForStatus(agentId, taskId, ["needs_input"]);
    expect(paused.input).toMatchObject({ question: "Which city should the forecast be for?" });
    expect(paused.input!.expiresAt - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect(paused.spec?.inputs.missing.map((m) => m.input)).toEqual(["city"]);
    // Nothing is planned while it waits.
    expect(scripted.asked).toEqual(["spec"]);

    const answered = await api("POST", `/agents/${agentId}/tasks/${taskId}/input`, {
      body: { text: "Lyon" },
    });
    expect(answered.status).toBe(200);
    const done = await waitForStatus(agentId, taskId, ["completed", "failed", "exhausted"]);
    expect(done).toMatchObject({ status: "completed", result: { text: "Sunny in Lyon." } });
    expect(done.spec?.inputs.missing).toEqual([]);
    expect(JSON.stringify(done.spec?.inputs.provided)).toContain("Lyon");
    // The planner saw the answer in the spec.
    const planCall = model.calls.find((call) => roleOfCall(call) === "plan");
    expect(JSON.stringify(planCall?.messages)).toContain("Lyon");

    // Answered once: a second answer is a conflict.
    const again = await api("POST", `/agents/${agentId}/tasks/${taskId}/input`, {
      body: { text: "Paris" },
    });
    expect(again.status).toBe(409);
    const events = await (await api("GET", `/agents/${agentId}/tasks/${taskId}/events`)).text();
    expect(events).toContain("event: input_requested");
    expect(events).toContain("event: input_received");
  });

  it("ends a task cancelled with its report when nobody answers within 24 hours", async () => {
    const agentId = await createTestAgent();
    const goal = "Give me the weekend forecast";
    model.respondWith(standInResponder(needsCityScript(goal)));
    const taskId = await start(agentId, goal);
    await waitForStatus(agentId, taskId, ["needs_input"]);
    const tasks = env.TASKS.getByName(agentId);
    const schedule = await runInDurableObject(tasks, (instance: AgentTasks) =>
      instance
        .getSchedules<{ taskId: string; inputId: string }>()
        .find((s) => s.callback === "expireTaskInput"),
    );
    expect(schedule?.payload.taskId).toBe(taskId);
    expect(schedule!.time * 1000 - Date.now()).toBeGreaterThan(23 * 3_600_000);
    // What the scheduler does when the time comes.
    await runInDurableObject(tasks, (instance: AgentTasks) =>
      instance.expireTaskInput(schedule!.payload),
    );
    const done = await read(agentId, taskId);
    expect(done).toMatchObject({ status: "cancelled", input: null });
    expect(done.report).toContain("nobody answered its question within 24 hours");
    expect(
      (await api("POST", `/agents/${agentId}/tasks/${taskId}/input`, { body: { text: "Lyon" } }))
        .status,
    ).toBe(409);
  });
});
