// delegate_task through the worker: a task step hands a whole piece of work to another agent's
// task and waits for its result, which flows into the step as its tool result. Parent and child
// are linked in both audit trails and event streams, the child's tokens count on its own agent's
// ceiling and show in the parent's usage, tool approval applies on the agent whose tool it is, and
// cancelling the parent stops the child. The scripted model stand-in answers each task by its goal.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../../helpers/api.ts";
import { goalOf, oneStepScript, perGoalResponder, scriptTask } from "../../helpers/task-script.ts";

const model = useModelStandIn();

interface Usage {
  promptTokens: number;
  completionTokens: number;
  modelCalls: number;
}

interface TaskBody {
  taskId: string;
  status: string;
  source: string;
  result: { text: string } | null;
  parent: { agentId: string; taskId: string; step: number } | null;
  chain: string[];
  delegation: { agentId: string; childTaskId: string | null } | null;
  approval: { tool: string } | null;
  audit: {
    kind?: string;
    tool: string;
    ok: boolean;
    result: string;
    approval?: string;
    link?: { agentId: string; taskId: string };
    usage?: Usage;
  }[];
  usage: Usage & { delegated?: Usage };
}

async function start(agentId: string, goal: string): Promise<string> {
  const response = await api("POST", `/agents/${agentId}/tasks`, { body: { goal } });
  expect(response.status).toBe(202);
  return (await json<{ taskId: string }>(response)).taskId;
}

async function read(agentId: string, taskId: string): Promise<TaskBody> {
  return json<TaskBody>(await api("GET", `/agents/${agentId}/tasks/${taskId}`));
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

async function eventTypes(agentId: string, taskId: string): Promise<string[]> {
  const text = await (await api("GET", `/agents/${agentId}/tasks/${taskId}/events`)).text();
  return [...text.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]!);
}

const PARENT_GOAL = "Plan the fruit stall";
const CHILD_GOAL = "Count the pears";

/** The parent's one step delegates the count, then reports what came back. */
function parentScript(bob: string) {
  return scriptTask(
    oneStepScript("The stall needs 12 pears.", [
      { toolCalls: [{ name: "delegate_task", arguments: { agentId: bob, goal: CHILD_GOAL } }] },
      { text: "Bob counted 12 pears." },
    ]),
  );
}

async function agents(bobSettings: Record<string, unknown> = {}, adaSettings = {}) {
  const bob = await createTestAgent({
    name: "Bob",
    settings: { memory: { factsEvery: 1000 }, ...bobSettings },
  });
  const ada = await createTestAgent({
    name: "Ada",
    settings: { memory: { factsEvery: 1000 }, delegates: [bob], ...adaSettings },
  });
  return { ada, bob };
}

