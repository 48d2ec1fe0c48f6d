// Autonomous tasks through the worker: started over REST, run in the agent's AgentTasks Durable
// Object with the scripted model stand-in and the built-in tools; durable across eviction,
// cancellable, watched as server-sent events with Last-Event-ID replay, and fired by schedules.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentTasks } from "../../../src/durable-objects.ts";
import { api, createTestAgent, json, useModelStandIn } from "../../helpers/api.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  roleOf,
  scriptTask,
  standInResponder,
  type TaskScript,
} from "../../helpers/task-script.ts";

const model = useModelStandIn();

interface TaskBody {
  taskId: string;
  status: string;
  stopReason: string | null;
  plan: { steps: { title: string; status: string }[]; successCriteria: string[] } | null;
  steps: {
    step: number;
    title: string;
    outcome: string;
    countedAsFailure: boolean;
    failureAnalysis: string | null;
  }[];
  audit: {
    step: number;
    tool: string;
    arguments: unknown;
    result: string;
    ok: boolean;
    durationMs: number;
  }[];
  result: { text: string } | null;
  report: string | null;
  usage: { promptTokens: number; completionTokens: number; modelCalls: number };
}

function useScript(script: TaskScript) {
  const scripted = scriptTask(script);
  model.respondWith(standInResponder(scripted));
  return scripted;
}

async function start(agentId: string, body: Record<string, unknown>): Promise<string> {
  const response = await api("POST", `/agents/${agentId}/tasks`, { body });
  expect(response.status).toBe(202);
  const { taskId } = await json<{ taskId: string }>(response);
  expect(response.headers.get("location")).toBe(`/agents/${agentId}/tasks/${taskId}`);
  return taskId;
}

async function read(agentId: string, taskId: string): Promise<TaskBody> {
  const response = await api("GET", `/agents/${agentId}/tasks/${taskId}`);
  expect(response.status).toBe(200);
  return json<TaskBody>(response);
}

async function finished(agentId: string, taskId: string): Promise<TaskBody> {
  let task!: TaskBody;
  await vi.waitFor(
    async () => {
      task = await read(agentId, taskId);
      expect(["completed", "failed", "exhausted", "cancelled"]).toContain(task.status);
    },
    { timeout: 15_000, interval: 50 },
  );
  return task;
}

interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

async function readEvents(response: Response): Promise<SseEvent[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("id: "))
    .map((block) => {
      const fields = Object.fromEntries(
        block
          .split("\n")
          .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      return {
        id: Number(fields.id),
        event: String(fields.event),
        data: JSON.parse(String(fields.data)) as Record<string, unknown>,
      };
    });
}

const threeSteps: TaskScript = {
  plan: [
    planReply(
      ["Check the time", "List the tools", "Write the note"],
      ["The note gives the time and the tool count"],
    ),
  ],
  act: [
    { toolCalls: [{ name: "current_time", arguments: { timeZone: "Europe/Paris" } }] },
    { text: "It is noon in Paris." },
    { toolCalls: [{ name: "list_available_tools", arguments: {} }] },
    { text: "There are four tools." },
    { text: "Note: noon in Paris, four tools." },
  ],
  reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
  summary: [{ text: "Time checked, tools listed, note written." }],
  evaluate: [evaluateReply([true], "Noon in Paris; four tools.")],
};

async function taskObjectState(agentId: string): Promise<DurableObjectState> {
  let captured: DurableObjectState | undefined;
  await runInDurableObject(env.TASKS.getByName(agentId), (_instance, state) => {
    captured = state;
  });
  return captured!;
}

