// Saved state outlives a deploy: every capture in test/fixtures/saved-state/ (rows exactly as an
// earlier version of the code wrote them) is put into fresh objects' storage and D1, and read back
// through the real code: journalled turns replayed and resumed, a paused turn approved, tasks
// listed, read and answered, posts read and a scheduled publishing step run. A change that stops
// old rows from reading fails here; so does a change of a Durable Object class's name or storage
// (the objects created before src/ was reorganised hold these rows).
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { approvalCustomId } from "../../src/clients/discord/approval.ts";
import { PUBLISH_STEP_SAVED_STATE } from "../../src/clients/instagram/post-publisher.ts";
import { NewerSavedStateError } from "../../src/db/json-column.ts";
import { ANSWER_FIELD, taskInputCustomId } from "../../src/clients/discord/task-input.ts";
import type { PostPublisher } from "../../src/durable-objects.ts";
import { TurnJournal } from "../../src/objects/conversation/turn-journal.ts";
import { TaskScheduleStore } from "../../src/objects/tasks/schedule-store.ts";
import { TaskStore } from "../../src/objects/tasks/task-store.ts";
import { api, createTestAgent, json, MODEL_HOST } from "../helpers/api.ts";
import { APP_ID, click, command, modalSubmit, post, snowflake } from "../helpers/discord.ts";
import {
  evaluateReply,
  oneStepScript,
  reflectReply,
  scriptTask,
  standInResponder,
} from "../helpers/task-script.ts";
import { createDiscordStandIn } from "../stand-ins/discord-stand-in.ts";
import { createGraphStandIn } from "../stand-ins/graph-stand-in.ts";
import {
  createOpenAIStandIn,
  type StandInResponder,
  type StandInStep,
} from "../stand-ins/openai-stand-in.ts";
import {
  captures,
  type FixtureAgent,
  type FixtureObject,
  fixture,
  insertRows,
  type Row,
  SAVED_STATE,
  type SavedStateFixture,
  savedValues,
} from "./saved-state-fixtures.ts";

const model = createOpenAIStandIn();
const discord = createDiscordStandIn();
const newGraph = () =>
  createGraphStandIn({
    userId: "17841400000000001",
    fetchMedia: (url) => exports.default.fetch(new Request(url)),
  });
let graph = newGraph();
/** Requests that left for anywhere else (a page a refused tool call would have read). */
const elsewhere: string[] = [];
vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.host === MODEL_HOST) return model.fetch(input, init);
  if (url.host === "discord.test") return discord.fetch(input, init);
  if (url.host === "graph.test") return graph.fetch(input, init);
  elsewhere.push(url.href);
  return new Response("not here", { status: 404 });
});
afterEach(() => {
  model.reset();
  discord.reset();
  elsewhere.length = 0;
});

const NOT_RUN_AGAIN =
  "Error: this call was started in an earlier attempt of the turn that did not finish (it may have exceeded the CPU limit); it is not run again";

/** The primary model's replies in order; side calls (facts, summaries) get an empty answer. */
function primary(...steps: StandInStep[]): StandInResponder {
  let next = 0;
  return (call) => {
    if (call.model !== "test-primary") return { text: '{"facts":[]}' };
    const step = steps[Math.min(next, steps.length - 1)]!;
    next += 1;
    return step;
  };
}

/** The agents the rows belong to, with their ids, settings and Discord channel (once each). */
async function ensureAgents(saved: SavedStateFixture): Promise<void> {
  for (const agent of saved.agents) {
    if ((await api("GET", `/agents/${agent.id}`)).status === 200) continue;
    await createTestAgent({
      id: agent.id,
      settings: agent.settings,
      ...(agent.plugins ? { plugins: agent.plugins } : {}),
    });
    if (agent.discordChannel) {
      const bound = await post(
        command("agent", {
          channel: agent.discordChannel,
          options: [{ name: "name", type: 3, value: agent.id }],
        }),
      );
      expect(bound.status).toBe(200);
    }
  }
}

/**
 * Starts the object (so its start-up, which prunes old rows and re-arms expiries, has run), then
 * writes the fixture's rows into its storage as they were.
 */
