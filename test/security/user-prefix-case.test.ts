// A token's `userPrefix` is compared exactly, case included (docs/security.md, "User prefix"):
// user ids are case-sensitive everywhere else, so `ACME:bob` is another tenant's user, not one of
// `acme:`. Checked over the real routes, as a user, as a room and as a memory filter.
import { describe, expect, it } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

useModelStandIn();
/** No fact extraction after turns: the memories a test sees are the ones it stored. */
const quiet = { settings: { memory: { factsEvery: 1000 } } };
const OTHER_TENANT_FACT = "Bob of the other tenant keeps his savings under the mattress";
const LOOK_ALIKES = ["ACME:bob", "Acme:bob", "aCME:bob"];

interface Problem {
  error: { code: string; message: string };
}

async function acmeToken(agentId: string): Promise<string> {
  const response = await api("POST", "/auth/tokens", {
    body: {
      name: "acme",
      scopes: ["messages:write", "memories:read"],
      agents: [agentId],
      userPrefix: "acme:",
    },
  });
  expect(response.status).toBe(201);
  return (await json<{ token: string }>(response)).token;
}

function say(agentId: string, token: string, body: Record<string, unknown>): Promise<Response> {
  return api("POST", `/agents/${agentId}/messages`, {
    token,
    body: { text: "What do you know about me?", ...body },
  });
}

async function expectRefused(response: Response, what: string): Promise<void> {
  expect(response.status, what).toBe(403);
  expect((await json<Problem>(response)).error.code, what).toBe("forbidden");
}

describe("a userPrefix is compared exactly, case included", () => {
  it('a token of "acme:" may not speak as ACME:bob or Acme:bob', async () => {
    const agentId = await createTestAgent(quiet);
    const token = await acmeToken(agentId);
    for (const userId of LOOK_ALIKES)
      await expectRefused(await say(agentId, token, { userId }), `as user ${userId}`);
    // The control: its own spelling passes.
    expect((await say(agentId, token, { userId: "acme:bob" })).status).toBe(200);
  });

  it('a token of "acme:" may not use the rooms ACME:lobby, Acme:lobby or user:ACME:bob', async () => {
    const agentId = await createTestAgent(quiet);
    const token = await acmeToken(agentId);
    for (const roomId of [
      "ACME:lobby",
      "Acme:lobby",
      ...LOOK_ALIKES.map((userId) => `user:${userId}`),
    ]) {
      await expectRefused(
        await say(agentId, token, { userId: "acme:alice", roomId }),
        `in room ${roomId}`,
      );
      await expectRefused(
        await api("GET", `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages`, {
          token,
        }),
        `reading room ${roomId}`,
      );
    }
    expect((await say(agentId, token, { userId: "acme:alice", roomId: "acme:lobby" })).status).toBe(
      200,
    );
  });

  it('a token of "acme:" reads no memory of ACME:bob, by filter or through a turn', async () => {
    const agentId = await createTestAgent(quiet);
    const stored = await api("POST", "/memories", {
      body: {
        memories: [{ agentId, type: "fact", userId: "ACME:bob", text: OTHER_TENANT_FACT }],
      },
    });
    expect(stored.status).toBe(201);
    const token = await acmeToken(agentId);
    for (const userId of LOOK_ALIKES)
      await expectRefused(
        await api("GET", `/memories?agentId=${agentId}&userId=${encodeURIComponent(userId)}`, {
          token,
        }),
        `filtering by ${userId}`,
      );
    const turn = await say(agentId, token, { userId: "acme:bob" });
    expect(turn.status).toBe(200);
    expect(await turn.text()).not.toContain(OTHER_TENANT_FACT);
  });
});
