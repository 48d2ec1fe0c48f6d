// Issue 38, holes 4 and 7. Hole 4: `task:` was not reserved, and every REST task remembered as
// one user, `task:api`: a plain messages:write token could speak as `task:api` and get in its
// prompt what admin tasks remembered. Hole 7: a task's approval, input and cancel routes took any
// messages:write token on the agent, another tenant's included, and answered with the whole task
// (goal, spec, audit with tool arguments and results) to a token without agents:read.
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
