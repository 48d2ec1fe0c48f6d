// Hole 6 of issue 22: memory ids were global and caller-chosen, and another agent's future ids are
// predictable (`<agent>:lore:N`, its knowledge document and fragments, a person's profile, a room's
// summary). A token limited to one agent could write them first: replacing the other agent then
// failed with a 500, and its profile and summary updates were silently skipped. Ids are now per
// agent, so the same id in two agents is two memories; and the runtime's own writes replace what
// the API stored under their ids in the same agent, so that cannot break them either.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { CHARACTER_DOCUMENT_ID, documentMemoryId } from "../../src/db/memory/knowledge.ts";
import { profileId } from "../../src/runtime/after-reply/memory-evaluators.ts";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();

interface Listed {
  id: string;
  agentId: string;
  type: string;
  text: string;
  userId: string | null;
}

const CHARACTER = {
  name: "Beta",
  bio: ["A harbour master."],
  system: "You are Beta.",
  settings: { memory: { factsEvery: 1, summarizeAfter: 20 } },
};
const START = Date.now() - 3_600_000;

async function list(agentId: string, type: string, token?: string): Promise<Listed[]> {
  const response = await api("GET", `/memories?agentId=${agentId}&type=${type}&limit=200`, {
    token,
  });
  expect(response.status).toBe(200);
  return (await json<{ memories: Listed[] }>(response)).memories;
}