describe("delegate_task", () => {
  it("runs a step as another agent's task and carries its result into the step, linked both ways", async () => {
    const { ada, bob } = await agents();
    model.respondWith(
      perGoalResponder({
        [PARENT_GOAL]: parentScript(bob),
        [CHILD_GOAL]: scriptTask(oneStepScript("12 pears.")),
      }),
    );
    const parentId = await start(ada, PARENT_GOAL);
    const parent = await waitForStatus(ada, parentId, ["completed", "failed", "exhausted"]);
    expect(parent).toMatchObject({
      status: "completed",
      result: { text: "The stall needs 12 pears." },
    });

    const call = parent.audit.find((entry) => entry.tool === "delegate_task")!;
    expect(call).toMatchObject({ ok: true, link: { agentId: bob } });
    expect(call.result).toContain("12 pears.");
    const childId = call.link!.taskId;
    const child = await read(bob, childId);
    expect(child).toMatchObject({
      status: "completed",
      source: "delegation",
      parent: { agentId: ada, taskId: parentId, step: 1 },
      chain: [ada],
      result: { text: "12 pears." },
    });
    expect(child.audit[0]).toMatchObject({
      kind: "delegated_by",
      link: { agentId: ada, taskId: parentId },
    });

    // The child's result reached the parent's step as its tool result, quoted as data.
    const resumed = model.calls.find(
      (c) => goalOf(c) === PARENT_GOAL && c.messages.some((m) => m.role === "tool"),
    );
    const toolMessage = resumed?.messages.find((m) => m.role === "tool");
    expect(String(toolMessage?.content)).toContain("12 pears.");
    expect(String(toolMessage?.content)).toContain(`agent ${bob}`);

    expect(await eventTypes(ada, parentId)).toEqual(
      expect.arrayContaining(["delegate_started", "delegate_finished"]),
    );
    // The child's first event names the task that delegated it.
    expect((await eventTypes(bob, childId))[0]).toBe("delegated_by");

    // The child's tokens count on its own ceiling and on the parent's (asking never spends past
    // one's own budget); the parent reports the child's next to its own.
    const childSpent = child.usage.promptTokens + child.usage.completionTokens;
    expect(parent.usage.delegated).toEqual({
      promptTokens: child.usage.promptTokens,
      completionTokens: child.usage.completionTokens,
      modelCalls: child.usage.modelCalls,
    });
    const spent = (agentId: string) =>
      env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
        .bind(agentId)
        .first<{ tokens: number }>();
    await vi.waitFor(async () => {
      expect((await spent(bob))?.tokens).toBe(childSpent);
      expect((await spent(ada))?.tokens).toBe(
        parent.usage.promptTokens + parent.usage.completionTokens + childSpent,
      );
    });
  });

  it("applies tool approval at each level, on the agent whose tool it is", async () => {
    const { ada, bob } = await agents(
      { toolApproval: ["current_time"] },
      { toolApproval: ["delegate_task"] },
    );
    model.respondWith(
      perGoalResponder({
        [PARENT_GOAL]: parentScript(bob),
        [CHILD_GOAL]: scriptTask(
          oneStepScript("12 pears at noon.", [
            { toolCalls: [{ name: "current_time", arguments: {} }] },
            { text: "12 pears at noon." },
          ]),
        ),
      }),
    );
    const parentId = await start(ada, PARENT_GOAL);
    // Ada's own gate: delegate_task waits for a yes before anything reaches Bob.
    const gated = await waitForStatus(ada, parentId, ["awaiting_approval"]);
    expect(gated.approval).toMatchObject({ tool: "delegate_task" });
    expect(model.calls.some((c) => goalOf(c) === CHILD_GOAL)).toBe(false);
    const approved = await api("POST", `/agents/${ada}/tasks/${parentId}/approval`, {
      body: { approve: true },
    });
    expect(approved.status).toBe(200);

    // Bob's gate: his task pauses at his own gated tool, answered on Bob's task.
    const waiting = await waitForStatus(ada, parentId, ["awaiting_delegate"]);
    await vi.waitFor(async () =>
      expect((await read(ada, parentId)).delegation?.childTaskId).toBeTruthy(),
    );
    const childId = (await read(ada, parentId)).delegation!.childTaskId!;
    expect(waiting.delegation).toMatchObject({ agentId: bob });
    expect(await waitForStatus(bob, childId, ["awaiting_approval"])).toMatchObject({
      approval: { tool: "current_time" },
    });
    expect(
      (await api("POST", `/agents/${bob}/tasks/${childId}/approval`, { body: { approve: true } }))
        .status,
    ).toBe(200);

    const parent = await waitForStatus(ada, parentId, ["completed", "failed", "exhausted"]);
    expect(parent.status).toBe("completed");
    expect(parent.audit.find((entry) => entry.tool === "delegate_task")).toMatchObject({
      ok: true,
      approval: "approved",
    });
    expect((await read(bob, childId)).audit.find((e) => e.tool === "current_time")).toMatchObject({
      ok: true,
      approval: "approved",
    });
  });

  it("stops the other agent's task when the task that delegated it is cancelled", async () => {
    const { ada, bob } = await agents();
    const respond = perGoalResponder({
      [PARENT_GOAL]: parentScript(bob),
      [CHILD_GOAL]: scriptTask(oneStepScript("never")),
    });
    // The child's model calls never answer.
    model.respondWith((call) => (goalOf(call) === CHILD_GOAL ? { hang: true } : respond(call)));
    const parentId = await start(ada, PARENT_GOAL);
    await model.waitForHang();
    const childId = (await waitForStatus(ada, parentId, ["awaiting_delegate"])).delegation!
      .childTaskId!;
    expect(await json(await api("DELETE", `/agents/${ada}/tasks/${parentId}`))).toMatchObject({
      status: "cancelled",
    });
    expect(await waitForStatus(bob, childId, ["cancelled"])).toMatchObject({ status: "cancelled" });
    await vi.waitFor(() => expect(model.hangingCount).toBe(0));
  });
});
