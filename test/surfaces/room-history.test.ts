// A room's history (`GET /agents/:agentId/rooms/:roomId/messages`) tells each reply's turn as the
// stream told it: model, usage, model calls, stop reason and the memories it used; a failed turn
// shows as an entry with its error. Replies stored before those were kept still load, without them.
import { describe, expect, it } from "vitest";
import { api, createTestAgent, json, mintToken, useModelStandIn } from "../helpers/api.ts";
import { parseEvents } from "../helpers/sse.ts";

const model = useModelStandIn();
const quiet = { settings: { memory: { factsEvery: 1000 } } };

interface UsedMemory {
  id: string;
  type: string;
  text: string;
  score: number | null;
}

interface HistoryEntry {
  id: string;
  role: "user" | "agent";
  userId: string | null;
  text: string;
  createdAt: number;
  turn?: {
    turnId: string;
    model?: string | null;
    usage?: { promptTokens: number; completionTokens: number; modelCalls: number };
    stopReason?: string;
    memories?: UsedMemory[];
    error?: { code: string; message: string };
  };
}

async function history(
  agentId: string,
  roomId = "user:alice",
  token?: string,
): Promise<HistoryEntry[]> {
  const response = await api(
    "GET",
    `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages?limit=10`,
    { token },
  );
  expect(response.status).toBe(200);
  return (await json<{ messages: HistoryEntry[] }>(response)).messages;
}

async function remember(agentId: string, userId: string, text: string): Promise<void> {
  const response = await api("POST", "/memories", {
    body: { memories: [{ agentId, type: "fact", userId, text }] },
  });
  expect(response.status).toBe(201);
}

