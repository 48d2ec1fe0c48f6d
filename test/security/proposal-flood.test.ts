// Attack (issue 38): proposals had no cap and no retention, so anyone who could talk to an agent,
// even within the rate limits, could make it propose skill after skill: the list grew without end
// and a Discord channel filled with Approve / Deny buttons. An agent now holds at most
// MAX_PENDING_PROPOSALS unanswered proposals (filing more is refused to the model's tool call,
// and nothing is posted); unanswered ones expire after PENDING_PROPOSAL_TTL_MS and can no longer
// be approved; the hourly upkeep marks them expired and deletes answered and expired ones
// DECIDED_PROPOSAL_RETENTION_MS after their answer.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runMemoryMaintenance } from "../../src/db/memory/maintenance.ts";
import {
  DECIDED_PROPOSAL_RETENTION_MS,
  MAX_PENDING_PROPOSALS,
  PENDING_PROPOSAL_TTL_MS,
} from "../../src/db/stores/proposal-store.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { chat, post, snowflake, useAgentIn, useDiscordStandIns } from "../helpers/discord.ts";

const { model, discord } = useDiscordStandIns();

interface ProposalBody {
  id: string;
  status: string;
  change: { kind: string; skill?: { name: string } };
  decidedAt: number | null;
}

interface Problem {
  error: { code: string; message: string };
}

const skill = (name: string) => ({
  name,
  description: `How to ${name}.`,
  body: `1. Do ${name}.`,
});

/** Proposals as a flood would have left them, written straight into D1. */
async function plant(
  agentId: string,
  rows: { id: string; status?: string; createdAt: number; decidedAt?: number }[],
): Promise<void> {
  await env.DB.batch(
    rows.map((row) =>
      env.DB.prepare(
        `INSERT INTO proposals (agent_id, id, kind, status, change, origin, created_at, decided_at)
         VALUES (?, ?, 'skill', ?, ?, ?, ?, ?)`,
      ).bind(
        agentId,
        row.id,
        row.status ?? "pending",
        JSON.stringify({ kind: "skill", skill: skill(`planted-${row.id}`) }),
        JSON.stringify({ surface: "rest", roomId: "user:sam", userId: "sam", turnId: row.id }),
        row.createdAt,
        row.decidedAt ?? null,
      ),
    ),
  );
}

/** `count` pending proposals with ids 0000000000000000, 0000000000000001, ... */
const pendingIds = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => (from + i).toString(16).padStart(16, "0"));

async function proposals(agentId: string, query = ""): Promise<ProposalBody[]> {
  const response = await api("GET", `/agents/${agentId}/proposals${query}`);
  expect(response.status).toBe(200);
  return (await json<{ proposals: ProposalBody[] }>(response)).proposals;
}

async function saveSkillTurn(agentId: string, name: string) {
  model.script(
    { model: "test-primary", toolCalls: [{ name: "save_skill", arguments: skill(name) }] },
    { model: "test-primary", text: "Done asking." },
  );
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "sam", text: `keep how to ${name}` },
  });
  expect(response.status).toBe(200);
  const toolResult = model.calls
    .at(-1)!
    .messages.filter((m) => m.role === "tool")
    .map((m) => String(m.content))
    .at(-1);
  return { turn: await json<{ toolCalls: { name: string; ok: boolean }[] }>(response), toolResult };
}