async function restore(stub: DurableObjectStub, object: FixtureObject): Promise<void> {
  await runInDurableObject(stub, async (instance, state) => {
    await (
      instance as unknown as { __unsafe_ensureInitialized(): Promise<void> }
    ).__unsafe_ensureInitialized();
    const { sql } = state.storage;
    new TurnJournal(sql).migrate();
    new TaskStore(sql).migrate();
    new TaskScheduleStore(sql).migrate();
    for (const [table, rows] of Object.entries(object.tables)) insertRows(sql, table, rows);
  });
}

function objectOf(saved: SavedStateFixture, name: string): FixtureObject {
  const found = saved.objects.find((object) => object.name === name);
  if (!found) throw new Error(`the fixture has no object named ${name}`);
  return found;
}

function agentOf(saved: SavedStateFixture, discord: boolean): FixtureAgent {
  const found = saved.agents.find((agent) => (agent.discordChannel !== undefined) === discord);
  if (!found) throw new Error("the fixture has no such agent");
  return found;
}

function rowsOf(object: FixtureObject, table: string): Row[] {
  return object.tables[table] ?? [];
}

/** A JSON column of a fixture row, parsed (whatever its saved-state version). */
function column<T>(row: Row | undefined, name: string): T {
  return JSON.parse(String(row?.[name])) as T;
}

function send(agentId: string, roomId: string, text: string, key: string) {
  return api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "carol", text, roomId },
    headers: { "idempotency-key": key },
  });
}

async function taskBody(agentId: string, taskId: string) {
  return json<{
    status: string;
    goal: string;
    result: { text: string } | null;
    audit: { tool: string; ok: boolean; approval?: string }[];
  }>(await api("GET", `/agents/${agentId}/tasks/${taskId}`));
}

async function finished(agentId: string, taskId: string): Promise<string> {
  let status = "";
  await vi.waitFor(
    async () => {
      status = (await taskBody(agentId, taskId)).status;
      expect(["completed", "failed", "exhausted", "cancelled"]).toContain(status);
    },
    { timeout: 20_000, interval: 50 },
  );
  return status;
}

