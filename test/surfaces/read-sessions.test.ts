// Read replicas through D1's Sessions API, as a client sees them: the read-only routes open a
// session from the D1-Bookmark the caller sends (anywhere without one), writes open theirs on the
// primary, and every answer carries the newest bookmark back. Local D1 has no replicas, so these
// tests prove the bookmark is carried and used (a spy on the binding's withSession), and that a
// read sending a write's bookmark sees that write.
import { env } from "cloudflare:workers";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { api, createTestAgent, json } from "../helpers/api.ts";

const HEADER = "D1-Bookmark";

/** Records the sessions opened on the catalog (the default deployment keeps memories there too). */
function watchSessions() {
  const spy = vi.spyOn(env.DB, "withSession");
  // Not vi.restoreAllMocks(): it would also undo other files' spies (the model stand-in's fetch).
  onTestFinished(() => spy.mockRestore());
  return {
    opened: () => spy.mock.calls.map(([start]) => start),
    clear: () => spy.mockClear(),
  };
}

/** The one database's bookmark in a header value ("DB:<bookmark>"). */
function bookmarkOf(value: string | null): string {
  expect(value).toMatch(/^DB:[A-Za-z0-9._~+/=-]+$/);
  return value!.slice("DB:".length);
}

async function remember(agentId: string, text: string, headers: Record<string, string> = {}) {
  const response = await api("POST", "/memories", {
    body: { memories: [{ agentId, type: "lore", text }] },
    headers,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return response;
}

/** Each read-only route that honours the header, for one agent. */
const readRoutes = (agentId: string): [string, string, unknown?][] => [
  ["GET", `/memories?agentId=${agentId}`],
  ["POST", "/memories/similar", { agentId, query: "lighthouse" }],
  ["GET", `/memories/stats?agentId=${agentId}`],
  ["GET", `/agents/${agentId}/usage?by=day`],
  ["GET", `/agents/${agentId}/storage`],
];

describe("read replicas: the D1-Bookmark header", () => {
  it("reads without a bookmark from a session that may start anywhere, and answers with one", async () => {
    const agentId = await createTestAgent();
    const sessions = watchSessions();
    for (const [method, path, body] of readRoutes(agentId)) {
      sessions.clear();
      const response = await api(method, path, { body });
      expect(response.status, `${method} ${path}`).toBe(200);
      expect(sessions.opened(), `${method} ${path}`).toEqual(["first-unconstrained"]);
      bookmarkOf(response.headers.get(HEADER));
    }
  });

  it("writes on the primary and answers with the bookmark of the write", async () => {
    const agentId = await createTestAgent();
    const sessions = watchSessions();
    const stored = await remember(agentId, "The lighthouse keeper winds the lamp at dusk");
    expect(sessions.opened()).toEqual(["first-primary"]);
    bookmarkOf(stored.headers.get(HEADER));

    sessions.clear();
    const ingested = await api("POST", `/agents/${agentId}/knowledge`, {
      body: { documentId: "tides", title: "Tides", text: "High tide comes twice a day." },
    });
    expect(ingested.status, await ingested.clone().text()).toBe(201);
    expect(sessions.opened()).toEqual(["first-primary"]);
    bookmarkOf(ingested.headers.get(HEADER));

    sessions.clear();
    const removed = await api("DELETE", `/agents/${agentId}/knowledge/tides`);
    expect(removed.status).toBe(204);
    expect(sessions.opened()).toEqual(["first-primary"]);
    bookmarkOf(removed.headers.get(HEADER));

    sessions.clear();
    const deleted = await api("DELETE", `/memories?agentId=${agentId}&type=lore`);
    expect(deleted.status).toBe(200);
    expect(sessions.opened()).toEqual(["first-primary"]);
    bookmarkOf(deleted.headers.get(HEADER));
  });

  it("reads from exactly the bookmark the caller sends back, on every read-only route", async () => {
    const agentId = await createTestAgent();
    const sessions = watchSessions();
    const written = bookmarkOf(
      (await remember(agentId, "The lighthouse has 217 steps")).headers.get(HEADER),
    );
    for (const [method, path, body] of readRoutes(agentId)) {
      sessions.clear();
      const response = await api(method, path, { body, headers: { [HEADER]: `DB:${written}` } });
      expect(response.status, `${method} ${path}`).toBe(200);
      expect(sessions.opened(), `${method} ${path}`).toEqual([written]);
      bookmarkOf(response.headers.get(HEADER));
    }
  });

  it("sees the caller's own write when the read sends the write's bookmark back", async () => {
    const agentId = await createTestAgent();
    const written = (await remember(agentId, "The lamp burns whale oil")).headers.get(HEADER)!;

    const listed = await api("GET", `/memories?agentId=${agentId}`, {
      headers: { [HEADER]: written },
    });
    const page = await json<{ memories: { text: string }[] }>(listed);
    expect(page.memories.map((m) => m.text)).toEqual(["The lamp burns whale oil"]);

    const found = await api("POST", "/memories/similar", {
      body: { agentId, query: "whale oil" },
      headers: { [HEADER]: written },
    });
    const hits = await json<{ memories: { text: string }[] }>(found);
    expect(hits.memories.map((m) => m.text)).toContain("The lamp burns whale oil");
  });

  it("carries the bookmarks of other databases through untouched", async () => {
    const agentId = await createTestAgent();
    const sessions = watchSessions();
    const response = await api("GET", `/memories?agentId=${agentId}`, {
      headers: { [HEADER]: "MEMORY_DB_3:00000000-00000007-00000000-abc" },
    });
    expect(response.status).toBe(200);
    expect(sessions.opened()).toEqual(["first-unconstrained"]);
    const [fresh, carried] = response.headers.get(HEADER)!.split(", ");
    bookmarkOf(fresh ?? null);
    expect(carried).toBe("MEMORY_DB_3:00000000-00000007-00000000-abc");
  });

  it("refuses a malformed bookmark with a 400 that names the header and quotes nothing of it", async () => {
    const agentId = await createTestAgent();
    const sessions = watchSessions();
    const malformed = [
      "sent-value-without-a-database",
      "DB:",
      "DB:sent value",
      "DB:sent<script>",
      `DB:${"sent".repeat(70)}`,
      "NOT_A_DB:sent-value",
      "DB:sent-1, DB:sent-2",
      Array.from({ length: 9 }, (_, i) => `MEMORY_DB_${i + 1}:sent`).join(","),
    ];
    for (const value of malformed) {
      const response = await api("GET", `/memories?agentId=${agentId}`, {
        headers: { [HEADER]: value },
      });
      expect(response.status, value).toBe(400);
      const problem = await json<{ error: { code: string; message: string } }>(response);
      expect(problem.error.code).toBe("validation");
      expect(problem.error.message).toContain(HEADER);
      expect(problem.error.message).not.toContain("sent");
      expect(response.headers.get(HEADER)).toBeNull();
    }
    expect(sessions.opened()).toEqual([]);
  });
});
