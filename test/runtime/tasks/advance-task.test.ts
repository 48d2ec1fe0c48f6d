// The task loop on its own (pure runtime, scripted model, in-memory tools): plan, act, reflect,
// retry differently on failure, stop honestly at a bound, re-ask invalid output, resume from a
// persisted state without redoing finished steps.
import { describe, expect, it } from "vitest";
import { ModelCallError } from "../../../src/runtime/util/errors.ts";
import { FAILOVER_NOTE } from "../../../src/runtime/turn/model-session.ts";
import {
  advanceTask,
  answerApproval,
  runTask,
  type TaskLoopDeps,
} from "../../../src/runtime/tasks/advance-task.ts";
import { TASK_SWITCH_NOTE } from "../../../src/runtime/tasks/act-step.ts";
import {
  DEFAULT_TASK_LIMITS,
  newTaskState,
  type AuditEntry,
  type TaskEventBody,
  type TaskLimits,
  type TaskState,
} from "../../../src/runtime/tasks/task-types.ts";
import type { ChatModel } from "../../../src/runtime/ports/model.ts";
import type { ToolHost } from "../../../src/runtime/ports/tools.ts";
import { character, tickingClock } from "../../helpers/fakes.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  taskChatModel,
  type TaskScript,
} from "../../helpers/task-script.ts";

function toolHost(calls: string[]): ToolHost {
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
      calls.push(`${name}:${JSON.stringify(args)}`);
      if (name === "fetch_page" && args.url === "https://down.example")
        return { ok: false, error: "connection refused" };
      return { ok: true, content: `${name} result for ${JSON.stringify(args)}` };
    },
  };
}

interface Harness {
  deps: TaskLoopDeps;
  events: TaskEventBody[];
  audit: AuditEntry[];
  toolCalls: string[];
  model: ReturnType<typeof taskChatModel>;
  controller: AbortController;
}

function harness(
  script: TaskScript,
  options: { model?: ChatModel & { requests: unknown[] }; fallbacks?: string[] } = {},
): Harness & { script: ReturnType<typeof scriptTask> } {
  const scripted = scriptTask(script);
  const model =
    (options.model as ReturnType<typeof taskChatModel> | undefined) ?? taskChatModel(scripted);
  const events: TaskEventBody[] = [];
  const toolCalls: string[] = [];
  const controller = new AbortController();
  const clock = tickingClock();
  return {
    script: scripted,
    events,
    audit: [],
    toolCalls,
    model,
    controller,
    deps: {
      model,
      models: { primary: "main", fallbacks: options.fallbacks ?? [], small: "small" },
      character: character(),
      tools: toolHost(toolCalls),
      now: () => clock.now(),
      emit: (event) => events.push(event),
      signal: controller.signal,
      toolTimeoutMs: 1_000,
      maxToolResultChars: 4_000,
      stepTimeoutMs: 10_000,
      approvalWindowMs: 600_000,
      newApprovalId: () => "0123456789abcdef",
    },
  };
}

function task(limits: Partial<TaskLimits> = {}): TaskState {
  return newTaskState({
    taskId: "t1",
    agentId: "nova",
    roomId: "task:t1",
    goal: "Write a short report on tides",
    limits: { ...DEFAULT_TASK_LIMITS, ...limits },
    source: "api",
    now: 0,
  });
}

async function run(
  h: Harness,
  state: TaskState,
): Promise<{ final: TaskState; saved: TaskState[] }> {
  const saved: TaskState[] = [];
  const final = await runTask(state, h.deps, ({ state: next, audit }) => {
    saved.push(next);
    h.audit.push(...audit);
  });
  return { final, saved };
}

