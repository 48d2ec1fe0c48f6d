// delegate_task waits at most 30 minutes (docs/tasks.md): then the other agent's task is
// cancelled and the step carries on with a clear failure as that call's result. The wait's end is
// a durable schedule on the parent agent's object; the test reads it and runs its callback, as the
// scheduler would when the time comes, instead of waiting 30 minutes.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentTasks } from "../../../src/durable-objects.ts";
import { api, createTestAgent, json, useModelStandIn } from "../../helpers/api.ts";
import {
  goalOf,
  oneStepScript,
  perGoalResponder,
  reflectReply,
  scriptTask,
} from "../../helpers/task-script.ts";

const model = useModelStandIn();

/** The documented figure, not the code's constant: the test holds the rule. */
const DELEGATE_WAIT_MS = 30 * 60_000;
const PARENT_GOAL = "Plan the fruit stall";
const CHILD_GOAL = "Count the pears";
const TIMED_OUT_ANSWER = "Bob took too long; I counted 12 pears myself.";

interface TaskBody {
  taskId: string;
  status: string;
  result: { text: string } | null;
  delegation: {
    agentId: string;
    childTaskId: string | null;
    requestedAt: number;
    expiresAt: number;
  } | null;
  audit: {
    tool: string;
    ok: boolean;
    result: string;
    link?: { agentId: string; taskId: string };
  }[];
}

async function read(agentId: string, taskId: string): Promise<TaskBody> {
  return json<TaskBody>(await api("GET", `/agents/${agentId}/tasks/${taskId}`));
}

async function waitForTask(
  agentId: string,
  taskId: string,
  done: (task: TaskBody) => boolean,
): Promise<TaskBody> {
  let task!: TaskBody;
  await vi.waitFor(
    async () => {
      task = await read(agentId, taskId);
      expect(done(task), `task ${taskId} is ${task.status}`).toBe(true);
    },
    { timeout: 15_000, interval: 50 },
  );
  return task;
}

const finished = (task: TaskBody) => ["completed", "failed", "exhausted"].includes(task.status);

describe("delegate_task: the 30-minute wait", () => {
  it("cancels the other agent's task after 30 minutes and carries on with a clear failure for that call", async () => {
    const bob = await createTestAgent({ name: "Bob", settings: { memory: { factsEvery: 1000 } } });
    const ada = await createTestAgent({
      name: "Ada",
      settings: { memory: { factsEvery: 1000 }, delegates: [bob] },
    });
    // The step whose only call failed did not succeed: it is tried again, this time without Bob.
    const respond = perGoalResponder({
      [PARENT_GOAL]: scriptTask({
        ...oneStepScript(TIMED_OUT_ANSWER, [
          { toolCalls: [{ name: "delegate_task", arguments: { agentId: bob, goal: CHILD_GOAL } }] },
          { text: "Bob did not answer." },
          { text: TIMED_OUT_ANSWER },
        ]),
        reflect: [reflectReply(false), reflectReply(true)],
      }),
    });
    // Bob's task never gets an answer from its model.
    model.respondWith((call) => (goalOf(call) === CHILD_GOAL ? { hang: true } : respond(call)));
    const started = await api("POST", `/agents/${ada}/tasks`, { body: { goal: PARENT_GOAL } });
    expect(started.status).toBe(202);
    const { taskId: parentId } = await json<{ taskId: string }>(started);
    await model.waitForHang();
    const waiting = await waitForTask(
      ada,
      parentId,
      (task) => task.status === "awaiting_delegate" && Boolean(task.delegation?.childTaskId),
    );
    const { childTaskId, requestedAt, expiresAt } = waiting.delegation!;
    const childId = childTaskId!;
    expect(expiresAt - requestedAt).toBe(DELEGATE_WAIT_MS);

    // The deadline is a durable schedule for that moment on Ada's object.
    const tasks = env.TASKS.getByName(ada);
    const deadline = await runInDurableObject(tasks, (instance: AgentTasks) =>
      instance
        .getSchedules<{ taskId: string; callId: string }>()
        .find((s) => s.callback === "expireDelegation"),
    );
    expect(deadline?.payload.taskId).toBe(parentId);
    expect(Math.abs(deadline!.time * 1000 - expiresAt)).toBeLessThan(1_000);
    // What the scheduler does when the time comes.
    await runInDurableObject(tasks, (instance: AgentTasks) =>
      instance.expireDelegation(deadline!.payload),
    );

    // The step carried on: the call failed, saying why, and the task finished its work.
    const parent = await waitForTask(ada, parentId, finished);
    expect(parent).toMatchObject({ status: "completed", result: { text: TIMED_OUT_ANSWER } });
    const calls = parent.audit.filter((entry) => entry.tool === "delegate_task");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ ok: false, link: { agentId: bob, taskId: childId } });
    const failure = `agent "${bob}"'s task did not finish within 30 minutes and was cancelled`;
    expect(calls[0]!.result).toContain(failure);
    // ...and that is what Ada's model was given as the call's result.
    const resumed = model.calls.find(
      (c) => goalOf(c) === PARENT_GOAL && c.messages.some((m) => m.role === "tool"),
    );
    const toolMessage = resumed?.messages.find((m) => m.role === "tool");
    expect(String(toolMessage?.content)).toContain(failure);

    // Bob's task was stopped, its model call with it.
    expect((await waitForTask(bob, childId, (task) => task.status === "cancelled")).status).toBe(
      "cancelled",
    );
    await vi.waitFor(() => expect(model.hangingCount).toBe(0));

    // The schedule firing again (a retry, a second alarm) changes nothing.
    await runInDurableObject(tasks, (instance: AgentTasks) =>
      instance.expireDelegation(deadline!.payload),
    );
    const after = await read(ada, parentId);
    expect(after.status).toBe("completed");
    expect(after.audit.filter((entry) => entry.tool === "delegate_task")).toEqual(calls);
  });
});
