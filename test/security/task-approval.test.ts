// Attack: a tool the character gates behind a person's approval (`settings.toolApproval`) ran
// unattended inside an autonomous task, over REST, from a schedule and from Discord `/task`.
// A gated tool now never runs in a task without a yes: REST and scheduled tasks pause in
// `awaiting_approval` and are answered through the API; Discord tasks post Approve / Deny to the
// person who asked, routed to the task's object; expiry is a denial the task carries on with.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentTasks } from "../../src/durable-objects.ts";
import { api, ADMIN_TOKEN, createTestAgent, json } from "../helpers/api.ts";
import {
  click,
  command,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../helpers/discord.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
  type TaskScript,
} from "../helpers/task-script.ts";

const { model, discord } = useDiscordStandIns();

const FACT = "The launch code is in the blue binder";

interface TaskBody {
  status: string;
  approval: {
    tool: string;
    arguments: Record<string, unknown>;
    requestedAt: number;
    expiresAt: number;
    requestedBy: string | null;
  } | null;
  audit: { tool: string; ok: boolean; result: string; approval?: string }[];
  result: { text: string } | null;
}

/** Plan one step whose agent calls `remember`, then reports; reflections and the check succeed. */
function rememberScript(extra: TaskScript = {}): TaskScript {
  return {
    plan: [planReply(["Save the note"], ["The note is saved"])],
    act: [
      { toolCalls: [{ name: "remember", arguments: { fact: FACT } }] },
      { text: "Handled the note." },
    ],
    reflect: [reflectReply(true)],
    evaluate: [evaluateReply([true], "Handled.")],
    ...extra,
  };
}

async function gatedAgent(): Promise<string> {
  return createTestAgent({
    settings: { toolApproval: ["remember"], memory: { factsEvery: 1000 } },
  });
}

async function startTask(agentId: string, token = ADMIN_TOKEN): Promise<string> {
  const response = await api("POST", `/agents/${agentId}/tasks`, {
    body: { goal: "Save the note about the launch code" },
    token,
  });
  expect(response.status).toBe(202);
  return (await json<{ taskId: string }>(response)).taskId;
}

async function readTask(agentId: string, taskId: string): Promise<TaskBody> {
  return json<TaskBody>(await api("GET", `/agents/${agentId}/tasks/${taskId}`));
}

async function waitForStatus(
  agentId: string,
  taskId: string,
  statuses: string[],
): Promise<TaskBody> {
  let task!: TaskBody;
  await vi.waitFor(
    async () => {
      task = await readTask(agentId, taskId);
      expect(statuses).toContain(task.status);
    },
    { timeout: 15_000, interval: 50 },
  );
  return task;
}

async function facts(agentId: string): Promise<string[]> {
  const listed = await json<{ memories: { text: string }[] }>(
    await api("GET", `/memories?agentId=${agentId}&type=fact`),
  );
  return listed.memories.map((memory) => memory.text);
}

function taskObject(agentId: string) {
  return env.TASKS.getByName(agentId);
}

