// Captures what this version of the code writes to the storage that outlives a deploy, by running
// it: turns in AgentRoom's journal (answered, failed, cut off mid-turn with its tool calls, paused
// for a Discord approval with the prompt posted), AgentTasks' tasks with their events, audit and
// schedules (finished, paused for an approval over REST and on Discord, waiting on a Discord
// question), and Instagram posts (their state in D1, the publisher's scheduled step). The rows are
// the saved-state fixtures (test/fixtures/saved-state/). To add a capture after changing a stored
// shape: set SAVED_STATE_CAPTURE below, run this file alone
// (`npx vitest run --project main test/objects/saved-state-capture.test.ts`), copy each printed
// `saved-state <file> <json>` line's JSON into test/fixtures/saved-state/<n>-<what>/<file>.json
// (n: the next number), list the folder in test/objects/saved-state-fixtures.ts, and set it back.
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, inject, it, vi } from "vitest";
import type { AgentRoom, AgentTasks, PostPublisher } from "../../src/durable-objects.ts";
import { ADMIN_TOKEN, api, createTestAgent, json, MODEL_HOST } from "../helpers/api.ts";
import { chat, command, post, snowflake } from "../helpers/discord.ts";
import { discordRoom, settledJournal } from "../helpers/room-journal.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  specReply,
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
  type FixtureAgent,
  type FixtureFile,
  type FixtureObject,
  type Row,
  type SavedStateFixture,
  savedValues,
} from "./saved-state-fixtures.ts";

/** Set to print the captured rows (one `saved-state <file> <json>` line per fixture file). */
const SAVED_STATE_CAPTURE = false;

const model = createOpenAIStandIn();
const discord = createDiscordStandIn();
const graph = createGraphStandIn({
  userId: "17841400000000001",
  fetchMedia: (url) => exports.default.fetch(new Request(url)),
});
/** A page read_url fetches that answers only once released (so its call stays "started"). */
const HELD_PAGE = "/saved-state-held";
let pageHeld = false;
let pageReleased = false;
const realFetch = globalThis.fetch;
vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.host === MODEL_HOST) return model.fetch(input, init);
  if (url.host === "discord.test") return discord.fetch(input, init);
  if (url.host === "graph.test") return graph.fetch(input, init);
  if (url.pathname === HELD_PAGE) {
    // Polled here rather than resolved by the test: a promise the test resolved would carry on
    // in the test's context, not the room's.
    pageHeld = true;
    while (!pageReleased) await new Promise((resolve) => setTimeout(resolve, 20));
    return new Response("<html><body><p>A page held back for a while.</p></body></html>", {
      headers: { "content-type": "text/html" },
    });
  }
  return realFetch(input, init);
});

const GATED = { toolApproval: ["remember"], memory: { factsEvery: 1000 } };

function rows(sql: SqlStorage, table: string): Row[] {
  const made = sql
    .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table)
    .toArray();
  if (made.length === 0) return [];
  return sql.exec(`SELECT * FROM ${table} ORDER BY rowid`).toArray() as Row[];
}

async function capture(
  stub: DurableObjectStub,
  name: string,
  tables: string[],
): Promise<FixtureObject> {
  return runInDurableObject(stub, (instance, state) => ({
    name,
    tables: Object.fromEntries(tables.map((table) => [table, rows(state.storage.sql, table)])),
    schedules: (instance as unknown as AgentRoom | AgentTasks | PostPublisher)
      .getSchedules()
      .map(({ callback, payload }) => ({ callback, payload }))
      .sort((a, b) => a.callback.localeCompare(b.callback)),
  }));
}

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

async function waitFor<T>(check: () => Promise<T> | T, timeout = 20_000): Promise<T> {
  let value!: T;
  await vi.waitFor(
    async () => {
      value = await check();
    },
    { timeout, interval: 50 },
  );
  return value;
}

