// Issue 38, holes 4 and 7. Hole 4: `task:` was not reserved, and every REST task remembered as
// one user, `task:api`: a plain messages:write token could speak as `task:api` and get in its
// prompt what admin tasks remembered. Hole 7: a task's approval, input and cancel routes took any
// messages:write token on the agent, another tenant's included, and answered with the whole task
// (goal, spec, audit with tool arguments and results) to a token without agents:read. Issue 53,
// hole 3: MCP `get_task` asked `task.read`, but the REST reads (the task, its events, the task and
// schedule lists) did not, so one tenant's reader token read another tenant's task whole.
import { describe, expect, it, vi } from "vitest";
import {
  api,
  createTestAgent,
  expectForbidden,
  json,
  mintToken,
  useModelStandIn,
} from "../helpers/api.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
} from "../helpers/task-script.ts";
import { connectMcp, textOf } from "../helpers/mcp-client.ts";

const mint = async (body: Record<string, unknown>) => (await mintToken(body)).token;

const model = useModelStandIn();
const SECRET = "The vault password is swordfish-2291";

describe("hole 4: every platform's namespace, task: included, is its surface's own", () => {
  it("a messages:write token cannot speak as a task's user and read what tasks remembered", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const stored = await api("POST", "/memories", {
      body: { memories: [{ agentId, type: "fact", userId: "task:api", text: SECRET }] },
    });
    expect(stored.status).toBe(201);
    const token = await mint({ name: "chat", scopes: ["messages:write"], agents: [agentId] });
    model.respondWith(() => ({ text: "Hello." }));
    for (const userId of ["task:api", "Task:api", "telegram:42", "slack:U123"]) {
      const response = await api("POST", `/agents/${agentId}/messages`, {
        token,
        body: { userId, text: "What do you know about me?" },
      });
      await expectForbidden(response, "reserved");
    }
    const room = await api("POST", `/agents/${agentId}/messages`, {
      token,
      body: { userId: "mallory", roomId: "task:api", text: "hi" },
    });
    await expectForbidden(room, "reserved");
    expect(JSON.stringify(model.calls.map((call) => call.messages))).not.toContain(SECRET);
  });
});

/** A task that plans one step whose agent calls the gated `remember`, so it waits for a yes. */
async function pausedTask(agentId: string, token: string): Promise<string> {
  model.respondWith(
    standInResponder(
      scriptTask({
        plan: [planReply(["Save the note"], ["The note is saved"])],
        act: [
          { toolCalls: [{ name: "remember", arguments: { fact: SECRET } }] },
          { text: "Saved." },
        ],
        reflect: [reflectReply(true)],
        evaluate: [evaluateReply([true], "Saved.")],
      }),
    ),
  );
  const started = await api("POST", `/agents/${agentId}/tasks`, {
    token,
    body: { goal: `Save the note: ${SECRET}` },
  });
  expect(started.status).toBe(202);
  const { taskId } = await json<{ taskId: string }>(started);
  await vi.waitFor(
    async () => {
      const task = await json<{ status: string }>(
        await api("GET", `/agents/${agentId}/tasks/${taskId}`),
      );
      expect(task.status).toBe("awaiting_approval");
    },
    { timeout: 15_000, interval: 50 },
  );
  return taskId;
}

describe("hole 7: a task is answered and cancelled only by its requester's tenant", () => {
  it("another tenant's token gets 403 approving or cancelling, and the task is untouched", async () => {
    const agentId = await createTestAgent({
      settings: { toolApproval: ["remember"], memory: { factsEvery: 1000 } },
    });
    const acme = await mint({
      name: "acme",
      scopes: ["messages:write"],
      agents: [agentId],
      userPrefix: "acme:",
    });
    const globex = await mint({
      name: "globex",
      scopes: ["messages:write"],
      agents: [agentId],
      userPrefix: "globex:",
    });
    const taskId = await pausedTask(agentId, acme);
    const base = `/agents/${agentId}/tasks/${taskId}`;
    await expectForbidden(
      await api("POST", `${base}/approval`, { token: globex, body: { approve: true } }),
      "acme:",
    );
    await expectForbidden(
      await api("POST", `${base}/input`, { token: globex, body: { text: "anything" } }),
      "acme:",
    );
    await expectForbidden(await api("DELETE", base, { token: globex }), "acme:");
    const after = await json<{ status: string; audit: unknown[] }>(await api("GET", base));
    expect(after.status).toBe("awaiting_approval");

    // Its own tenant answers; without agents:read it sees the new status, not the task.
    const answered = await api("POST", `${base}/approval`, {
      token: acme,
      body: { approve: false },
    });
    expect(answered.status).toBe(200);
    const body = await json<Record<string, unknown>>(answered);
    expect(Object.keys(body).sort()).toEqual(["status", "taskId"]);
    expect(JSON.stringify(body)).not.toContain(SECRET);
  });

  it("a token without a prefix does not answer a prefix tenant's task either, and admin does", async () => {
    const agentId = await createTestAgent({
      settings: { toolApproval: ["remember"], memory: { factsEvery: 1000 } },
    });
    const acme = await mint({
      name: "acme",
      scopes: ["messages:write"],
      agents: [agentId],
      userPrefix: "acme:",
    });
    const operator = await mint({
      name: "operator",
      scopes: ["messages:write", "agents:read"],
      agents: [agentId],
    });
    const taskId = await pausedTask(agentId, acme);
    const base = `/agents/${agentId}/tasks/${taskId}`;
    await expectForbidden(await api("DELETE", base, { token: operator }), "acme:");
    const cancelled = await api("DELETE", base);
    expect(cancelled.status).toBe(200);
    expect(await json<{ status: string; goal: string }>(cancelled)).toMatchObject({
      status: "cancelled",
    });
  });
});