describe("a room's history", () => {
  it("gives each reply the turn the stream told: model, usage, model calls and memories used", async () => {
    const agentId = await createTestAgent(quiet);
    await remember(agentId, "alice", "Alice keeps bees on her roof");
    // Longer than the preview a watcher gets: the history cuts it as the stream did.
    await remember(agentId, "alice", `Alice's hive notes: ${"busy ".repeat(150)}`);
    model.script({ text: "How are the bees?", usage: { promptTokens: 80, completionTokens: 5 } });
    const response = await api("POST", `/agents/${agentId}/messages`, {
      headers: { accept: "text/event-stream" },
      body: { userId: "alice", userName: "Alice", text: "Hello again" },
    });
    const events = parseEvents(await response.text());
    const streamed = events.find((e) => e.event === "memories")!.data as {
      memories: UsedMemory[];
    };
    const done = events.at(-1)!.data as { turnId: string };
    expect(streamed.memories.map((m) => m.text)).toContain("Alice keeps bees on her roof");
    expect(streamed.memories.some((m) => m.text.endsWith("…"))).toBe(true);

    const [reply, asked] = await history(agentId);
    expect(asked).toMatchObject({ role: "user", text: "Hello again" });
    expect(asked!.turn).toBeUndefined();
    expect(reply).toMatchObject({
      role: "agent",
      text: "How are the bees?",
      turn: {
        turnId: done.turnId,
        model: "test-primary",
        usage: { promptTokens: 80, completionTokens: 5, modelCalls: 1 },
        stopReason: "completed",
      },
    });
    expect(reply!.turn!.memories).toEqual(streamed.memories);
  });

  it("leaves out a memory deleted since the turn", async () => {
    const agentId = await createTestAgent(quiet);
    await remember(agentId, "alice", "Alice once lived in Oslo");
    model.script({ text: "Noted." });
    await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "Where did I live?" },
    });
    const [before] = await history(agentId);
    const used = before!.turn!.memories!.find((m) => m.text === "Alice once lived in Oslo")!;
    const params = new URLSearchParams({ agentId, id: used.id });
    expect((await api("DELETE", `/memories?${params}`)).status).toBe(200);
    const [after] = await history(agentId);
    expect(after!.turn!.memories!.map((m) => m.id)).not.toContain(used.id);
    expect(after!.turn).toMatchObject({ turnId: before!.turn!.turnId, model: "test-primary" });
  });

  it("shows a token only the memories of users and rooms it may name", async () => {
    const agentId = await createTestAgent(quiet);
    await remember(agentId, "bob", "Bob's door code is 4711");
    model.script({ text: "Hi Bob." });
    // The admin token may speak as anyone in a room of the acme: tenant.
    await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "bob", roomId: "acme:lobby", text: "Hello" },
    });
    const [asAdmin] = await history(agentId, "acme:lobby");
    expect(asAdmin!.turn!.memories!.map((m) => m.text)).toContain("Bob's door code is 4711");

    const { token } = await mintToken({
      name: "acme-reader",
      scopes: ["memories:read"],
      userPrefix: "acme:",
      expiresInSeconds: 600,
    });
    const [asTenant] = await history(agentId, "acme:lobby", token);
    expect(asTenant).toMatchObject({ text: "Hi Bob.", turn: { model: "test-primary" } });
    expect(JSON.stringify(asTenant)).not.toContain("4711");
    expect(asTenant!.turn!.memories).toEqual([]);
  });

  it("shows a failed turn as an agent entry with its error, where the reply would be", async () => {
    const agentId = await createTestAgent(quiet);
    model.respondWith(() => ({ status: 503, headers: { "retry-after": "0" } }));
    const response = await api("POST", `/agents/${agentId}/messages`, {
      body: { userId: "alice", text: "Anyone there?" },
    });
    expect(response.status).toBe(502);
    const { error } = await json<{ error: { code: string; message: string } }>(response);

    const [failed, asked, ...rest] = await history(agentId);
    expect(rest).toEqual([]);
    expect(asked).toMatchObject({ role: "user", text: "Anyone there?" });
    const turnId = asked!.id.replace(/:in$/, "");
    expect(failed).toEqual({
      id: `${turnId}:out`,
      role: "agent",
      userId: "alice",
      userName: null,
      text: "",
      createdAt: expect.any(Number),
      turn: { turnId, error: { code: "model", message: error.message } },
    });
    expect(failed!.createdAt).toBeGreaterThanOrEqual(asked!.createdAt);
  });

  it("loads replies stored before their turn was kept, and ones whose metadata does not match", async () => {
    const agentId = await createTestAgent(quiet);
    const at = Date.now() - 60_000;
    const message = (id: string, role: string, text: string, i: number, metadata = {}) => ({
      agentId,
      id,
      type: "message",
      roomId: "user:alice",
      userId: "alice",
      role,
      text,
      metadata,
      createdAt: at + i * 1_000,
    });
    const imported = await api("POST", "/memories", {
      body: {
        memories: [
          message("old-1:in", "user", "Hi", 0),
          message("old-1:out", "agent", "A reply from before turns were kept", 1),
          message("old-2:out", "agent", "A reply from before memories were kept", 2, {
            turnId: "old-2",
            model: "old-model",
            stopReason: "completed",
            usage: { promptTokens: 10, completionTokens: 2, modelCalls: 1 },
          }),
          message("old-3:out", "agent", "A reply with metadata of another shape", 3, {
            turnId: 42,
            usage: "lots",
          }),
        ],
      },
    });
    expect(imported.status).toBe(201);

    const entries = await history(agentId);
    expect(entries.map((m) => m.text)).toEqual([
      "A reply with metadata of another shape",
      "A reply from before memories were kept",
      "A reply from before turns were kept",
      "Hi",
    ]);
    expect(entries[0]!.turn).toBeUndefined();
    expect(entries[1]!.turn).toEqual({
      turnId: "old-2",
      model: "old-model",
      usage: { promptTokens: 10, completionTokens: 2, modelCalls: 1 },
      stopReason: "completed",
    });
    expect(entries[2]!.turn).toBeUndefined();
  });
});