/** A JPEG's structure: SOI, JFIF, a baseline frame header with the size, a scan, EOI. */
function jpeg(width: number, height: number): Uint8Array {
  return new Uint8Array(
    [
      [0xff, 0xd8],
      [0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0],
      [0xff, 0xc0, 0, 0x11, 8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x22],
      [0, 2, 0x11, 1, 3, 0x11, 1],
      [0xff, 0xda, 0, 0x0c, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0],
      Array.from({ length: 256 }, (_, i) => (i * 7) % 255),
      [0xff, 0xd9],
    ].flat(),
  );
}

async function upload(agentId: string, photos: number, caption: string): Promise<string> {
  const form = new FormData();
  for (let i = 0; i < photos; i++)
    form.append("file", new File([jpeg(1080, 1080)], `photo-${i}.jpg`));
  form.append("caption", caption);
  if (photos === 1) form.append("altText", "A photo for the saved-state fixtures");
  const response = await exports.default.fetch(
    new Request(`https://agents.test/agents/${agentId}/media`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    }),
  );
  const body = await json<{ postId: string }>(response);
  expect(response.status, JSON.stringify(body)).toBe(202);
  return body.postId;
}

async function postStatus(agentId: string, postId: string): Promise<string> {
  const response = await api("GET", `/agents/${agentId}/media/${postId}`);
  return (await json<{ status: string }>(response)).status;
}

/** Runs a post's scheduled steps, as the alarm would, until it is published or failed. */
async function drive(agentId: string, postId: string): Promise<string> {
  const publisher = env.PUBLISHER.getByName(agentId);
  for (let step = 0; step < 12; step++) {
    const status = await postStatus(agentId, postId);
    if (status === "published" || status === "failed") return status;
    await runInDurableObject(publisher, (instance: PostPublisher) =>
      instance.publishStep({ postId }),
    );
  }
  return postStatus(agentId, postId);
}

async function taskStatus(agentId: string, taskId: string): Promise<string> {
  return (await json<{ status: string }>(await api("GET", `/agents/${agentId}/tasks/${taskId}`)))
    .status;
}

function print(file: FixtureFile, fixture: SavedStateFixture): void {
  if (SAVED_STATE_CAPTURE) console.log(`saved-state ${file} ${JSON.stringify(fixture)}`);
}

const WRITTEN = "captured by test/objects/saved-state-capture.test.ts";