describe("tool approval in tasks started over REST", () => {
  it("a REST task cannot run a tool that needs approval: it pauses in awaiting_approval until someone answers", async () => {
    const agentId = await gatedAgent();
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const taskId = await startTask(agentId);

    const paused = await waitForStatus(agentId, taskId, [
      "awaiting_approval",
      "completed",
      "failed",
      "exhausted",
    ]);
    expect(paused.status).toBe("awaiting_approval");
    expect(paused.approval).toMatchObject({
      tool: "remember",
      arguments: { fact: FACT },
      requestedBy: null,
    });
    expect(paused.approval!.expiresAt - paused.approval!.requestedAt).toBe(10 * 60 * 1000);
    expect(await facts(agentId)).toEqual([]);

    // The event stream says so too.
    const events = await (
      await api("GET", `/agents/${agentId}/tasks/${taskId}/events`, {
        headers: { accept: "text/event-stream" },
      })
    )
      .body!.getReader()
      .read();
    expect(new TextDecoder().decode(events.value)).toContain("event: approval_requested");

    const answered = await api("POST", `/agents/${agentId}/tasks/${taskId}/approval`, {
      body: { approve: true },
    });
    expect(answered.status).toBe(200);
    const done = await waitForStatus(agentId, taskId, ["completed", "failed", "exhausted"]);
    expect(done.status).toBe("completed");
    expect(done.audit).toEqual([
      expect.objectContaining({ tool: "remember", ok: true, approval: "approved" }),
    ]);
    expect(await facts(agentId)).toEqual([FACT]);
  });

  it("a denied tool is not run, and the task goes on knowing it was denied", async () => {
    const agentId = await gatedAgent();
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const taskId = await startTask(agentId);
    await waitForStatus(agentId, taskId, ["awaiting_approval"]);

    expect(
      (
        await api("POST", `/agents/${agentId}/tasks/${taskId}/approval`, {
          body: { approve: false },
        })
      ).status,
    ).toBe(200);
    const done = await waitForStatus(agentId, taskId, ["completed", "failed", "exhausted"]);
    expect(done.audit).toEqual([
      expect.objectContaining({ tool: "remember", ok: false, approval: "denied" }),
    ]);
    expect(done.audit[0]!.result).toMatch(/denied permission to run remember/);
    expect(await facts(agentId)).toEqual([]);
    // A second answer finds nothing waiting.
    expect(
      (
        await api("POST", `/agents/${agentId}/tasks/${taskId}/approval`, {
          body: { approve: true },
        })
      ).status,
    ).toBe(409);
  });

  it("no answer within 10 minutes counts as a denial", async () => {
    const agentId = await gatedAgent();
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const taskId = await startTask(agentId);
    await waitForStatus(agentId, taskId, ["awaiting_approval"]);
    const schedule = await runInDurableObject(taskObject(agentId), (instance: AgentTasks) =>
      instance
        .getSchedules<{ taskId: string; approvalId: string }>()
        .find((s) => s.callback === "expireTaskApproval"),
    );
    expect(schedule?.payload.taskId).toBe(taskId);
    // What the scheduler does when the time comes.
    await runInDurableObject(taskObject(agentId), (instance: AgentTasks) =>
      instance.expireTaskApproval(schedule!.payload),
    );
    const done = await waitForStatus(agentId, taskId, ["completed", "failed", "exhausted"]);
    expect(done.audit).toEqual([
      expect.objectContaining({ tool: "remember", ok: false, approval: "expired" }),
    ]);
    expect(await facts(agentId)).toEqual([]);
  });

  it("keeps the pending approval in the object's storage and re-arms its expiry once on a restart", async () => {
    const agentId = await gatedAgent();
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const taskId = await startTask(agentId);
    await waitForStatus(agentId, taskId, ["awaiting_approval"]);
    const expiries = await runInDurableObject(
      taskObject(agentId),
      async (instance: AgentTasks, state) => {
        const row = state.storage.sql
          .exec("SELECT status, state FROM tasks WHERE task_id = ?", taskId)
          .one();
        expect(row.status).toBe("awaiting_approval");
        expect(
          JSON.parse(String(row.state)).approval.checkpoint.pendingCalls.map(
            (call: { name: string }) => call.name,
          ),
        ).toEqual(["remember"]);
        // What a restarted object runs first.
        instance.onStart();
        await new Promise((resolve) => setTimeout(resolve, 50));
        return instance.getSchedules().filter((s) => s.callback === "expireTaskApproval").length;
      },
    );
    expect(expiries).toBe(1);
    expect(
      (
        await api("POST", `/agents/${agentId}/tasks/${taskId}/approval`, {
          body: { approve: true },
        })
      ).status,
    ).toBe(200);
    expect(
      (await waitForStatus(agentId, taskId, ["completed", "failed", "exhausted"])).status,
    ).toBe("completed");
    expect(await facts(agentId)).toEqual([FACT]);
  });

  it("a paused task does not hold a running slot: the agent's next task runs meanwhile", async () => {
    const agentId = await gatedAgent();
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [
            planReply(["Save the note"], ["The note is saved"]),
            planReply(["Say hello"], ["Hello is said"]),
          ],
          act: [
            { toolCalls: [{ name: "remember", arguments: { fact: FACT } }] },
            { text: "Hello." },
          ],
          reflect: [reflectReply(true)],
          evaluate: [evaluateReply([true], "Hello.")],
        }),
      ),
    );
    const first = await startTask(agentId);
    await waitForStatus(agentId, first, ["awaiting_approval"]);
    const second = await startTask(agentId);
    expect(
      (await waitForStatus(agentId, second, ["completed", "failed", "exhausted"])).status,
    ).toBe("completed");
    expect((await readTask(agentId, first)).status).toBe("awaiting_approval");
  });

  it("a token without messages:write cannot answer, nor can one limited to another agent", async () => {
    const agentId = await gatedAgent();
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const taskId = await startTask(agentId);
    await waitForStatus(agentId, taskId, ["awaiting_approval"]);
    const mint = async (scopes: string[], agents?: string[]) =>
      (
        await json<{ token: string }>(
          await api("POST", "/auth/tokens", {
            body: { name: "approver", scopes, ...(agents ? { agents } : {}) },
          }),
        )
      ).token;
    const reader = await mint(["agents:read"]);
    const elsewhere = await mint(["messages:write"], [await createTestAgent()]);
    expect(
      (
        await api("POST", `/agents/${agentId}/tasks/${taskId}/approval`, {
          body: { approve: true },
          token: reader,
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await api("POST", `/agents/${agentId}/tasks/${taskId}/approval`, {
          body: { approve: true },
          token: elsewhere,
        })
      ).status,
    ).toBe(403);
    expect((await readTask(agentId, taskId)).status).toBe("awaiting_approval");
    expect(await facts(agentId)).toEqual([]);
  });
});

