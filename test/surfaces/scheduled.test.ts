// The worker's `scheduled()` entry (src/index.ts), which the hourly cron trigger of wrangler.toml
// calls: it runs the memory upkeep at the controller's scheduledTime (retention here) and tells
// the rooms whose messages expired to drop the history they keep, so the next turn's prompt no
// longer carries them. Called as the runtime calls it, with its own execution context, and
// checked once every waitUntil'd promise has settled.
import {
  createExecutionContext,
  createScheduledController,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index.ts";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const DAY_MS = 86_400_000;
const OLD_TEXT = "The gate code used to be 4711";
const RECENT_TEXT = "The gate code is now 8080";

async function runCron(scheduledTime: number): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(
    createScheduledController({ scheduledTime, cron: "17 * * * *" }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
}

async function roomTexts(agentId: string): Promise<string[]> {
  const page = await json<{ messages: { text: string }[] }>(
    await api("GET", `/agents/${agentId}/rooms/r/messages`),
  );
  return page.messages.map((m) => m.text);
}

/** A turn in room r; returns what the model was shown. */
async function turnPrompt(agentId: string): Promise<string> {
  model.script({ text: "Noted." });
  const calls = model.calls.length;
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "alice", roomId: "r", text: "What is the gate code?" },
  });
  expect(response.status).toBe(200);
  return JSON.stringify(model.calls.slice(calls).map((call) => call.messages));
}

describe("scheduled(): the hourly upkeep", () => {
  it("expires messages past the agent's retention at the scheduled time, and the room forgets them", async () => {
    const agentId = await createTestAgent({
      settings: { memory: { retentionDays: 2, factsEvery: 1000 } },
    });
    const now = Date.now();
    const stored = await api("POST", "/memories", {
      body: {
        memories: [
          { text: OLD_TEXT, createdAt: now - 3 * DAY_MS },
          { text: RECENT_TEXT, createdAt: now - 60_000 },
        ].map((m) => ({ agentId, type: "message", roomId: "r", userId: "alice", ...m })),
      },
    });
    expect(stored.status).toBe(201);
    // The room loads its history, old message included, and keeps it for later turns.
    expect(await turnPrompt(agentId)).toContain(OLD_TEXT);

    // Run two days ago, the old message was a day old: within the retention, kept.
    await runCron(now - 2 * DAY_MS);
    expect(await roomTexts(agentId)).toContain(OLD_TEXT);

    await runCron(now);
    const left = await roomTexts(agentId);
    expect(left).not.toContain(OLD_TEXT);
    expect(left).toContain(RECENT_TEXT);
    // The room dropped the history it kept: the next prompt has the recent message only.
    const prompt = await turnPrompt(agentId);
    expect(prompt).not.toContain(OLD_TEXT);
    expect(prompt).toContain(RECENT_TEXT);
  });
});