describe("saved state as this version writes it", () => {
  it("captures the turn journal, the tasks and the posts", { timeout: 180_000 }, async () => {
    // ---- an agent reached over REST: turns, tasks, a schedule, posts ----------------------
    const rest: FixtureAgent = { id: "", settings: GATED, plugins: ["web"] };
    rest.id = await createTestAgent({ settings: rest.settings, plugins: rest.plugins });
    const send = (roomId: string, text: string, key: string) =>
      api("POST", `/agents/${rest.id}/messages`, {
        body: { userId: "carol", text, roomId },
        headers: { "idempotency-key": key },
      });

    // An answered turn that used a tool, kept for its Idempotency-Key.
    model.respondWith(
      primary({ toolCalls: [{ name: "current_time", arguments: {} }] }, { text: "It is noon." }),
    );
    expect((await send("answered", "What time is it?", "saved-state-answered")).status).toBe(200);
    await settledJournal(`${rest.id}:answered`);

    // A turn the model failed.
    model.respondWith((call) =>
      call.model === "test-primary" || call.model === "test-fallback"
        ? { status: 400, body: { error: { message: "bad request" } } }
        : { text: '{"facts":[]}' },
    );
    const failed = await send("failing", "This one fails", "saved-state-failed");
    expect(failed.status).toBeGreaterThanOrEqual(400);
    await settledJournal(`${rest.id}:failing`);

    // A turn cut off while it runs: one tool call finished, one started and not finished.
    const page = `${inject("webPeers").baseUrl}${HELD_PAGE}`;
    model.respondWith(
      primary(
        { toolCalls: [{ name: "current_time", arguments: {} }] },
        { toolCalls: [{ name: "read_url", arguments: { url: page } }] },
        { text: "The page says it was held back." },
      ),
    );
    const running = send("running", "Read the held page", "saved-state-running");
    await waitFor(() => expect(pageHeld).toBe(true));
    const runningRoom = await capture(env.ROOMS.getByName(`${rest.id}:running`), "", [
      "turn_journal",
      "turn_tool_outputs",
    ]);
    pageReleased = true;
    expect((await running).status).toBe(200);
    await settledJournal(`${rest.id}:running`);

    // A task that finished, with a tool call in its audit.
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Check the time", "Answer"], ["The time is given"])],
          act: [
            { toolCalls: [{ name: "current_time", arguments: {} }] },
            { text: "It is noon UTC." },
            { text: "It's noon (UTC)." },
          ],
          reflect: [reflectReply(true), reflectReply(true)],
          evaluate: [evaluateReply([true], "It's noon (UTC).")],
        }),
      ),
    );
    const finished = await json<{ taskId: string }>(
      await api("POST", `/agents/${rest.id}/tasks`, { body: { goal: "What time is it?" } }),
    );
    await waitFor(async () => expect(await taskStatus(rest.id, finished.taskId)).toBe("completed"));

    // A task paused for an approval, to be answered over the API.
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Save the note"], ["The note is saved"])],
          act: [
            { toolCalls: [{ name: "remember", arguments: { fact: "The kettle is blue" } }] },
            { text: "Saved the note." },
          ],
          reflect: [reflectReply(true)],
          evaluate: [evaluateReply([true], "Saved.")],
        }),
      ),
    );
    const paused = await json<{ taskId: string }>(
      await api("POST", `/agents/${rest.id}/tasks`, { body: { goal: "Save the kettle note" } }),
    );
    await waitFor(async () =>
      expect(await taskStatus(rest.id, paused.taskId)).toBe("awaiting_approval"),
    );

    // A schedule.
    expect(
      (
        await api("POST", `/agents/${rest.id}/schedules`, {
          body: { goal: "Say good morning", everySeconds: 86_400 },
        })
      ).status,
    ).toBe(201);

    // Posts: published (a photo, a carousel), failed (no publishing quota left), and one whose
    // next step is waiting on the publisher's scheduler.
    const photo = await upload(rest.id, 1, "Golden hour #sunset");
    expect(await drive(rest.id, photo)).toBe("published");
    const carousel = await upload(rest.id, 2, "Two views");
    expect(await drive(rest.id, carousel)).toBe("published");
    graph.quota = { used: 100, total: 100 };
    const refused = await upload(rest.id, 1, "Over the limit");
    expect(await drive(rest.id, refused)).toBe("failed");
    graph.quota = { used: 0, total: 100 };
    graph.statusSequences = [["IN_PROGRESS", "IN_PROGRESS", "FINISHED"]];
    const waiting = await upload(rest.id, 1, "Still processing");
    await waitFor(async () => expect(await postStatus(rest.id, waiting)).toBe("processing"));
    const publisher = await waitFor(async () => {
      const captured = await capture(env.PUBLISHER.getByName(rest.id), rest.id, []);
      expect(captured.schedules.map((schedule) => schedule.payload)).toContainEqual(
        expect.objectContaining({ postId: waiting }),
      );
      return captured;
    });

    // ---- an agent on a Discord channel: a paused turn, a paused task, a question ------------
    const channel = snowflake();
    const user = snowflake();
    const onDiscord: FixtureAgent = { id: "", settings: GATED, discordChannel: channel };
    onDiscord.id = await createTestAgent({ settings: onDiscord.settings });
    await post(
      command("agent", { channel, options: [{ name: "name", type: 3, value: onDiscord.id }] }),
    );
    const room = discordRoom(onDiscord.id, channel);

    model.respondWith(
      primary({
        toolCalls: [{ name: "remember", arguments: { fact: "The bees are called Roof" } }],
      }),
    );
    await post(chat(channel, "please remember my bees' name", { user }));
    await waitFor(() =>
      runInDurableObject(env.ROOMS.getByName(room), (_instance: AgentRoom, state) =>
        expect(
          state.storage.sql
            .exec("SELECT json_extract(pause, '$.prompt') AS prompt FROM turn_journal")
            .one().prompt,
        ).not.toBeNull(),
      ),
    );

    const goal = "Book a table for dinner";
    model.respondWith(
      standInResponder(
        scriptTask({
          spec: [
            specReply(goal, {
              missing: [{ input: "people", question: "For how many people?", required: true }],
            }),
          ],
        }),
      ),
    );
    await post(
      command("task", { channel, user, options: [{ name: "goal", type: 3, value: goal }] }),
    );
    await waitFor(async () => {
      const stored = await runInDurableObject(
        env.TASKS.getByName(onDiscord.id),
        (_instance: AgentTasks, state) =>
          state.storage.sql.exec("SELECT status, input_prompt FROM tasks").toArray(),
      );
      expect(stored).toEqual([{ status: "needs_input", input_prompt: expect.any(String) }]);
    });
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Save the note"], ["The note is saved"])],
          act: [
            { toolCalls: [{ name: "remember", arguments: { fact: "The binder is blue" } }] },
            { text: "Saved the note." },
          ],
        }),
      ),
    );
    await post(
      command("task", {
        channel,
        user,
        options: [{ name: "goal", type: 3, value: "Save the note about the binder" }],
      }),
    );
    await waitFor(async () => {
      const stored = await runInDurableObject(
        env.TASKS.getByName(onDiscord.id),
        (_instance: AgentTasks, state) =>
          state.storage.sql.exec("SELECT status, approval_prompt FROM tasks").toArray(),
      );
      expect(stored).toEqual([
        { status: "needs_input", approval_prompt: null },
        { status: "awaiting_approval", approval_prompt: expect.any(String) },
      ]);
    });

    // ---- the captures -----------------------------------------------------------------------
    const journal = ["turn_journal", "turn_tool_outputs"];
    const agentRoom: SavedStateFixture = {
      written: WRITTEN,
      agents: [rest, onDiscord],
      objects: [
        await capture(env.ROOMS.getByName(`${rest.id}:answered`), `${rest.id}:answered`, journal),
        await capture(env.ROOMS.getByName(`${rest.id}:failing`), `${rest.id}:failing`, journal),
        { ...runningRoom, name: `${rest.id}:running` },
        await capture(env.ROOMS.getByName(room), room, journal),
      ],
      d1: {},
    };
    const taskTables = ["tasks", "task_events", "task_audit", "task_schedules"];
    const agentTasks: SavedStateFixture = {
      written: WRITTEN,
      agents: [rest, onDiscord],
      objects: [
        await capture(env.TASKS.getByName(rest.id), rest.id, taskTables),
        await capture(env.TASKS.getByName(onDiscord.id), onDiscord.id, taskTables),
      ],
      d1: {},
    };
    const posts = await env.DB.prepare(
      "SELECT * FROM media_posts WHERE agent_id = ? ORDER BY created_at, id",
    )
      .bind(rest.id)
      .all<Row>();
    const postPublisher: SavedStateFixture = {
      written: WRITTEN,
      agents: [rest],
      objects: [publisher],
      d1: { media_posts: posts.results },
    };
    // What this version writes is the version of its shape it reads as current, and every JSON
    // column says so itself (the publisher's step payload is written untagged at version 1).
    const written = [agentRoom, agentTasks, postPublisher].flatMap(savedValues);
    expect(written.length).toBeGreaterThan(40);
    expect(
      written.filter((value) => value.version !== value.shape.version).map((value) => value.where),
    ).toEqual([]);
    expect(
      written
        .filter((value) => value.kind === "column" && !value.tagged)
        .map((value) => value.where),
    ).toEqual([]);
    print("agent-room", agentRoom);
    print("agent-tasks", agentTasks);
    print("post-publisher", postPublisher);
  });
});
