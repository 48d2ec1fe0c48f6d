// POST /auth/tokens: a token limited to `agents` names at most 50 of them (docs/api.md), so a
// token's row and every check against its list stay small. 50 ids mint; 51 are refused with a
// 400 that names the limit, and no token is made.
import { describe, expect, it } from "vitest";
import { api, json } from "../helpers/api.ts";

interface Problem {
  error: { code: string; message: string };
}

const ids = (count: number, tag: string) =>
  Array.from({ length: count }, (_, i) => `capped-${tag}-${String(i).padStart(2, "0")}`);

async function tokenNames(): Promise<string[]> {
  const listing = await json<{ tokens: { name: string }[] }>(await api("GET", "/auth/tokens"));
  return listing.tokens.map((t) => t.name);
}

describe("POST /auth/tokens with agents", () => {
  it("mints a token for 50 agents, and it may act for the 50th", async () => {
    const agents = ids(50, "fifty");
    const minted = await api("POST", "/auth/tokens", {
      body: { name: "fifty-agents", scopes: ["agents:read"], agents },
    });
    expect(minted.status).toBe(201);
    const body = await json<{ agents: string[]; token: string }>(minted);
    expect(body.agents).toEqual(agents);
    // The 50th id is kept: a 404 (no such agent), not a 403 (not this token's agent).
    const last = await api("GET", `/agents/${agents[49]}`, { token: body.token });
    expect(last.status).toBe(404);
    const other = await api("GET", "/agents/capped-not-listed", { token: body.token });
    expect(other.status).toBe(403);
  });

  it("refuses 51 agents with a 400 that names the limit, and makes no token", async () => {
    const refused = await api("POST", "/auth/tokens", {
      body: { name: "fifty-one-agents", scopes: ["agents:read"], agents: ids(51, "many") },
    });
    expect(refused.status).toBe(400);
    const problem = await json<Problem>(refused);
    expect(problem.error.code).toBe("validation");
    // The field and its limit, e.g. "agents: Too big: expected array to have <=50 items".
    expect(problem.error.message).toMatch(/agents: .*\b50\b/);
    expect(await tokenNames()).not.toContain("fifty-one-agents");
  });
});