describe("tasks API", () => {
  it("completes a three-step task with tools and records every tool call in the audit trail", async () => {
    const agentId = await createTestAgent();
    useScript(threeSteps);
    const taskId = await start(agentId, {
      goal: "Tell me the time in Paris and how many tools you have",
      maxSteps: 6,
    });
    const task = await finished(agentId, taskId);
    expect(task.status).toBe("completed");
    expect(task.result?.text).toBe("Noon in Paris; four tools.");
    expect(task.plan?.steps.map((s) => [s.title, s.status])).toEqual([
      ["Check the time", "done"],
      ["List the tools", "done"],
      ["Write the note", "done"],
    ]);
    expect(task.steps.map((s) => s.outcome)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(task.audit.map((a) => [a.step, a.tool, a.ok])).toEqual([
      [1, "current_time", true],
      [2, "list_available_tools", true],
    ]);
    expect(task.audit[0]).toMatchObject({
      arguments: { timeZone: "Europe/Paris" },
      result: expect.stringContaining("GMT+1"),
      durationMs: expect.any(Number),
    });
    expect(task.audit[1]!.result).toContain("current_time");
    // The spec (on the small model), the plan, 5 agent rounds, 3 reflections, a summary, the check.
    expect(task.usage.modelCalls).toBe(12);
    const listed = await json<{
      tasks: { taskId: string; status: string; goal: string; source: string }[];
    }>(await api("GET", `/agents/${agentId}/tasks`));
    expect(listed.tasks).toEqual([
      expect.objectContaining({
        taskId,
        status: "completed",
        goal: "Tell me the time in Paris and how many tools you have",
        source: "api",
      }),
    ]);
    expect(model.calls.map((call) => call.model)).toEqual([
      "test-small",
      ...Array.from({ length: 11 }, () => "test-primary"),
    ]);
  });

  it("recovers from a failing tool with a different approach", async () => {
    const agentId = await createTestAgent();
    useScript({
      plan: [planReply(["Find the time"], ["The time is known"])],
      act: [
        { toolCalls: [{ name: "world_clock", arguments: { city: "Paris" } }] },
        { text: "The world clock tool does not exist." },
        { toolCalls: [{ name: "current_time", arguments: { timeZone: "Europe/Paris" } }] },
        { text: "It is noon in Paris." },
      ],
      reflect: [
        reflectReply(false, {
          failureAnalysis: "there is no world_clock tool",
          nextApproach: "use current_time with a time zone",
        }),
        reflectReply(true),
      ],
      evaluate: [evaluateReply([true], "Noon in Paris.")],
    });
    const task = await finished(
      agentId,
      await start(agentId, { goal: "What time is it in Paris?" }),
    );
    expect(task.status).toBe("completed");
    expect(task.steps.map((s) => [s.outcome, s.countedAsFailure, s.failureAnalysis])).toEqual([
      ["failed", false, "there is no world_clock tool"],
      ["succeeded", false, null],
    ]);
    expect(task.audit.map((a) => [a.tool, a.ok])).toEqual([
      ["world_clock", false],
      ["current_time", true],
    ]);
    expect(task.audit[0]!.result).toContain('unknown tool "world_clock"');
    const retry = model.calls.find((call) =>
      JSON.stringify(call.messages).includes("Take a different approach"),
    );
    expect(JSON.stringify(retry?.messages)).toContain("use current_time with a time zone");
  });

  it("stops at its step budget with an honest report", async () => {
    const agentId = await createTestAgent();
    const failing = { toolCalls: [{ name: "world_clock", arguments: {} }] };
    useScript({
      plan: [planReply(["Find the time", "Write it down"], ["The time is written down"])],
      act: [failing, { text: "No clock." }, failing, { text: "Still no clock." }],
      reflect: [
        reflectReply(false, { failureAnalysis: "no such tool" }),
        reflectReply(false, { failureAnalysis: "no such tool, again" }),
      ],
    });
    const task = await finished(
      agentId,
      await start(agentId, { goal: "Write down the time", maxSteps: 2 }),
    );
    expect(task.status).toBe("exhausted");
    expect(task.stopReason).toBe("max_steps");
    expect(task.result).toBeNull();
    expect(task.report).toBe(
      [
        "Stopped: all 2 steps are used.",
        "Done (0 of 2 plan steps):",
        "- nothing",
        "Failed:",
        "- step 1, Find the time: no such tool",
        "- step 2, Find the time: no such tool, again",
        "Not done:",
        "- Find the time",
        "- Write it down",
      ].join("\n"),
    );
  });

  it("re-asks an invalid plan instead of trusting it", async () => {
    const agentId = await createTestAgent();
    useScript({
      plan: [{ text: '{"steps":"search, then answer"}' }, planReply(["Answer"], ["Answered"])],
      act: [{ text: "Answered." }],
      reflect: [reflectReply(true)],
      evaluate: [evaluateReply([true], "Answered.")],
    });
    const task = await finished(agentId, await start(agentId, { goal: "Answer" }));
    expect(task.status).toBe("completed");
    expect(task.plan?.steps.map((s) => s.title)).toEqual(["Answer"]);
    // Call 0 compiled the spec; 1 was the invalid plan; 2 re-asked it.
    const reask = model.calls[2]!.messages.at(-1) as { content: string };
    expect(reask.content).toContain("That reply is invalid (steps: ");
  });

  it("refuses bad input and unknown tasks", async () => {
    const agentId = await createTestAgent();
    const empty = await api("POST", `/agents/${agentId}/tasks`, { body: { goal: "  " } });
    expect(empty.status).toBe(400);
    expect(await json(empty)).toMatchObject({ error: { code: "validation" } });
    expect(
      (await api("POST", `/agents/${agentId}/tasks`, { body: { goal: "x", maxSteps: 0 } })).status,
    ).toBe(400);
    expect(
      (await api("POST", `/agents/${agentId}/tasks`, { body: { goal: "x", extra: 1 } })).status,
    ).toBe(400);
    expect((await api("POST", "/agents/nobody-here/tasks", { body: { goal: "x" } })).status).toBe(
      404,
    );
    const unknown = crypto.randomUUID();
    expect((await api("GET", `/agents/${agentId}/tasks/${unknown}`)).status).toBe(404);
    expect((await api("GET", `/agents/${agentId}/tasks/${unknown}/events`)).status).toBe(404);
    expect((await api("DELETE", `/agents/${agentId}/tasks/${unknown}`)).status).toBe(404);
    expect((await api("GET", `/agents/${agentId}/tasks/not-a-uuid`)).status).toBe(400);
  });

  it("counts a task's tokens against the agent's daily ceiling, and refuses the next task once it is spent", async () => {
    const agentId = await createTestAgent({ settings: { dailyTokens: 500 } });
    useScript({
      plan: [planReply(["Answer"], ["Answered"])],
      act: [{ text: "Answered." }],
      reflect: [reflectReply(true)],
      evaluate: [evaluateReply([true], "Answered.")],
    });
    const first = await finished(agentId, await start(agentId, { goal: "Answer" }));
    expect(first.status).toBe("completed");
    const spentByTask = first.usage.promptTokens + first.usage.completionTokens;
    expect(spentByTask).toBeGreaterThan(500);
    await vi.waitFor(async () => {
      const row = await env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
        .bind(agentId)
        .first<{ tokens: number }>();
      expect(row?.tokens).toBe(spentByTask);
    });
    const calls = model.calls.length;
    const refused = await finished(agentId, await start(agentId, { goal: "Answer again" }));
    expect(refused).toMatchObject({
      status: "failed",
      stopReason: "error",
      error: { code: "rate_limited" },
    });
    expect(refused.report).toContain("daily model budget");
    expect(model.calls.length).toBe(calls);
  });

  it("cancels a running task: the step stops and the task ends cancelled with its report", async () => {
    const agentId = await createTestAgent();
    const scripted = scriptTask({ plan: [planReply(["Wait for something"], ["It came"])] });
    const respond = standInResponder(scripted);
    model.respondWith((call) => {
      const reply = respond(call);
      // The step's first model call never answers.
      return scripted.asked.at(-1) === "act" ? { hang: true } : reply;
    });
    const taskId = await start(agentId, { goal: "Wait" });
    await model.waitForHang();
    const cancelled = await api("DELETE", `/agents/${agentId}/tasks/${taskId}`);
    expect(cancelled.status).toBe(200);
    const body = await json<TaskBody>(cancelled);
    expect(body.status).toBe("cancelled");
    expect(body.report).toContain("Stopped: the task was cancelled.");
    expect(model.hangingCount).toBe(0);
    // Cancelling again changes nothing.
    expect(await json(await api("DELETE", `/agents/${agentId}/tasks/${taskId}`))).toMatchObject({
      status: "cancelled",
    });
  });
});

describe("task durability", () => {
  it("resumes after eviction mid-task without repeating completed steps", async () => {
    const agentId = await createTestAgent();
    const state = await taskObjectState(agentId);
    const scripted = scriptTask(threeSteps);
    const respond = standInResponder(scripted);
    let evicted = false;
    model.respondWith((call) => {
      // Cut the object off in the middle of step 2's first model call.
      if (!evicted && JSON.stringify(call.messages).includes("Now do step 2")) {
        evicted = true;
        state.abort("simulated eviction mid-task");
        return { hang: true };
      }
      return respond(call);
    });
    const taskId = await start(agentId, {
      goal: "Tell me the time in Paris and how many tools you have",
    });
    await vi.waitFor(() => expect(evicted).toBe(true), { timeout: 10_000 });
    // The pending queue item's alarm wakes the object; the stored state says where the task was.
    await vi.waitFor(
      async () => expect(await runDurableObjectAlarm(env.TASKS.getByName(agentId))).toBe(true),
      { timeout: 10_000 },
    );
    const task = await finished(agentId, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.map((s) => s.step)).toEqual([1, 2, 3]);
    // Step 1's tool call and the plan ran once; step 2 was redone from its start.
    expect(task.audit.filter((a) => a.tool === "current_time")).toHaveLength(1);
    expect(scripted.asked.filter((role) => role === "plan")).toHaveLength(1);
    expect(
      model.calls.filter((call) => JSON.stringify(call.messages).includes("Now do step 1")),
    ).toHaveLength(2);
    expect(
      model.calls.filter(
        (call) =>
          JSON.stringify(call.messages).includes("Now do step 2") &&
          !JSON.stringify(call.messages).includes('"tool"'),
      ),
    ).toHaveLength(2);
  });
});

describe("task events", () => {
  it("streams progress as server-sent events and replays after Last-Event-ID", async () => {
    const agentId = await createTestAgent();
    useScript(threeSteps);
    const taskId = await start(agentId, {
      goal: "Tell me the time in Paris and how many tools you have",
    });
    // Opened while the task runs: the stream ends after `done`.
    const live = await api("GET", `/agents/${agentId}/tasks/${taskId}/events`);
    expect(live.status).toBe(200);
    expect(live.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await readEvents(live);
    expect(events.map((e) => e.event)).toEqual([
      "task_started",
      "spec",
      "plan",
      "step_started",
      "tool_called",
      "step_finished",
      "reflection",
      "step_started",
      "tool_called",
      "step_finished",
      "reflection",
      "step_started",
      "step_finished",
      "reflection",
      "summary",
      "evaluation",
      "done",
    ]);
    const ids = events.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(events[4]!.data).toMatchObject({
      taskId,
      type: "tool_called",
      tool: "current_time",
      ok: true,
      step: 1,
    });
    expect(events.at(-1)!.data).toMatchObject({
      type: "done",
      status: "completed",
      result: "Noon in Paris; four tools.",
    });

    // A reconnecting client gets exactly the events after the last one it saw.
    const replay = await readEvents(
      await api("GET", `/agents/${agentId}/tasks/${taskId}/events`, {
        headers: { "last-event-id": String(ids[9]) },
      }),
    );
    expect(replay.map((e) => e.id)).toEqual(ids.slice(10));
    expect(
      (
        await api("GET", `/agents/${agentId}/tasks/${taskId}/events`, {
          headers: { "last-event-id": "abc" },
        })
      ).status,
    ).toBe(400);
  });
});

describe("schedules", () => {
  // Local alarms also fire on their own: every run is answered the same way, whichever fires it.
  function answerEveryRun(result: string) {
    model.respondWith((call) => {
      const first = call.messages[0];
      const role = roleOf(
        first?.role === "system" && typeof first.content === "string" ? first.content : "",
      );
      if (role === "plan") return planReply(["Say hello"], ["Hello said"]);
      if (role === "reflect") return reflectReply(true);
      if (role === "evaluate") return evaluateReply([true], result);
      return { text: "Hello!" };
    });
  }

  async function schedules(agentId: string): Promise<
    {
      scheduleId: string;
      runs: number;
      skipped: number;
      lastTaskId: string | null;
      lastStatus: string | null;
    }[]
  > {
    const response = await api("GET", `/agents/${agentId}/schedules`);
    expect(response.status).toBe(200);
    return (
      await json<{
        schedules: {
          scheduleId: string;
          runs: number;
          skipped: number;
          lastTaskId: string | null;
          lastStatus: string | null;
        }[];
      }>(response)
    ).schedules;
  }

  it("fires a schedule twice through the alarm, each run a task, and lists its runs", async () => {
    const agentId = await createTestAgent();
    answerEveryRun("Said hello.");
    const created = await api("POST", `/agents/${agentId}/schedules`, {
      body: { everySeconds: 1, goal: "Say hello" },
    });
    expect(created.status).toBe(201);
    const schedule = await json<{ scheduleId: string; kind: string; runs: number }>(created);
    expect(schedule).toMatchObject({ kind: "every", runs: 0 });

    const tasks = new Set<string>();
    for (let run = 1; run <= 2; run++) {
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await runDurableObjectAlarm(env.TASKS.getByName(agentId));
      const [listed] = await schedules(agentId);
      expect(listed!.runs).toBeGreaterThanOrEqual(run);
      const done = await finished(agentId, listed!.lastTaskId!);
      expect(done).toMatchObject({
        status: "completed",
        source: "schedule",
        scheduleId: schedule.scheduleId,
        goal: "Say hello",
        result: { text: "Said hello." },
      });
      tasks.add(listed!.lastTaskId!);
    }
    expect(tasks.size).toBe(2);
    expect((await schedules(agentId))[0]).toMatchObject({ lastStatus: "completed" });

    expect(
      (await api("DELETE", `/agents/${agentId}/schedules/${schedule.scheduleId}`)).status,
    ).toBe(204);
    expect(await schedules(agentId)).toEqual([]);
    expect(
      (await api("DELETE", `/agents/${agentId}/schedules/${schedule.scheduleId}`)).status,
    ).toBe(404);
  });

  it("does not start a run while the previous one is unfinished, and a failed run does not stop the schedule", async () => {
    const agentId = await createTestAgent();
    // The first run's first model call takes 2.5 s and is then refused: the run fails.
    const refusal = {
      status: 400,
      body: { error: { message: "bad request", type: "invalid_request_error" } },
      delayMs: 2_500,
    };
    let slowCalls = 0;
    model.respondWith(() => (++slowCalls === 1 ? refusal : { text: "not reached" }));
    const created = await json<{ scheduleId: string }>(
      await api("POST", `/agents/${agentId}/schedules`, {
        body: { everySeconds: 1, goal: "Slow work" },
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await runDurableObjectAlarm(env.TASKS.getByName(agentId));
    await vi.waitFor(() => expect(slowCalls).toBe(1));
    const [first] = await schedules(agentId);
    // Later firings find the first run unfinished: skipped, not started.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await runDurableObjectAlarm(env.TASKS.getByName(agentId));
    const [during] = await schedules(agentId);
    expect(during).toMatchObject({ runs: 1, lastTaskId: first!.lastTaskId });
    expect(during!.skipped).toBeGreaterThanOrEqual(1);

    // The run fails (the model refused the request); the schedule goes on with a new run.
    const failed = await finished(agentId, first!.lastTaskId!);
    expect(failed).toMatchObject({
      status: "failed",
      stopReason: "error",
      error: { code: "model" },
    });
    expect(slowCalls).toBe(1);
    answerEveryRun("Worked this time.");
    await vi.waitFor(
      async () => {
        await runDurableObjectAlarm(env.TASKS.getByName(agentId));
        const [now] = await schedules(agentId);
        expect(now!.runs).toBeGreaterThanOrEqual(2);
        expect(now!.lastStatus).toBe("completed");
      },
      { timeout: 10_000, interval: 300 },
    );
    await api("DELETE", `/agents/${agentId}/schedules/${created.scheduleId}`);
  });

  it("stops an agent's schedules and cancels its unfinished tasks when the agent is deleted", async () => {
    const agentId = await createTestAgent();
    model.respondWith(() => ({ hang: true }));
    const taskId = await start(agentId, { goal: "Wait forever" });
    await model.waitForHang();
    expect(
      (
        await api("POST", `/agents/${agentId}/schedules`, {
          body: { cron: "0 9 * * 1", goal: "Weekly" },
        })
      ).status,
    ).toBe(201);
    expect((await api("DELETE", `/agents/${agentId}`)).status).toBe(204);
    const left = await runInDurableObject(
      env.TASKS.getByName(agentId),
      async (instance: AgentTasks) => ({
        schedules: await instance.taskSchedules(),
        task: (await instance.getTask(taskId))?.state.status,
        sdkSchedules: (await instance.listSchedules()).length,
      }),
    );
    expect(left).toEqual({ schedules: [], task: "cancelled", sdkSchedules: 0 });
  });

  it("refuses invalid schedules", async () => {
    const agentId = await createTestAgent();
    const both = await api("POST", `/agents/${agentId}/schedules`, {
      body: { goal: "x", everySeconds: 60, cron: "0 * * * *" },
    });
    expect(both.status).toBe(400);
    expect(await json(both)).toMatchObject({
      error: {
        code: "validation",
        message: expect.stringContaining("exactly one of cron, at or everySeconds"),
      },
    });
    expect(
      (
        await api("POST", `/agents/${agentId}/schedules`, {
          body: { goal: "x", at: "2001-01-01T00:00:00Z" },
        })
      ).status,
    ).toBe(400);
    const badCron = await api("POST", `/agents/${agentId}/schedules`, {
      body: { goal: "x", cron: "99 99 * * * *" },
    });
    expect(badCron.status).toBe(400);
    expect(await json(await api("GET", `/agents/${agentId}/schedules`))).toEqual({ schedules: [] });
  });
});
