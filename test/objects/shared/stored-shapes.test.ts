// JSON columns in Durable Object SQLite (the turn journal, the task store) are checked when read
// back: what this version wrote comes back as it was (fields it does not know included), rows
// written before a field existed get its default, and a row in another shape is an error that
// names the row and the field. Run in a RateLimiter's SQLite, which holds nothing else.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { JsonColumnError } from "../../../src/db/json-column.ts";
import { TaskStore } from "../../../src/objects/tasks/task-store.ts";
import { TurnJournal } from "../../../src/objects/conversation/turn-journal.ts";
import { newTaskState } from "../../../src/runtime/tasks/task-types.ts";
import type { TurnInput, TurnOutcome } from "../../../src/runtime/turn/turn-types.ts";

function inStorage<R>(name: string, work: (sql: SqlStorage) => R): Promise<R> {
  return runInDurableObject(env.LIMITS.getByName(name), (_instance, state) =>
    work(state.storage.sql),
  );
}

const input: TurnInput = {
  turnId: "t1",
  agentId: "agent-a",
  roomId: "room-1",
  userId: "dora",
  text: "hello",
  attachments: [{ url: "https://cdn.discordapp.com/a.png", title: "a.png" }],
  source: "rest",
  isDirect: true,
  mentioned: false,
  fromBot: false,
  receivedAt: 1_700_000_000_000,
};

const outcome: TurnOutcome = {
  turnId: "t1",
  status: "replied",
  reply: { text: "hi" },
  actions: ["REPLY"],
  toolCalls: [
    {
      id: "c1",
      name: "remember",
      arguments: { fact: "x" },
      ok: true,
      output: "ok",
      cached: false,
      durationMs: 3,
      model: "m",
    },
  ],
  usage: { promptTokens: 10, completionTokens: 2, modelCalls: 1 },
  model: "m",
  stopReason: "completed",
  memories: [{ id: "m1", type: "fact", text: "likes tea", score: null }],
  messageId: "in-1",
  replyId: "out-1",
  replyMemory: null,
};

describe("the turn journal's JSON columns", () => {
  it("reads a turn back as it was written, keeping fields this version does not know", async () => {
    const entry = await inStorage("shapes-journal-1", (sql) => {
      const journal = new TurnJournal(sql);
      journal.migrate();
      const delivery = { kind: "discord", channelId: "42", extra: { nested: true } };
      journal.insert({ input: { ...input, ...{ futureField: 7 } }, delivery, now: 1 });
      journal.markReplied("t1", outcome, 2);
      return journal.byTurnId("t1");
    });
    expect(entry?.input).toEqual({ ...input, futureField: 7 });
    expect(entry?.outcome).toEqual(outcome);
    expect(entry?.delivery).toEqual({ kind: "discord", channelId: "42", extra: { nested: true } });
  });

  it("gives an outcome journalled before memories and replyMemory existed their defaults", async () => {
    const { memories: _memories, replyMemory: _replyMemory, ...older } = outcome;
    const entry = await inStorage("shapes-journal-2", (sql) => {
      const journal = new TurnJournal(sql);
      journal.migrate();
      journal.insert({ input, now: 1 });
      sql.exec(
        "UPDATE turn_journal SET status = 'replied', outcome = ? WHERE turn_id = 't1'",
        JSON.stringify(older),
      );
      return journal.byTurnId("t1");
    });
    expect(entry?.outcome).toEqual({ ...older, memories: [], replyMemory: null });
  });

  it("names the turn and the field when a stored column is not in the shape this version writes", async () => {
    const thrown = await inStorage("shapes-journal-3", (sql) => {
      const journal = new TurnJournal(sql);
      journal.migrate();
      journal.insert({ input, now: 1 });
      sql.exec(
        "UPDATE turn_journal SET outcome = ? WHERE turn_id = 't1'",
        JSON.stringify({ ...outcome, usage: { promptTokens: "10" } }),
      );
      try {
        journal.byTurnId("t1");
        return null;
      } catch (error) {
        return {
          isShapeError: error instanceof JsonColumnError,
          message: error instanceof Error ? error.message : String(error),
        };
      }
    });
    expect(thrown?.isShapeError).toBe(true);
    expect(thrown?.message).toMatch(
      /^turn t1: outcome in this object's storage is not in the expected shape \(usage\.promptTokens: /,
    );
  });
});

describe("the task store's JSON columns", () => {
  const state = newTaskState({
    taskId: "task-1",
    agentId: "agent-a",
    roomId: "task:task-1",
    goal: "tidy up",
    limits: { maxSteps: 3, maxFailures: 1, budgetTokens: 1_000, wallClockMs: 60_000 },
    source: "api",
    now: 5,
  });

  it("gives a task stored before tool approval the defaults it had then", async () => {
    const { requestedBy: _requestedBy, approval: _approval, pausedMs: _pausedMs, ...older } = state;
    const stored = await inStorage("shapes-tasks-1", (sql) => {
      const store = new TaskStore(sql);
      store.migrate();
      store.insert(state, null, 5);
      sql.exec("UPDATE tasks SET state = ? WHERE task_id = 'task-1'", JSON.stringify(older));
      return store.get("task-1");
    });
    expect(stored?.state).toEqual(state);
  });

  it("names the task and the event when a stored event is of a kind this version does not know", async () => {
    const message = await inStorage("shapes-tasks-2", (sql) => {
      const store = new TaskStore(sql);
      store.migrate();
      store.insert(state, null, 5);
      const id = store.appendEvent("task-1", { type: "task_started" }, 6);
      expect(store.events("task-1", 0, 10)).toEqual([
        { id, event: { type: "task_started", taskId: "task-1", at: 6 } },
      ]);
      sql.exec(
        "UPDATE task_events SET data = ? WHERE id = ?",
        JSON.stringify({ type: "teleported", taskId: "task-1", at: 7 }),
        id,
      );
      try {
        store.events("task-1", 0, 10);
        return null;
      } catch (error) {
        return error instanceof JsonColumnError
          ? error.message
          : `not a shape error: ${String(error)}`;
      }
    });
    expect(message).toMatch(
      /^task task-1: event \d+ in this object's storage is not in the expected shape \(type: /,
    );
  });
});
