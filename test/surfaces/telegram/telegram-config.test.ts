// POST /clients/telegram/config end to end: which agent the bot speaks as, and in which chats.
// The scope (admin) is held by the auth matrix (test/surfaces/auth.test.ts).
import { describe, expect, it } from "vitest";
import { api, createTestAgent, json } from "../../helpers/api.ts";

describe("Telegram client config", () => {
  it("stores the default agent and allowed chats, and names every bad path", async () => {
    const agentId = await createTestAgent();
    const saved = await api("POST", "/clients/telegram/config", {
      body: { defaultAgentId: agentId, allowedChats: ["-1001234567890", "42"] },
    });
    expect(saved.status).toBe(200);
    expect(await json(await api("GET", "/clients/telegram/config"))).toEqual({
      defaultAgentId: agentId,
      allowedChats: ["-1001234567890", "42"],
    });
    const bad = await api("POST", "/clients/telegram/config", {
      body: { defaultAgentId: "no such agent!", allowedChats: ["general"], extra: 1 },
    });
    expect(bad.status).toBe(400);
    const problem = await json<{
      error: { code: string; details: { issues: Array<{ path: string }> } };
    }>(bad);
    expect(problem.error.code).toBe("validation");
    expect(problem.error.details.issues.map((issue) => issue.path).sort()).toEqual([
      "",
      "allowedChats.0",
      "defaultAgentId",
    ]);
    const missing = await api("POST", "/clients/telegram/config", {
      body: { defaultAgentId: "no-such-agent" },
    });
    expect(missing.status).toBe(404);
  });
});