/** A token of one tenant that starts tasks and reads the agent (tasks, schedules, events). */
const tenantReader = (agentId: string, prefix: string) =>
  mint({
    name: prefix,
    scopes: ["messages:write", "agents:read"],
    agents: [agentId],
    userPrefix: prefix,
  });

describe("issue 53 hole 3: a task is read only by its requester's tenant, over REST as over MCP", () => {
  it("another tenant's task, its events and its schedule answer as if they did not exist", async () => {
    const agentId = await createTestAgent({
      settings: { toolApproval: ["remember"], memory: { factsEvery: 1000 } },
    });
    const acme = await tenantReader(agentId, "acme:");
    const globex = await tenantReader(agentId, "globex:");
    const theirs = await pausedTask(agentId, globex);
    const schedule = await api("POST", `/agents/${agentId}/schedules`, {
      token: globex,
      body: { goal: `Rotate the vault: ${SECRET}`, cron: "0 3 * * 1" },
    });
    expect(schedule.status).toBe(201);
    const { scheduleId } = await json<{ scheduleId: string }>(schedule);
    model.respondWith(() => ({ text: "Not a plan." }));
    const started = await api("POST", `/agents/${agentId}/tasks`, {
      token: acme,
      body: { goal: "Water the plants" },
    });
    expect(started.status).toBe(202);
    const { taskId: ours } = await json<{ taskId: string }>(started);

    // The task and its events: the same 404 as a task id nobody ever used.
    const notFound = { code: "not_found", message: `no task "${theirs}" for agent "${agentId}"` };
    const task = await api("GET", `/agents/${agentId}/tasks/${theirs}`, { token: acme });
    const taskText = await task.text();
    expect(task.status, taskText).toBe(404);
    expect(JSON.parse(taskText)).toEqual({ error: notFound });
    const events = await api("GET", `/agents/${agentId}/tasks/${theirs}/events`, { token: acme });
    if (events.status !== 404) await events.body?.cancel();
    expect(events.status).toBe(404);
    expect(await json(events)).toEqual({ error: notFound });

    // MCP get_task says the same thing.
    const client = await connectMcp(agentId, acme);
    const viaMcp = await client.callTool({ name: "get_task", arguments: { taskId: theirs } });
    expect(viaMcp.isError).toBe(true);
    expect(textOf(viaMcp)).toContain(notFound.message);

    // The lists drop what is not the tenant's, and keep what is.
    const list = await api("GET", `/agents/${agentId}/tasks`, { token: acme });
    const listText = await list.text();
    expect(list.status, listText).toBe(200);
    expect(listText).not.toContain(SECRET);
    const listed = (JSON.parse(listText) as { tasks: { taskId: string }[] }).tasks;
    expect(listed.map((entry) => entry.taskId)).toEqual([ours]);
    const schedules = await api("GET", `/agents/${agentId}/schedules`, { token: acme });
    const schedulesText = await schedules.text();
    expect(schedules.status, schedulesText).toBe(200);
    expect(schedulesText).not.toContain(SECRET);
    expect(JSON.parse(schedulesText)).toEqual({ schedules: [] });

    // Its own tenant reads all of it, and the admin token reads everyone's.
    const own = await api("GET", `/agents/${agentId}/tasks/${theirs}`, { token: globex });
    expect(own.status).toBe(200);
    expect(await json(own)).toMatchObject({ taskId: theirs, goal: `Save the note: ${SECRET}` });
    const ownList = await json<{ tasks: { taskId: string }[] }>(
      await api("GET", `/agents/${agentId}/tasks`, { token: globex }),
    );
    expect(ownList.tasks.map((entry) => entry.taskId)).toEqual([theirs]);
    const ownSchedules = await json<{ schedules: { scheduleId: string }[] }>(
      await api("GET", `/agents/${agentId}/schedules`, { token: globex }),
    );
    expect(ownSchedules.schedules.map((entry) => entry.scheduleId)).toEqual([scheduleId]);
    const everyone = await json<{ tasks: { taskId: string }[] }>(
      await api("GET", `/agents/${agentId}/tasks`),
    );
    expect(everyone.tasks.map((entry) => entry.taskId).sort()).toEqual([ours, theirs].sort());
    expect((await api("DELETE", `/agents/${agentId}/tasks/${theirs}`)).status).toBe(200);
  });

  it("a token without a prefix reads an operator's task, not a prefix tenant's", async () => {
    const agentId = await createTestAgent({
      settings: { toolApproval: ["remember"], memory: { factsEvery: 1000 } },
    });
    const acme = await tenantReader(agentId, "acme:");
    const operator = await mint({ name: "operator", scopes: ["agents:read"], agents: [agentId] });
    const acmeTask = await pausedTask(agentId, acme);
    model.respondWith(() => ({ text: "Not a plan." }));
    const started = await api("POST", `/agents/${agentId}/tasks`, { body: { goal: "Tidy up" } });
    const { taskId: adminTask } = await json<{ taskId: string }>(started);

    const refused = await api("GET", `/agents/${agentId}/tasks/${acmeTask}`, { token: operator });
    expect(refused.status).toBe(404);
    expect(await refused.text()).not.toContain(SECRET);
    expect(
      (await api("GET", `/agents/${agentId}/tasks/${adminTask}`, { token: operator })).status,
    ).toBe(200);
    const listed = await json<{ tasks: { taskId: string }[] }>(
      await api("GET", `/agents/${agentId}/tasks`, { token: operator }),
    );
    expect(listed.tasks.map((entry) => entry.taskId)).toEqual([adminTask]);
    expect((await api("DELETE", `/agents/${agentId}/tasks/${acmeTask}`)).status).toBe(200);
  });
});