for (const capture of captures()) {
  describe(`saved state ${capture}: AgentRoom's turn journal`, () => {
    const saved = fixture(capture, "agent-room");
    const rest = agentOf(saved, false);

    it("replays a journalled answer and a journalled failure by their Idempotency-Keys", async () => {
      await ensureAgents(saved);
      for (const roomId of ["answered", "failing"])
        await restore(
          env.ROOMS.getByName(`${rest.id}:${roomId}`),
          objectOf(saved, `${rest.id}:${roomId}`),
        );
      const answeredTurn = rowsOf(objectOf(saved, `${rest.id}:answered`), "turn_journal")[0];
      const answer = await send(rest.id, "answered", "What time is it?", "saved-state-answered");
      expect(answer.status).toBe(200);
      expect(answer.headers.get("idempotent-replayed")).toBe("true");
      expect(await json(answer)).toMatchObject({
        turnId: answeredTurn?.turn_id,
        reply: { text: "It is noon." },
      });
      const failure = await send(rest.id, "failing", "This one fails", "saved-state-failed");
      expect(failure.status).toBe(502);
      expect(await json(failure)).toMatchObject({
        error: { code: "model", message: expect.stringContaining("HTTP 400") },
      });
      expect(model.calls).toEqual([]);
    });

    it("resumes a turn cut off mid-turn: a finished call's output is reused, a started one is not run again", async () => {
      await ensureAgents(saved);
      const room = objectOf(saved, `${rest.id}:running`);
      await restore(env.ROOMS.getByName(room.name), room);
      const calls = rowsOf(room, "turn_tool_outputs");
      const finishedCall = calls.find((row) => String(row.output).includes('"finished"'));
      const startedCall = calls.find((row) => String(row.output).includes('"started"'));
      const journalled = column<{ output: { content: string } }>(finishedCall, "output");
      const url = (JSON.parse(String(startedCall?.call_key).split("\u0000")[1]!) as { url: string })
        .url;
      model.respondWith(
        primary(
          { toolCalls: [{ name: "current_time", arguments: {} }] },
          { toolCalls: [{ name: "read_url", arguments: { url } }] },
          { text: "Back again." },
        ),
      );
      // The client's retry of the cut-off request finds the turn in the journal and waits for it.
      const resumed = await send(rest.id, "running", "Read the held page", "saved-state-running");
      expect(resumed.status).toBe(200);
      expect(await json(resumed)).toMatchObject({ reply: { text: "Back again." } });
      const toolMessages = model
        .callsFor("test-primary")
        .flatMap((call) => call.messages.filter((message) => message.role === "tool"))
        .map((message) => message.content);
      expect(toolMessages).toContain(journalled.output.content);
      expect(toolMessages).toContain(NOT_RUN_AGAIN);
      expect(elsewhere.filter((href) => href.startsWith(url))).toEqual([]);
    });

    it("resumes a turn paused for a Discord approval when the person who asked approves it", async () => {
      await ensureAgents(saved);
      const agent = agentOf(saved, true);
      const channel = agent.discordChannel!;
      const room = objectOf(saved, `${agent.id}:discord:${channel}`);
      await restore(env.ROOMS.getByName(room.name), room);
      const turn = rowsOf(room, "turn_journal")[0];
      const pause = column<{
        approvalId: string;
        requesterId: string;
        arguments: { fact: string };
      }>(turn, "pause");
      const user = pause.requesterId.replace(/^discord:/, "");
      model.respondWith(primary({ text: "Saved: the bees." }));
      const token = `tok-${snowflake()}`;
      const approve = approvalCustomId({
        approve: true,
        approvalId: pause.approvalId,
        agentId: agent.id,
        target: "room",
      })!;
      const answered = await json<{ type: number; data: { content: string } }>(
        await post(click(channel, user, approve, token)),
      );
      expect(answered.type).toBe(7);
      expect(answered.data.content).toMatch(/approved: running `remember`/);
      await vi.waitFor(
        () =>
          expect(discord.calls).toContainEqual(
            expect.objectContaining({
              method: "POST",
              path: `/api/v10/webhooks/${APP_ID}/${token}`,
              body: expect.objectContaining({ content: "Saved: the bees." }),
            }),
          ),
        { timeout: 15_000 },
      );
      await vi.waitFor(async () => {
        const listed = await json<{ memories: { type: string; text: string }[] }>(
          await api("GET", `/memories?agentId=${agent.id}&userId=${pause.requesterId}`),
        );
        expect(listed.memories.map((memory) => memory.text)).toContain(pause.arguments.fact);
      });
    });
  });

  describe(`saved state ${capture}: AgentTasks' tasks, events, audit and schedules`, () => {
    const saved = fixture(capture, "agent-tasks");
    const rest = agentOf(saved, false);
    const onDiscord = agentOf(saved, true);

    it("lists and reads the tasks with their events, audit and schedules, and answers a paused one", async () => {
      await ensureAgents(saved);
      const object = objectOf(saved, rest.id);
      await restore(env.TASKS.getByName(rest.id), object);
      const tasks = rowsOf(object, "tasks");
      const done = tasks.find((row) => row.status === "completed")!;
      const paused = tasks.find((row) => row.status === "awaiting_approval")!;

      const listing = await api("GET", `/agents/${rest.id}/tasks`);
      const listed = await json<{ tasks: { taskId: string; status: string }[] }>(listing);
      expect(listing.status, JSON.stringify(listed)).toBe(200);
      expect(listed.tasks.map((task) => [task.taskId, task.status])).toEqual([
        [paused.task_id, "awaiting_approval"],
        [done.task_id, "completed"],
      ]);
      const read = await taskBody(rest.id, String(done.task_id));
      expect(read).toMatchObject({ status: "completed", result: { text: "It's noon (UTC)." } });
      expect(read.audit).toEqual([expect.objectContaining({ tool: "current_time", ok: true })]);
      const events = await runInDurableObject(env.TASKS.getByName(rest.id), (_i, state) =>
        new TaskStore(state.storage.sql).events(String(done.task_id), 0, 100),
      );
      expect(events.map((entry) => entry.event.type)).toEqual(
        rowsOf(object, "task_events")
          .filter((row) => row.task_id === done.task_id)
          .map((row) => column<{ type: string }>(row, "data").type),
      );
      const schedules = await json<{ schedules: { goal: string; every?: number }[] }>(
        await api("GET", `/agents/${rest.id}/schedules`),
      );
      expect(schedules.schedules).toEqual([expect.objectContaining({ goal: "Say good morning" })]);

      model.respondWith(
        standInResponder(
          scriptTask({
            act: [{ text: "Saved the note." }],
            reflect: [reflectReply(true)],
            evaluate: [evaluateReply([true], "Saved.")],
          }),
        ),
      );
      const approved = await api("POST", `/agents/${rest.id}/tasks/${paused.task_id}/approval`, {
        body: { approve: true },
      });
      expect(approved.status).toBe(200);
      expect(await finished(rest.id, String(paused.task_id))).toBe("completed");
      expect((await taskBody(rest.id, String(paused.task_id))).audit).toEqual([
        expect.objectContaining({ tool: "remember", ok: true, approval: "approved" }),
      ]);
    });

    it("answers a Discord task's question through its modal and its approval with a click", async () => {
      await ensureAgents(saved);
      const object = objectOf(saved, onDiscord.id);
      await restore(env.TASKS.getByName(onDiscord.id), object);
      const channel = onDiscord.discordChannel!;
      const tasks = rowsOf(object, "tasks");
      const asking = tasks.find((row) => row.status === "needs_input")!;
      const waiting = tasks.find((row) => row.status === "awaiting_approval")!;
      const askingState = column<{ requestedBy: string; input: { inputId: string } }>(
        asking,
        "state",
      );
      const user = askingState.requestedBy.replace(/^discord:/, "");
      expect(column<{ inputId: string }>(asking, "input_prompt").inputId).toBe(
        askingState.input.inputId,
      );

      model.respondWith(standInResponder(scriptTask(oneStepScript("Booked for 4."))));
      const target = { inputId: askingState.input.inputId, agentId: onDiscord.id };
      const modal = await json<{ type: number; data: { custom_id: string } }>(
        await post(click(channel, user, taskInputCustomId(target, "button")!)),
      );
      expect(modal).toMatchObject({
        type: 9,
        data: { custom_id: taskInputCustomId(target, "modal") },
      });
      const answered = await json<{ type: number; data: { content: string } }>(
        await post(modalSubmit(channel, user, modal.data.custom_id, { [ANSWER_FIELD]: "4" })),
      );
      expect(answered).toMatchObject({
        type: 7,
        data: { content: expect.stringContaining("answered: 4") },
      });
      expect(await finished(onDiscord.id, String(asking.task_id))).toBe("completed");

      const approval = column<{ approval: { approvalId: string } }>(waiting, "state").approval;
      expect(column<{ approvalId: string }>(waiting, "approval_prompt").approvalId).toBe(
        approval.approvalId,
      );
      model.respondWith(
        standInResponder(
          scriptTask({
            act: [{ text: "Saved the note." }],
            reflect: [reflectReply(true)],
            evaluate: [evaluateReply([true], "Saved.")],
          }),
        ),
      );
      const approve = approvalCustomId({
        approve: true,
        approvalId: approval.approvalId,
        agentId: onDiscord.id,
        target: "task",
      })!;
      const clicked = await json<{ type: number; data: { content: string } }>(
        await post(click(channel, user, approve)),
      );
      expect(clicked).toMatchObject({
        type: 7,
        data: { content: expect.stringContaining("approved") },
      });
      expect(await finished(onDiscord.id, String(waiting.task_id))).toBe("completed");
    });
  });

  describe(`saved state ${capture}: Instagram posts and the PostPublisher's scheduled step`, () => {
    const saved = fixture(capture, "post-publisher");
    const agent = saved.agents[0]!;

    it("reads each stored post, and the scheduled step finishes the one still processing", async () => {
      await ensureAgents(saved);
      const posts = saved.d1.media_posts ?? [];
      for (const row of posts) {
        const columns = Object.keys(row);
        await env.DB.prepare(
          `INSERT INTO media_posts (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
        )
          .bind(...columns.map((name) => row[name]))
          .run();
      }
      const status = async (postId: unknown) =>
        json<{
          status: string;
          caption: string;
          permalink: string | null;
          error: { code: string } | null;
          items: unknown[];
        }>(await api("GET", `/agents/${agent.id}/media/${String(postId)}`));
      for (const row of posts) {
        const read = await status(row.id);
        expect(read).toMatchObject({
          status: row.status,
          caption: row.caption,
          permalink: row.permalink,
          error: row.error === null ? null : { code: column<{ code: string }>(row, "error").code },
        });
        expect(read.items).toHaveLength(column<unknown[]>(row, "items").length);
      }

      const publisher = saved.objects[0]!;
      const step = publisher.schedules.find((schedule) => schedule.callback === "publishStep")!;
      const processing = posts.find((row) => row.status === "processing")!;
      graph = newGraph();
      (graph.containers as unknown[]).push({
        id: String(processing.container_id),
        params: {},
        statuses: ["FINISHED"],
        published: false,
      });
      await runInDurableObject(env.PUBLISHER.getByName(agent.id), (instance: PostPublisher) =>
        instance.publishStep(step.payload as { postId: string }),
      );
      expect(await status(processing.id)).toMatchObject({
        status: "published",
        permalink: expect.stringMatching(/^https:\/\/www\.instagram\.com\/p\//),
      });
    });
  });
}

describe("the saved-state fixtures", () => {
  const held = captures().flatMap((capture) =>
    (["agent-room", "agent-tasks", "post-publisher"] as const).flatMap((file) =>
      savedValues(fixture(capture, file)),
    ),
  );

  it("hold every stored shape at the version this code writes (a new version needs a new capture)", () => {
    const shapes = [...Object.values(SAVED_STATE).flatMap(Object.values), PUBLISH_STEP_SAVED_STATE];
    const missing = shapes.filter(
      (shape) => !held.some((value) => value.shape === shape && value.version === shape.version),
    );
    expect(missing.map((shape) => shape.version)).toEqual([]);
    expect(held.filter((value) => value.version > value.shape.version)).toEqual([]);
  });
});

describe("a row written by a newer version of the code", () => {
  const latest = captures().at(-1)!;

  /** The row's JSON column with its version raised past what this code reads. */
  function newer(text: unknown): string {
    const value = JSON.parse(String(text)) as Record<string, unknown>;
    return JSON.stringify({ ...value, v: 99 });
  }

  it("is refused with an error naming the row, its version and what this code reads", async () => {
    const saved = fixture(latest, "agent-room");
    const room = objectOf(saved, `${agentOf(saved, false).id}:answered`);
    const turn = rowsOf(room, "turn_journal")[0]!;
    const thrown = await runInDurableObject(
      env.ROOMS.getByName(`refused:${latest}`),
      (_instance, state) => {
        const journal = new TurnJournal(state.storage.sql);
        journal.migrate();
        insertRows(state.storage.sql, "turn_journal", [{ ...turn, outcome: newer(turn.outcome) }]);
        try {
          journal.byTurnId(String(turn.turn_id));
          return null;
        } catch (error) {
          return error instanceof NewerSavedStateError ? error.message : String(error);
        }
      },
    );
    expect(thrown).toBe(
      `turn ${turn.turn_id}: outcome in this object's storage was written by a newer version of the code (saved-state version 99; this version reads versions 1 to 1)`,
    );
  });

  it("makes a task unreadable (an internal error over the API), and a scheduled step fail", async () => {
    const saved = fixture(latest, "agent-tasks");
    await ensureAgents(saved);
    const agent = agentOf(saved, false);
    const object = objectOf(saved, agent.id);
    const stored = rowsOf(object, "tasks").find((row) => row.status === "completed")!;
    // Beside the capture's own rows, if the object already holds them.
    const task: Row = { ...stored, seq: 1_000, task_id: crypto.randomUUID() };
    await restore(env.TASKS.getByName(agent.id), {
      ...object,
      tables: { tasks: [{ ...task, state: newer(task.state) }] },
    });
    // Over the API it is an internal error (the message stays in the object's log)...
    const response = await api("GET", `/agents/${agent.id}/tasks/${task.task_id}`);
    expect(response.status).toBe(500);
    expect(await json(response)).toMatchObject({ error: { code: "internal" } });
    // ...which names the task, the column and the versions.
    const message = await runInDurableObject(env.TASKS.getByName(agent.id), (_i, state) => {
      try {
        new TaskStore(state.storage.sql).get(String(task.task_id));
        return null;
      } catch (error) {
        return error instanceof NewerSavedStateError ? error.message : String(error);
      }
    });
    expect(message).toBe(
      `task ${task.task_id}: state in this object's storage was written by a newer version of the code (saved-state version 99; this version reads versions 1 to 1)`,
    );

    const refused = await runInDurableObject(
      env.PUBLISHER.getByName(agent.id),
      async (instance: PostPublisher) => {
        try {
          await instance.publishStep({ v: 99, postId: "post_0000000000000000" });
          return null;
        } catch (error) {
          return error instanceof NewerSavedStateError ? error.message : String(error);
        }
      },
    );
    expect(refused).toBe(
      "a scheduled publishing step in this object's storage was written by a newer version of the code (saved-state version 99; this version reads versions 1 to 1)",
    );
  });
});