describe("the cap on pending proposals per agent", () => {
  it("refuses the model's proposal once the agent holds the most it may, and files again once some are answered", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const now = Date.now();
    await plant(
      agentId,
      pendingIds(MAX_PENDING_PROPOSALS).map((id) => ({ id, createdAt: now - 60_000 })),
    );

    const refused = await saveSkillTurn(agentId, "flood-more");
    expect(refused.turn.toolCalls).toMatchObject([{ name: "save_skill", ok: false }]);
    expect(refused.toolResult).toContain(
      `already has ${MAX_PENDING_PROPOSALS} proposals waiting for an answer`,
    );
    expect(await proposals(agentId, "?status=pending")).toHaveLength(MAX_PENDING_PROPOSALS);

    // A person answers one: there is room for one more.
    const [oldest] = pendingIds(1);
    const denied = await api("POST", `/agents/${agentId}/proposals/${oldest}`, {
      body: { approve: false },
    });
    expect(denied.status).toBe(200);
    const filed = await saveSkillTurn(agentId, "one-more");
    expect(filed.turn.toolCalls).toMatchObject([{ name: "save_skill", ok: true }]);
    expect(filed.toolResult).toMatch(/is pending: a person approves or denies it/);
    const pending = await proposals(agentId, "?status=pending");
    expect(pending).toHaveLength(MAX_PENDING_PROPOSALS);
    expect(pending.map((p) => p.change.skill?.name)).toContain("one-more");
  });

  it("does not count proposals past their expiry against the cap", async () => {
    const agentId = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    const now = Date.now();
    const [stale, ...fresh] = pendingIds(MAX_PENDING_PROPOSALS);
    await plant(agentId, [
      { id: stale!, createdAt: now - PENDING_PROPOSAL_TTL_MS - 60_000 },
      ...fresh.map((id) => ({ id, createdAt: now - 60_000 })),
    ]);
    const filed = await saveSkillTurn(agentId, "after-expiry");
    expect(filed.turn.toolCalls).toMatchObject([{ name: "save_skill", ok: true }]);
  });

  it("posts no Approve / Deny buttons in a Discord channel once the cap is reached", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    await plant(
      agentId,
      pendingIds(MAX_PENDING_PROPOSALS).map((id) => ({ id, createdAt: Date.now() - 60_000 })),
    );
    discord.reset();
    model.script(
      {
        model: "test-primary",
        toolCalls: [{ name: "save_skill", arguments: skill("flood-the-channel") }],
      },
      { model: "test-primary", text: "I could not propose that." },
    );
    expect(await (await post(chat(channel, "remember how to flood"))).json()).toEqual({ type: 5 });
    // The reply is the turn's last word: once it is in, the proposal had its chance to be posted.
    const calls = await discord.waitForCalls(1);
    const reply = calls.find((call) => call.path.endsWith("/messages/@original"));
    expect((reply!.body as { content: string }).content).toBe("I could not propose that.");
    const toolResult = model.calls.at(-1)!.messages.find((m) => m.role === "tool");
    expect(String(toolResult?.content)).toContain("nothing was proposed");
    expect(
      discord.calls.filter((call) => call.path === `/api/v10/channels/${channel}/messages`),
    ).toEqual([]);
    expect(await proposals(agentId, "?status=pending")).toHaveLength(MAX_PENDING_PROPOSALS);
  });
});

describe("proposal expiry and retention", () => {
  it("refuses to approve a proposal left unanswered past its expiry", async () => {
    const agentId = await createTestAgent();
    const [id] = pendingIds(1);
    await plant(agentId, [{ id: id!, createdAt: Date.now() - PENDING_PROPOSAL_TTL_MS - 60_000 }]);
    const response = await api("POST", `/agents/${agentId}/proposals/${id}`, {
      body: { approve: true },
    });
    expect(response.status).toBe(409);
    const problem = await json<Problem>(response);
    expect(problem.error).toMatchObject({ code: "conflict" });
    expect(problem.error.message).toContain("expired");
    const skills = await json<{ skills: unknown[] }>(await api("GET", `/agents/${agentId}/skills`));
    expect(skills.skills).toEqual([]);
  });

  it("marks unanswered proposals expired and deletes old answered ones in the hourly upkeep", async () => {
    const agentId = await createTestAgent();
    const now = Date.now();
    const [unanswered, recent, answered, longAnswered, longExpired] = pendingIds(5);
    await plant(agentId, [
      { id: unanswered!, createdAt: now - PENDING_PROPOSAL_TTL_MS - 60_000 },
      { id: recent!, createdAt: now - 60_000 },
      {
        id: answered!,
        status: "approved",
        createdAt: now - 30 * 86_400_000,
        decidedAt: now - 29 * 86_400_000,
      },
      {
        id: longAnswered!,
        status: "denied",
        createdAt: now - DECIDED_PROPOSAL_RETENTION_MS - 2 * 86_400_000,
        decidedAt: now - DECIDED_PROPOSAL_RETENTION_MS - 86_400_000,
      },
      {
        id: longExpired!,
        status: "expired",
        createdAt: now - DECIDED_PROPOSAL_RETENTION_MS - 20 * 86_400_000,
        decidedAt: now - DECIDED_PROPOSAL_RETENTION_MS - 60_000,
      },
    ]);

    const report = await runMemoryMaintenance(env, now, { forgetRoomHistory: async () => {} });
    expect(report.proposalsExpired).toBeGreaterThanOrEqual(1);
    expect(report.proposalsDeleted).toBeGreaterThanOrEqual(2);

    const left = await proposals(agentId);
    expect(Object.fromEntries(left.map((p) => [p.id, p.status]))).toEqual({
      [unanswered!]: "expired",
      [recent!]: "pending",
      [answered!]: "approved",
    });
    expect(left.find((p) => p.id === unanswered)!.decidedAt).toBe(now);
    expect(await proposals(agentId, "?status=expired")).toHaveLength(1);

    // An expired proposal's answer comes too late, over the API as on Discord.
    const late = await api("POST", `/agents/${agentId}/proposals/${unanswered}`, {
      body: { approve: true },
    });
    expect(late.status).toBe(409);
    expect((await json<Problem>(late)).error.message).toContain("was already expired");
  });
});
