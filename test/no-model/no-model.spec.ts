// Runs in the `no-model` project: neither OPENAI_* nor an AI binding is configured.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, json } from "../helpers/api.ts";

describe("with no model configured", () => {
  it("answers 503 model_not_configured naming the variables, and still stores the message", async () => {
    expect(
      (await api("POST", "/agents", { body: { id: "mute", name: "Mute", bio: "x" } })).status,
    ).toBe(201);
    const response = await api("POST", "/agents/mute/messages", {
      body: { userId: "dana", text: "Is anyone there?" },
    });
    expect(response.status).toBe(503);
    const body = await json<{ error: { code: string; message: string } }>(response);
    expect(body.error.code).toBe("model_not_configured");
    expect(body.error.message).toContain("OPENAI_API_KEY");
    expect(body.error.message).toContain("AI");
    // A local server needs no key: the hint says so, and how to name its model.
    expect(body.error.message).toContain("OPENAI_BASE_URL (and MODEL)");
    expect(body.error.message).toContain("needs no key");
    const stored = await env.DB.prepare(
      "SELECT content FROM memories WHERE agent_id = 'mute' AND type = 'message'",
    ).all<{ content: string }>();
    expect(stored.results.map((row) => (JSON.parse(row.content) as { text: string }).text)).toEqual(
      ["Is anyone there?"],
    );
  });

  it("answers a request for a stream the same way, as JSON before any stream starts", async () => {
    expect(
      (await api("POST", "/agents", { body: { id: "mute-stream", name: "Mute", bio: "x" } }))
        .status,
    ).toBe(201);
    const response = await api("POST", "/agents/mute-stream/messages", {
      headers: { accept: "text/event-stream" },
      body: { userId: "dana", text: "Anyone?" },
    });
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect((await json<{ error: { code: string } }>(response)).error.code).toBe(
      "model_not_configured",
    );
  });

  it("refuses a task with 503 model_not_configured instead of accepting it to fail", async () => {
    expect(
      (await api("POST", "/agents", { body: { id: "mute-task", name: "Mute", bio: "x" } })).status,
    ).toBe(201);
    const response = await api("POST", "/agents/mute-task/tasks", {
      body: { goal: "Do something" },
    });
    expect(response.status).toBe(503);
    expect((await json<{ error: { code: string } }>(response)).error.code).toBe(
      "model_not_configured",
    );
  });

  it("reports the missing model backend on /health", async () => {
    const health = await json(await api("GET", "/health", { token: null }));
    expect(health).toMatchObject({ status: "ok", model: { backend: "none", primary: null } });
  });
});