describe("task loop", () => {
  it("completes a three-step task with tools, checked against the plan's criteria", async () => {
    const h = harness({
      plan: [
        planReply(
          ["Search for tide facts", "Read the best source", "Write the report"],
          ["The report names the cause of tides"],
        ),
      ],
      act: [
        { toolCalls: [{ name: "search", arguments: { q: "tides" } }] },
        { text: "Found three sources." },
        { toolCalls: [{ name: "fetch_page", arguments: { url: "https://tides.example" } }] },
        { text: "The moon's gravity causes tides." },
        { text: "Report: tides are caused by the moon's gravity." },
      ],
      reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
      summary: [{ text: "Searched, read a source, wrote the report." }],
      evaluate: [evaluateReply([true], "Tides are caused by the moon's gravity.")],
    });
    const { final } = await run(h, task());
    expect(final.status).toBe("completed");
    expect(final.result).toMatchObject({
      text: "Tides are caused by the moon's gravity.",
      criteria: [{ criterion: "The report names the cause of tides", met: true }],
    });
    expect(final.steps.map((s) => [s.title, s.outcome])).toEqual([
      ["Search for tide facts", "succeeded"],
      ["Read the best source", "succeeded"],
      ["Write the report", "succeeded"],
    ]);
    expect(final.plan!.steps.every((s) => s.status === "done")).toBe(true);
    expect(h.toolCalls).toEqual([
      'search:{"q":"tides"}',
      'fetch_page:{"url":"https://tides.example"}',
    ]);
    expect(h.audit.map((a) => [a.step, a.tool, a.ok])).toEqual([
      [1, "search", true],
      [2, "fetch_page", true],
    ]);
    expect(h.audit[0]).toMatchObject({
      arguments: { q: "tides" },
      result: expect.stringContaining("search result"),
    });
    expect(h.events.map((e) => e.type)).toEqual([
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
    // Every model call is counted: spec, plan, 5 agent rounds, 3 reflections, a summary, the check.
    expect(final.usage.modelCalls).toBe(12);
    expect(final.usage.promptTokens).toBe(1_200);
  });

  it("analyses a failing tool, tries a different approach, and succeeds without counting a failure", async () => {
    const h = harness({
      plan: [planReply(["Fetch the tide table"], ["The table is fetched"])],
      act: [
        { toolCalls: [{ name: "fetch_page", arguments: { url: "https://down.example" } }] },
        { text: "The page would not load." },
        { toolCalls: [{ name: "search", arguments: { q: "tide table mirror" } }] },
        { text: "Got the table from a mirror." },
      ],
      reflect: [
        reflectReply(false, {
          failureAnalysis: "the site refuses connections",
          nextApproach: "search for a mirror of the table",
        }),
        reflectReply(true),
      ],
      evaluate: [evaluateReply([true])],
    });
    const { final } = await run(h, task());
    expect(final.status).toBe("completed");
    expect(final.steps.map((s) => [s.outcome, s.countedAsFailure])).toEqual([
      ["failed", false],
      ["succeeded", false],
    ]);
    expect(final.steps[0]!.failureAnalysis).toBe("the site refuses connections");
    expect(final.steps[1]!.approach).toBe("search for a mirror of the table");
    // The second attempt was told what failed and what to do instead.
    const secondAttempt = h.model.requests.find(
      (r, i) => i > 0 && JSON.stringify(r.messages).includes("Take a different approach"),
    );
    expect(JSON.stringify(secondAttempt?.messages)).toContain("search for a mirror of the table");
    expect(h.audit.map((a) => [a.tool, a.ok])).toEqual([
      ["fetch_page", false],
      ["search", true],
    ]);
    expect(h.audit[0]!.result).toContain("connection refused");
  });

  it("does not trust a reflection that claims success when every tool call failed", async () => {
    const h = harness({
      plan: [planReply(["Fetch the tide table"], ["The table is fetched"])],
      act: [
        { toolCalls: [{ name: "fetch_page", arguments: { url: "https://down.example" } }] },
        { text: "Done!" },
      ],
      reflect: [reflectReply(true)],
    });
    const first = await advanceTask(task(), h.deps);
    const second = await advanceTask(first.state, h.deps);
    expect(second.state.steps[0]).toMatchObject({
      outcome: "failed",
      failureAnalysis: expect.stringContaining("connection refused"),
    });
    expect(second.state.plan!.steps[0]!.status).toBe("pending");
  });

  it("stops at the step budget with an honest summary of what was done and what failed", async () => {
    const failing = {
      toolCalls: [{ name: "fetch_page", arguments: { url: "https://down.example" } }],
    };
    const h = harness({
      plan: [planReply(["Search", "Fetch the table", "Write it up"], ["A table is written up"])],
      act: [
        { text: "Searched: found a link." },
        failing,
        { text: "Failed." },
        failing,
        { text: "Failed again." },
      ],
      reflect: [
        reflectReply(true),
        reflectReply(false, { failureAnalysis: "the host is down" }),
        reflectReply(false, { failureAnalysis: "the host is still down" }),
      ],
      summary: [{ text: "Search worked; the table host is down." }],
    });
    const { final } = await run(h, task({ maxSteps: 3 }));
    expect(final.status).toBe("exhausted");
    expect(final.stopReason).toBe("max_steps");
    expect(final.report).toContain("Stopped: all 3 steps are used.");
    expect(final.report).toContain("- Search: Searched: found a link.");
    expect(final.report).toContain(
      "Failed:\n- step 2, Fetch the table: the host is down\n- step 3, Fetch the table: the host is still down",
    );
    expect(final.report).toContain("Not done:\n- Fetch the table\n- Write it up");
    expect(final.steps.map((s) => s.countedAsFailure)).toEqual([false, false, true]);
    expect(h.events.at(-1)).toMatchObject({
      type: "done",
      status: "exhausted",
      stopReason: "max_steps",
    });
  });

  it("stops when the token budget is spent", async () => {
    const h = harness({
      plan: [planReply(["One", "Two"], ["Both done"])],
      act: [{ text: "one done" }],
      reflect: [reflectReply(true)],
    });
    // Each call reports 120 tokens: the spec, the plan and one step with its reflection use 480.
    const { final } = await run(h, task({ budgetTokens: 300 }));
    expect(final.status).toBe("exhausted");
    expect(final.stopReason).toBe("budget_tokens");
    expect(final.report).toContain("the token budget is spent (480 of 300)");
    expect(final.steps).toHaveLength(1);
  });

  it("stops at the wall-clock limit", async () => {
    const h = harness({
      plan: [planReply(["One", "Two"], ["Both done"])],
      act: [{ text: "one done" }],
      reflect: [reflectReply(true)],
    });
    let now = 0;
    h.deps.now = () => now;
    let state = (await advanceTask(task({ wallClockMs: 60_000 }), h.deps)).state; // plan at t=0
    now = 30_000;
    state = (await advanceTask(state, h.deps)).state; // step 1
    now = 60_000;
    const { final } = await run(h, state);
    expect(final).toMatchObject({
      status: "exhausted",
      stopReason: "wall_clock",
      finishedAt: 60_000,
    });
    expect(final.report).toContain("Stopped: the time limit of 60 s is reached.");
    expect(final.steps).toHaveLength(1);
  });

  it("pauses at a tool that needs approval, runs nothing, and carries on from there with the answer", async () => {
    const h = harness({
      plan: [planReply(["Fetch the page"], ["The page is read"])],
      act: [
        {
          toolCalls: [
            { name: "search", arguments: { q: "tides" } },
            { name: "fetch_page", arguments: { url: "https://tides.example" } },
          ],
        },
        { text: "Read it." },
      ],
      reflect: [reflectReply(true)],
      evaluate: [evaluateReply([true], "Read.")],
    });
    h.deps.character = character({ settings: { toolApproval: ["fetch_page"] } });
    let now = 0;
    h.deps.now = () => now;
    const { final: paused } = await run(h, task({ wallClockMs: 60_000 }));
    expect(paused.status).toBe("awaiting_approval");
    // The ungated call before it ran; the gated one waits.
    expect(h.toolCalls).toEqual(['search:{"q":"tides"}']);
    expect(paused.approval).toMatchObject({
      tool: "fetch_page",
      arguments: { url: "https://tides.example" },
      step: 1,
      expiresAt: 600_000,
      decision: null,
    });
    expect(h.events.at(-1)).toMatchObject({
      type: "approval_requested",
      tool: "fetch_page",
      approvalId: "0123456789abcdef",
    });
    // Nothing happens while it waits.
    expect((await advanceTask(paused, h.deps)).state).toBe(paused);
    expect(
      answerApproval(
        paused,
        { approvalId: "ffffffffffffffff", decision: "approved", by: "Dana" },
        0,
        () => {},
      ),
    ).toBeNull();

    // Ninety seconds of waiting do not count against the one-minute working time.
    now = 90_000;
    const answered = answerApproval(
      paused,
      { approvalId: "0123456789abcdef", decision: "approved", by: "Dana" },
      now,
      (event) => h.events.push(event),
    );
    expect(answered).toMatchObject({ status: "running", pausedMs: 90_000 });
    expect(h.events.at(-1)).toMatchObject({
      type: "approval_resolved",
      decision: "approved",
      by: "Dana",
    });
    const { final } = await run(h, answered!);
    expect(final.status).toBe("completed");
    expect(h.toolCalls).toEqual([
      'search:{"q":"tides"}',
      'fetch_page:{"url":"https://tides.example"}',
    ]);
    expect(h.audit.map((a) => [a.step, a.tool, a.ok, a.approval ?? null])).toEqual([
      [1, "search", true, null],
      [1, "fetch_page", true, "approved"],
    ]);
    expect(final.steps).toHaveLength(1);
    expect(h.events.filter((e) => e.type === "step_started")).toHaveLength(1);
  });

  it("goes on without a denied tool, telling the model it was denied", async () => {
    const h = harness({
      plan: [planReply(["Fetch the page"], ["The page is read"])],
      act: [
        { toolCalls: [{ name: "fetch_page", arguments: { url: "https://tides.example" } }] },
        { text: "I could not read it." },
      ],
      reflect: [reflectReply(false)],
    });
    h.deps.character = character({ settings: { toolApproval: ["fetch_page"] } });
    const { final: paused } = await run(h, task({ maxSteps: 1 }));
    const denied = answerApproval(
      paused,
      { approvalId: paused.approval!.approvalId, decision: "denied", by: "Dana" },
      1,
      () => {},
    )!;
    const { final } = await run(h, denied);
    expect(h.toolCalls).toEqual([]);
    expect(h.audit).toEqual([
      expect.objectContaining({
        tool: "fetch_page",
        ok: false,
        approval: "denied",
        result: expect.stringContaining("denied permission"),
      }),
    ]);
    expect(final.status).toBe("exhausted");
  });

  it("gives up after maxFailures counted failures in a row", async () => {
    const failing = {
      toolCalls: [{ name: "fetch_page", arguments: { url: "https://down.example" } }],
    };
    const h = harness({
      plan: [planReply(["Fetch"], ["Fetched"])],
      act: [failing, { text: "no" }, failing, { text: "no" }, failing, { text: "no" }],
      reflect: [reflectReply(false), reflectReply(false), reflectReply(false)],
    });
    const { final } = await run(h, task({ maxFailures: 2 }));
    expect(final.status).toBe("failed");
    expect(final.stopReason).toBe("max_failures");
    expect(final.steps).toHaveLength(3);
    expect(final.report).toContain("2 failures in a row (limit 2)");
  });

  it("re-asks an invalid plan and uses only the valid one", async () => {
    const h = harness({
      plan: [{ text: "Sure! First I will search." }, planReply(["Answer"], ["Answered"])],
      act: [{ text: "Answered." }],
      reflect: [reflectReply(true)],
      evaluate: [evaluateReply([true])],
    });
    const { final } = await run(h, task());
    expect(final.status).toBe("completed");
    expect(h.script.asked.slice(0, 3)).toEqual(["spec", "plan", "plan"]);
    const reask = h.model.requests[2]!.messages.at(-1);
    expect(reask).toMatchObject({
      role: "user",
      content: expect.stringContaining("That reply is invalid (the reply was not valid JSON)"),
    });
  });

  it("fails honestly when the plan stays invalid", async () => {
    const h = harness({
      plan: [
        json({ steps: [] }),
        json({ steps: Array(6).fill({ title: "x", doneWhen: "y" }), successCriteria: ["z"] }),
      ],
    });
    const { final } = await run(h, task());
    expect(final.status).toBe("failed");
    expect(final.stopReason).toBe("error");
    expect(final.error).toMatchObject({ code: "model" });
    expect(final.plan).toBeNull();
  });

  it("keeps working when the completion check finds an unmet criterion", async () => {
    const h = harness({
      plan: [planReply(["Draft"], ["Has a title", "Has a source"])],
      act: [{ text: "Drafted with a title." }, { text: "Added the source." }],
      reflect: [reflectReply(true), reflectReply(true)],
      evaluate: [
        evaluateReply([true, false]),
        evaluateReply([true, true], "Draft with title and source."),
      ],
    });
    const { final } = await run(h, task());
    expect(final.status).toBe("completed");
    expect(final.plan!.steps.map((s) => s.title)).toEqual([
      "Draft",
      "Meet the criterion: Has a source",
    ]);
    expect(final.plan!.revision).toBe(2);
  });

  it("resumes from a persisted state without repeating finished steps", async () => {
    const h = harness({
      plan: [planReply(["Search", "Write"], ["Written"])],
      act: [
        { toolCalls: [{ name: "search", arguments: { q: "tides" } }] },
        { text: "found" },
        { text: "written" },
      ],
      reflect: [reflectReply(true), reflectReply(true)],
      evaluate: [evaluateReply([true])],
    });
    let state = task();
    state = (await advanceTask(state, h.deps)).state; // plan
    state = (await advanceTask(state, h.deps)).state; // step 1
    // What a restarted object reads back from storage.
    const stored = JSON.parse(JSON.stringify(state)) as TaskState;
    const { final } = await run(h, stored);
    expect(final.status).toBe("completed");
    expect(h.toolCalls).toEqual(['search:{"q":"tides"}']);
    expect(final.steps.map((s) => s.step)).toEqual([1, 2]);
  });

  it("re-checks tool state after the model failed over, in the step and in the steps after it", async () => {
    const scripted = scriptTask({
      plan: [planReply(["Check stock", "Order", "Confirm"], ["Ordered"])],
      act: [
        { text: "stock checked" },
        { toolCalls: [{ name: "search", arguments: { q: "stock" } }] },
        { text: "ordered" },
        { text: "confirmed" },
      ],
      reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
      summary: [{ text: "checked, ordered, confirmed" }],
      evaluate: [evaluateReply([true])],
    });
    let mainDown = false;
    const model = taskChatModel(scripted, {
      fail: (request) =>
        mainDown && request.model === "main"
          ? new ModelCallError({ model: "main", message: "main is down", failover: true })
          : null,
    });
    const h = harness({}, { model, fallbacks: ["backup"] });
    let state = (await advanceTask(task(), h.deps)).state; // plan
    state = (await advanceTask(state, h.deps)).state; // step 1 on main
    const tools = h.deps.tools;
    // The primary goes down right after its tool call in step 2.
    h.deps.tools = {
      list: () => tools.list(),
      call: async (name, args, ctx) => {
        mainDown = true;
        return tools.call(name, args, ctx);
      },
    };
    const { final } = await run(h, state);
    expect(final.status).toBe("completed");
    expect(h.events).toContainEqual(
      expect.objectContaining({ type: "model_failover", from: "main", to: "backup" }),
    );
    // In the step: the backup does not inherit the primary's tool results.
    const inStep = model.requests.find(
      (r) => r.model === "backup" && JSON.stringify(r.messages).includes("Now do step 2"),
    )!;
    expect(JSON.stringify(inStep.messages)).toContain(FAILOVER_NOTE);
    expect(inStep.messages.some((m) => m.role === "tool")).toBe(false);
    // In the next step: earlier results are flagged as possibly stale.
    const next = model.requests.find((r) => JSON.stringify(r.messages).includes("Now do step 3"))!;
    expect(next.model).toBe("backup");
    expect(JSON.stringify(next.messages)).toContain(TASK_SWITCH_NOTE);
    expect(final.modelPosition).toBe(1);
  });

  it("ends as cancelled when cancelled mid-step", async () => {
    const h = harness({ plan: [planReply(["Wait"], ["Waited"])] });
    let state = (await advanceTask(task(), h.deps)).state;
    h.deps.tools = {
      list: toolHost([]).list,
      call: async () => {
        h.controller.abort(new Error("cancelled"));
        return { ok: true, content: "late" };
      },
    };
    const model = taskChatModel(
      scriptTask({ act: [{ toolCalls: [{ name: "search", arguments: { q: "x" } }] }] }),
    );
    h.deps.model = model;
    state = (await advanceTask(state, h.deps)).state;
    expect(state.status).toBe("cancelled");
    expect(state.report).toContain("Stopped: the task was cancelled.");
  });
});

function json(value: unknown): { text: string } {
  return { text: JSON.stringify(value) };
}
