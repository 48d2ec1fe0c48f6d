// The compiled task spec on its own (pure runtime, scripted model): compiled on the small model
// in a context of its own before planning, read by the planner and the completion check, the raw
// goal when it stays invalid (said in the events and the audit trail), and `needs_input` when the
// goal lacks an input only a person can give.
import { describe, expect, it } from "vitest";
import { ModelCallError } from "../../../src/runtime/util/errors.ts";
import { advanceTask, answerInput } from "../../../src/runtime/tasks/advance-task.ts";
import { SPEC_INSTRUCTIONS } from "../../../src/runtime/tasks/task-spec.ts";
import { newTask, runToPause, taskHarness } from "../../helpers/task-harness.ts";
import { evaluateReply, planReply, reflectReply, specReply } from "../../helpers/task-script.ts";

const oneStep = {
  plan: [planReply(["Write the report"], ["The report is written"])],
  act: [{ text: "Report: the moon's gravity raises tides." }],
  reflect: [reflectReply(true)],
  evaluate: [evaluateReply([true], "Tides come from the moon's gravity.")],
};

function content(message: { content?: unknown } | undefined): string {
  return typeof message?.content === "string" ? message.content : "";
}

describe("task spec", () => {
  it("compiles the goal on the small model in a context of its own, and plans and checks from it", async () => {
    const h = taskHarness({
      ...oneStep,
      spec: [
        specReply("Write a short report on what causes tides", {
          provided: ["topic: tides"],
          constraints: ["at most 100 words"],
          outputRequirements: ["names the moon's gravity"],
          risks: ["confusing tides with waves"],
        }),
      ],
    });
    const final = await runToPause(h, newTask());
    expect(final.status).toBe("completed");
    expect(final.specSource).toBe("compiled");
    expect(final.spec).toMatchObject({
      goal: "Write a short report on what causes tides",
      constraints: ["at most 100 words"],
      outputRequirements: ["names the moon's gravity"],
    });

    const [compile, planner] = h.model.requests;
    // Its own context: the spec instructions and the goal, nothing of a conversation.
    expect(compile!.model).toBe("small");
    expect(compile!.messages).toHaveLength(2);
    expect(content(compile!.messages[0])).toContain(SPEC_INSTRUCTIONS);
    expect(content(compile!.messages[1])).toBe("Goal: Write a short report on tides");
    // The planner, the act step and the completion check read the spec.
    expect(h.script.asked.slice(0, 2)).toEqual(["spec", "plan"]);
    expect(content(planner!.messages[1])).toContain("Constraints:\n- at most 100 words");
    const act = h.model.requests.find((r) => content(r.messages[1]).includes("Now do step 1"));
    expect(content(act!.messages[1])).toContain("The output must:\n- names the moon's gravity");
    const check = h.model.requests.at(-1)!;
    expect(content(check.messages[1])).toContain("The output must:\n- names the moon's gravity");
    expect(h.events.slice(0, 2)).toEqual([
      { type: "task_started" },
      { type: "spec", source: "compiled", spec: final.spec, problem: null },
    ]);
    expect(h.audit).toEqual([]);
  });

  it("falls back to the raw goal when the spec stays invalid after one re-ask, and says so", async () => {
    const h = taskHarness({
      ...oneStep,
      spec: [{ text: "Sure, here is the spec!" }, { text: '{"goal":""}' }],
    });
    const final = await runToPause(h, newTask());
    // The task is not blocked: it plans from the goal as written.
    expect(final.status).toBe("completed");
    expect(final.specSource).toBe("raw_goal");
    expect(final.spec).toEqual({
      goal: "Write a short report on tides",
      inputs: { provided: [], missing: [] },
      constraints: [],
      outputRequirements: [],
      risks: [],
    });
    expect(h.script.asked.slice(0, 3)).toEqual(["spec", "spec", "plan"]);
    const event = h.events.find((e) => e.type === "spec");
    expect(event).toMatchObject({ source: "raw_goal", problem: expect.stringContaining("goal") });
    expect(h.audit[0]).toMatchObject({
      kind: "spec",
      tool: "compile_spec",
      ok: false,
      model: "small",
      result: expect.stringContaining("the task plans from the raw goal"),
    });
    // Both spec calls are paid for in the task's usage.
    expect(final.usage.modelCalls).toBe(6);
  });

  it("fails the task when the model cannot be reached (an outage is not an invalid spec)", async () => {
    const h = taskHarness(oneStep, {
      model: {
        fail: (request) =>
          request.model === "small"
            ? new ModelCallError({ model: "small", message: "small is down", failover: false })
            : null,
      },
    });
    const final = await runToPause(h, newTask());
    expect(final).toMatchObject({
      status: "failed",
      stopReason: "error",
      error: { code: "model" },
    });
    expect(h.script.asked).not.toContain("plan");
  });

  it("pauses as needs_input with the question, plans nothing, and plans once answered", async () => {
    const h = taskHarness({
      ...oneStep,
      spec: [
        specReply("Book a table for dinner", {
          missing: [
            { input: "city", question: "Which city is the dinner in?", required: true },
            { input: "cuisine", question: "Any cuisine?", required: false },
          ],
        }),
      ],
    });
    let now = 0;
    h.deps.now = () => now;
    const paused = await runToPause(h, newTask({ goal: "Book a table for dinner" }));
    expect(paused.status).toBe("needs_input");
    expect(paused.input).toMatchObject({
      question: "Which city is the dinner in?",
      inputs: ["city"],
      expiresAt: 24 * 60 * 60_000,
    });
    expect(paused.plan).toBeNull();
    expect(h.script.asked).toEqual(["spec"]);
    expect(h.events.at(-1)).toMatchObject({
      type: "input_requested",
      question: "Which city is the dinner in?",
    });
    // Nothing happens while it waits; a wrong id changes nothing.
    expect((await advanceTask(paused, h.deps)).state).toBe(paused);
    expect(
      answerInput(paused, { inputId: "ffffffffffffffff", text: "Paris", by: null }, 0, () => {}),
    ).toBeNull();

    now = 3_600_000;
    const answered = answerInput(
      paused,
      { inputId: paused.input!.inputId, text: "Lyon", by: "Dana" },
      now,
      (event) => h.events.push(event),
    )!;
    expect(answered).toMatchObject({ status: "running", input: null, pausedMs: 3_600_000 });
    expect(answered.spec!.inputs).toEqual({
      provided: ["city: Lyon"],
      missing: [{ input: "cuisine", question: "Any cuisine?", required: false }],
    });
    expect(h.events.at(-1)).toEqual({ type: "input_received", by: "Dana" });
    // An answer comes once.
    expect(
      answerInput(answered, { inputId: paused.input!.inputId, text: "x", by: null }, now, () => {}),
    ).toBeNull();

    const final = await runToPause(h, answered);
    expect(final.status).toBe("completed");
    const planner = h.model.requests.find((r) => r.model === "main")!;
    expect(content(planner.messages[1])).toContain("Inputs given:\n- city: Lyon");
    // An input the task can do without is left to a default, not asked.
    expect(content(planner.messages[1])).toContain(
      "Inputs not given (assume a reasonable default and say which):\n- cuisine",
    );
    expect(h.script.asked.filter((role) => role === "spec")).toHaveLength(1);
  });
});
