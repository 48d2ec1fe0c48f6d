// One malformed variable of a surface turns that surface off, not the worker (issue 59): the
// surface's routes answer 503 naming the variable (never its value), /health says which surface
// is off and why while answering 200, every other route keeps working, and the reason is logged
// once per isolate. A malformed variable that belongs to no one surface still stops every route.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { createApp } from "../../src/http/app.ts";
import type { Env } from "../../src/env.ts";
import { createTestAgent, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const BAD_SECRET = "not-a-signing-secret-with-hyphens";
const app = createApp();

async function call(
  vars: Partial<Env>,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request(`https://worker.test${path}`, {
      method,
      headers: {
        authorization: `Bearer ${env.ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    vars as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

describe("a surface's malformed variable", () => {
  it("turns that surface off and leaves health, REST and the other surfaces answering", async () => {
    const errors = vi.spyOn(console, "error");
    onTestFinished(() => errors.mockRestore());
    // A fresh env object: the configuration is built (and its problems logged) once per env.
    const broken = { ...env, SLACK_BOT_TOKEN: "xoxb-1-2-abc", SLACK_SIGNING_SECRET: BAD_SECRET };

    const health = await call(broken, "GET", "/health");
    expect(health.status).toBe(200);
    const { surfaces } = (await health.json()) as {
      surfaces: Record<string, { state: string; problem: string | null }>;
    };
    expect(surfaces.slack!.state).toBe("off");
    expect(surfaces.slack!.problem).toMatch(/^SLACK_SIGNING_SECRET /);
    expect(surfaces.telegram).toEqual({ state: "on", problem: null });
    expect(JSON.stringify(surfaces)).not.toContain(BAD_SECRET);

    const slack = await call(broken, "POST", "/slack/events", { type: "url_verification" });
    expect(slack.status).toBe(503);
    const refused = (await slack.json()) as { error: { code: string; message: string } };
    expect(refused.error.code).toBe("not_configured");
    expect(refused.error.message).toMatch(/^Slack is off: SLACK_SIGNING_SECRET must be/);
    expect(refused.error.message).not.toContain(BAD_SECRET);

    // Telegram is its own surface: a wrong webhook secret is its 401, not a 503.
    const telegram = await call(broken, "POST", "/telegram/webhook", { update_id: 1 });
    expect(telegram.status).toBe(401);

    const agentId = await createTestAgent();
    model.respondWith(() => ({ text: "Still here." }));
    const turn = await call(broken, "POST", `/agents/${agentId}/messages`, {
      userId: "ana",
      text: "Hello?",
    });
    expect(turn.status, await turn.clone().text()).toBe(200);
    expect(((await turn.json()) as { reply: { text: string } }).reply.text).toBe("Still here.");

    const logged = errors.mock.calls
      .map((args) => String(args[0]))
      .filter((line) => line.includes("surface_misconfigured"));
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({ surface: "slack" });
    expect(logged[0]).not.toContain(BAD_SECRET);
  });

  it("still stops every route for a malformed variable no one surface owns", async () => {
    const broken = { ...env, RATE_LIMIT_PER_USER: "lots" };
    const health = await call(broken, "GET", "/health");
    expect(health.status).toBe(503);
    expect(((await health.json()) as { error: { message: string } }).error.message).toContain(
      "RATE_LIMIT_PER_USER",
    );
  });
});