/** The summary evaluator's id for a room's summary ending at `lastMs` (src/runtime/after-reply/memory-evaluators.ts). */
async function summaryId(agentId: string, roomId: string, lastMs: number): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(`${agentId}\u0000${roomId}\u0000${lastMs}`),
  );
  return `sum-${[...new Uint8Array(digest).slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function mintToken(agentId: string): Promise<string> {
  const response = await api("POST", "/auth/tokens", {
    body: {
      name: `only-${agentId}`,
      scopes: ["memories:read", "memories:write"],
      agents: [agentId],
    },
  });
  expect(response.status).toBe(201);
  return (await json<{ token: string }>(response)).token;
}

/** Beta with one lore entry, and 70 messages in its room "harbour" (its first summary covers the oldest 10). */
async function createBeta(): Promise<string> {
  const beta = await createTestAgent({ ...CHARACTER, lore: ["Beta once sailed alone."] });
  const history = Array.from({ length: 70 }, (_, i) => ({
    agentId: beta,
    type: "message",
    roomId: "harbour",
    userId: "bob",
    userName: "Bob",
    text: `tide report ${i}`,
    createdAt: START + i * 1_000,
  }));
  expect((await api("POST", "/memories", { body: { memories: history } })).status).toBe(201);
  return beta;
}

/** Every id beta is about to need: its second lore entry, its knowledge document and fragment, Bob's profile, the summary. */
async function betasFutureIds(
  beta: string,
): Promise<{ lore: string; document: string; fragment: string; profile: string; summary: string }> {
  const document = await documentMemoryId(beta, CHARACTER_DOCUMENT_ID);
  return {
    lore: `${beta}:lore:1`,
    document,
    fragment: `${document}:0`,
    profile: await profileId(beta, "bob"),
    summary: await summaryId(beta, "harbour", START + 9 * 1_000),
  };
}

/** Replaces beta (a second lore entry, a knowledge text), runs a turn, and checks beta got everything under its ids. */
async function replaceAndTalkToBeta(
  beta: string,
  ids: Awaited<ReturnType<typeof betasFutureIds>>,
): Promise<void> {
  const replaced = await api("PUT", `/agents/${beta}`, {
    body: {
      id: beta,
      ...CHARACTER,
      lore: ["Beta once sailed alone.", "Beta keeps the lighthouse key."],
      knowledge: ["The harbour closes at dusk."],
    },
  });
  expect(replaced.status).toBe(200);
  expect((await list(beta, "lore")).map((m) => [m.id, m.text]).sort()).toEqual([
    [`${beta}:lore:0`, "Beta once sailed alone."],
    [ids.lore, "Beta keeps the lighthouse key."],
  ]);
  expect((await list(beta, "document")).map((m) => m.id)).toEqual([ids.document]);
  expect((await list(beta, "fragment")).map((m) => [m.id, m.text])).toEqual([
    [ids.fragment, "The harbour closes at dusk."],
  ]);

  // A turn in beta's room: the reflection writes Bob's profile and, in the same call, the summary.
  model.respondWith((call) => {
    if (call.model !== "test-small") return { text: "Fair winds, Bob." };
    const system = String(call.messages[0]?.content ?? "");
    // Answer the JSON shape the prompt asks for.
    const asks = (key: string) => system.includes(`"${key}":`);
    return {
      text: JSON.stringify({
        ...(asks("facts") ? { facts: [], description: "Bob reads the tide reports." } : {}),
        ...(asks("summary") ? { summary: "Bob read out the tides." } : {}),
      }),
    };
  });
  const turn = await api("POST", `/agents/${beta}/messages`, {
    body: { roomId: "harbour", userId: "bob", userName: "Bob", text: "Any news on the tides?" },
  });
  expect(turn.status).toBe(200);
  await vi.waitFor(
    async () => {
      expect((await list(beta, "description")).map((m) => [m.id, m.userId, m.text])).toEqual([
        [ids.profile, "bob", "Bob reads the tide reports."],
      ]);
      expect((await list(beta, "summary")).map((m) => [m.id, m.text])).toEqual([
        [ids.summary, "Bob read out the tides."],
      ]);
    },
    { timeout: 15_000, interval: 50 },
  );
}

describe("memory ids: a token cannot plant the ids an agent will need", () => {
  it("a token limited to alpha cannot block beta's lore, knowledge, profile or summary", async () => {
    const alpha = await createTestAgent();
    const beta = await createBeta();
    const alphaToken = await mintToken(alpha);
    const ids = await betasFutureIds(beta);
    const planted = Object.values(ids);
    const plant = await api("POST", "/memories", {
      token: alphaToken,
      body: {
        memories: planted.map((id) => ({
          id,
          agentId: alpha,
          type: "lore",
          text: `alpha's own note ${id}`,
        })),
      },
    });
    expect(plant.status).toBe(201);

    await replaceAndTalkToBeta(beta, ids);

    // Alpha's memories are as alpha wrote them, and alpha's token still sees only alpha's.
    const alphas = await list(alpha, "lore", alphaToken);
    expect(alphas.map((m) => [m.id, m.agentId, m.text]).sort()).toEqual(
      planted.map((id) => [id, alpha, `alpha's own note ${id}`]).sort(),
    );
    expect((await api("GET", `/memories?agentId=${beta}`, { token: alphaToken })).status).toBe(403);
    const rows = await env.DB.prepare(
      `SELECT agent_id AS agentId, count(*) AS n FROM memories WHERE id IN (${planted.map(() => "?").join(",")}) GROUP BY agent_id`,
    )
      .bind(...planted)
      .all<{ agentId: string; n: number }>();
    expect(rows.results.map((r) => [r.agentId, r.n]).sort()).toEqual(
      [
        [alpha, 5],
        [beta, 5],
      ].sort(),
    );
  });

  it("a memories-only token of beta cannot break replacing beta, or disguise its profile and summary, with beta's own future ids", async () => {
    const beta = await createBeta();
    const betaToken = await mintToken(beta);
    const ids = await betasFutureIds(beta);
    // Stored as facts: replacing beta deletes its old lore and document by type, so these survive to collide.
    const plant = await api("POST", "/memories", {
      token: betaToken,
      body: {
        memories: Object.values(ids).map((id) => ({
          id,
          agentId: beta,
          type: "fact",
          userId: "bob",
          text: `planted note ${id}`,
        })),
      },
    });
    expect(plant.status).toBe(201);

    await replaceAndTalkToBeta(beta, ids);
    expect((await list(beta, "fact")).filter((m) => m.text.startsWith("planted note"))).toEqual([]);
  });
});