describe("tool approval in scheduled tasks", () => {
  it("a scheduled task cannot run a tool that needs approval either", async () => {
    const agentId = await gatedAgent();
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const created = await json<{ scheduleId: string }>(
      await api("POST", `/agents/${agentId}/schedules`, {
        body: { goal: "Save the note", everySeconds: 3600 },
      }),
    );
    await runInDurableObject(taskObject(agentId), (instance: AgentTasks) =>
      instance.runSchedule({ scheduleId: created.scheduleId }),
    );
    let taskId = "";
    await vi.waitFor(
      async () => {
        const { tasks } = await json<{ tasks: { taskId: string; status: string }[] }>(
          await api("GET", `/agents/${agentId}/tasks`),
        );
        expect(tasks[0]?.status).toBe("awaiting_approval");
        taskId = tasks[0]!.taskId;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(taskId).not.toBe("");
    expect(await facts(agentId)).toEqual([]);
  });
});

describe("tool approval in Discord /task", () => {
  async function pausedDiscordTask() {
    const channel = snowflake();
    const user = snowflake();
    const agentId = await useAgentIn(channel, { toolApproval: ["remember"] });
    model.respondWith(standInResponder(scriptTask(rememberScript())));
    const ack = await post(
      command("task", {
        channel,
        user,
        options: [{ name: "goal", type: 3, value: "Save the note about the launch code" }],
      }),
    );
    expect(await ack.json()).toEqual({ type: 5 });
    let prompt: { approve: string; deny: string; content: string } | undefined;
    await vi.waitFor(
      () => {
        const call = discord.calls.find((c) => Array.isArray(c.body.components));
        expect(call).toBeDefined();
        const buttons = (
          call!.body.components as { components: { label: string; custom_id: string }[] }[]
        )[0]!.components;
        prompt = {
          approve: buttons.find((b) => b.label === "Approve")!.custom_id,
          deny: buttons.find((b) => b.label === "Deny")!.custom_id,
          content: String(call!.body.content),
        };
      },
      { timeout: 15_000, interval: 50 },
    );
    return { channel, user, agentId, prompt: prompt! };
  }

  it("a /task cannot run a tool that needs approval: it asks the person who started it", async () => {
    const { user, agentId, prompt } = await pausedDiscordTask();
    expect(prompt.content).toContain("wants to run `remember`");
    expect(prompt.content).toContain(`<@${user}>`);
    expect(await facts(agentId)).toEqual([]);
  });

  it("only the person who started the /task can approve it, and the click reaches the task, not the chat room", async () => {
    const { channel, user, agentId, prompt } = await pausedDiscordTask();
    const stranger = await json<{ data: { content: string } }>(
      await post(click(channel, snowflake(), prompt.approve)),
    );
    expect(stranger.data.content).toContain("Only the person who asked");
    expect(await facts(agentId)).toEqual([]);

    // The REST endpoint cannot answer for the person on Discord either.
    const { tasks } = await json<{ tasks: { taskId: string; status: string }[] }>(
      await api("GET", `/agents/${agentId}/tasks`),
    );
    expect(tasks[0]!.status).toBe("awaiting_approval");
    expect(
      (
        await api("POST", `/agents/${agentId}/tasks/${tasks[0]!.taskId}/approval`, {
          body: { approve: true },
        })
      ).status,
    ).toBe(409);
    expect(await facts(agentId)).toEqual([]);

    const answered = await json<{ type: number; data: { content: string } }>(
      await post(click(channel, user, prompt.approve)),
    );
    expect(answered).toMatchObject({
      type: 7,
      data: { content: expect.stringContaining("approved") },
    });
    await vi.waitFor(async () => expect(await facts(agentId)).toEqual([FACT]), {
      timeout: 15_000,
      interval: 50,
    });
    // The chat room of the channel never saw the click: it was never even woken (no journal).
    const rooms = await runInDurableObject(
      env.ROOMS.getByName(`${agentId}:discord:${channel}`),
      (_instance, state) =>
        state.storage.sql
          .exec("SELECT count(*) AS n FROM sqlite_master WHERE name = 'turn_journal'")
          .one(),
    );
    expect(Number(rooms.n)).toBe(0);
  });
});
