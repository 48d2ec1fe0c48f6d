// POST /clients/slack/config end to end: which agent the Slack app speaks as, and in which
// channels. The scope (admin) is held by the auth matrix (test/surfaces/auth.test.ts).
import { describe, expect, it } from "vitest";
import { api, createTestAgent, json } from "../../helpers/api.ts";

describe("Slack client config", () => {
  it("stores the default agent and allowed channels, and names every bad path", async () => {
    const agentId = await createTestAgent();
    const saved = await api("POST", "/clients/slack/config", {
      body: { defaultAgentId: agentId, allowedChannels: ["C0GENERAL1", "D0DIRECT01"] },
    });
    expect(saved.status).toBe(200);
    expect(await json(await api("GET", "/clients/slack/config"))).toEqual({
      defaultAgentId: agentId,
      allowedChannels: ["C0GENERAL1", "D0DIRECT01"],
    });
    // Telegram's binding is its own row: Slack's did not touch it.
    const telegram = await json<{ allowedChats: string[] }>(
      await api("GET", "/clients/telegram/config"),
    );
    expect(telegram).not.toHaveProperty("allowedChannels");
    const bad = await api("POST", "/clients/slack/config", {
      body: { defaultAgentId: "no such agent!", allowedChannels: ["#general"], allowedChats: [] },
    });
    expect(bad.status).toBe(400);
    const problem = await json<{
      error: { code: string; details: { issues: Array<{ path: string }> } };
    }>(bad);
    expect(problem.error.code).toBe("validation");
    expect(problem.error.details.issues.map((issue) => issue.path).sort()).toEqual([
      "",
      "allowedChannels.0",
      "defaultAgentId",
    ]);
    const missing = await api("POST", "/clients/slack/config", {
      body: { defaultAgentId: "no-such-agent" },
    });
    expect(missing.status).toBe(404);
  });
});
