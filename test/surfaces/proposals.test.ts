// Proposals, one way for an agent to ask for a change about itself: filed from a REST chat turn,
// a Discord turn and a task alike, never pausing the turn, all in one list; decided over the API
// (a skill needs agents:write, a tool tools:write) or by a manager's click on Discord (the bot's
// owners in a DM). request_tool
// asks for a server of the deployment's catalog (mcp-servers.json), which is added only after a
// yes; a server outside the catalog is refused.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { loadRegistry, McpServerConfig } from "../../src/mcp-registry.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import {
  APP_ID,
  chat,
  dm,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../helpers/discord.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
} from "../helpers/task-script.ts";

const { model, discord } = useDiscordStandIns();
const peers = inject("mcpPeers");
const CATALOG_SERVER = "peer-docs";
/** Listed in DISCORD_OWNER_IDS for the main test project (vitest.config.ts). */
const OWNER = "610000000000000001";

interface ProposalBody {
  id: string;
  kind: string;
  status: string;
  change: Record<string, unknown>;
  origin: { surface: string; roomId: string; userId: string; turnId: string };
  decidedBy: string | null;
}

// The catalog as a deployment would have it: mcp-servers.json with one server (the plain MCP peer).
beforeAll(() => {
  const registry = loadRegistry();
  registry.servers.set(CATALOG_SERVER, McpServerConfig.parse({ url: peers.plainUrl }));
  registry.descriptions.set(CATALOG_SERVER, "Echo and arithmetic, for tests.");
});
afterAll(() => {
  loadRegistry().servers.delete(CATALOG_SERVER);
  loadRegistry().descriptions.delete(CATALOG_SERVER);
});

const skill = (name: string) => ({
  name,
  description: `How to ${name}.`,
  body: `1. Do ${name}.`,
});

function agentWith(overrides: Record<string, unknown> = {}) {
  return createTestAgent({ settings: { memory: { factsEvery: 1000 } }, ...overrides });
}

async function say(agentId: string, text: string) {
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "sam", text },
  });
  expect(response.status).toBe(200);
  return json<{ reply: { text: string }; toolCalls: Array<{ name: string; ok: boolean }> }>(
    response,
  );
}

async function proposals(agentId: string, query = ""): Promise<ProposalBody[]> {
  const response = await api("GET", `/agents/${agentId}/proposals${query}`);
  expect(response.status).toBe(200);
  return (await json<{ proposals: ProposalBody[] }>(response)).proposals;
}

async function mint(scopes: string[], agents?: string[]): Promise<string> {
  const response = await api("POST", "/auth/tokens", {
    body: { name: "proposal-test", scopes, ...(agents ? { agents } : {}) },
  });
  return (await json<{ token: string }>(response)).token;
}

const offeredTools = (index = -1) =>
  (model.calls.at(index)!.tools ?? []).map(
    (tool) => (tool as { function: { name: string } }).function.name,
  );

describe("request_tool", () => {
  it("adds a catalog server only after a yes, and refuses one outside the catalog", async () => {
    const agentId = await agentWith();
    model.script(
      {
        model: "test-primary",
        toolCalls: [
          { name: "request_tool", arguments: { server: "elsewhere", reason: "I want it" } },
        ],
      },
      {
        model: "test-primary",
        toolCalls: [
          {
            name: "request_tool",
            arguments: { server: CATALOG_SERVER, reason: "To echo what people say." },
          },
        ],
      },
      { model: "test-primary", text: "I asked for the docs server." },
    );
    const turn = await say(agentId, "can you echo things?");
    expect(turn.reply.text).toBe("I asked for the docs server.");
    expect(turn.toolCalls).toMatchObject([
      { name: "request_tool", ok: false },
      { name: "request_tool", ok: true },
    ]);
    const system = String(model.calls[0]!.messages[0]!.content);
    expect(system).toContain(`- ${CATALOG_SERVER}: Echo and arithmetic, for tests.`);
    const results = model.calls
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map((m) => String(m.content));
    expect(results[0]).toContain(`"elsewhere" is not in this deployment's catalog`);
    expect(results[1]).toMatch(/is pending: a person approves or denies it/);

    const [pending] = await proposals(agentId);
    expect(pending).toMatchObject({
      kind: "tool",
      status: "pending",
      change: { kind: "tool", server: CATALOG_SERVER, reason: "To echo what people say." },
      origin: { surface: "rest", roomId: "user:sam", userId: "sam" },
    });
    expect(await proposals(agentId)).toHaveLength(1);
    const before = await json<{ servers: Array<{ name: string }> }>(
      await api("GET", `/agents/${agentId}/tools`),
    );
    expect(before.servers.map((server) => server.name)).not.toContain(CATALOG_SERVER);

    // agents:write alone may not add tools.
    const writer = await mint(["agents:write"], [agentId]);
    const refused = await api("POST", `/agents/${agentId}/proposals/${pending!.id}`, {
      token: writer,
      body: { approve: true },
    });
    expect(refused.status).toBe(403);
    expect((await json<{ error: { message: string } }>(refused)).error.message).toContain(
      "tools:write",
    );

    const toolsWriter = await mint(["tools:write"], [agentId]);
    const approved = await api("POST", `/agents/${agentId}/proposals/${pending!.id}`, {
      token: toolsWriter,
      body: { approve: true },
    });
    expect(approved.status).toBe(200);
    expect(await json(approved)).toMatchObject({
      proposal: { status: "approved" },
      applied: `MCP server "${CATALOG_SERVER}" added`,
    });
    const after = await json<{ servers: Array<{ name: string; state: string; origin: string }> }>(
      await api("GET", `/agents/${agentId}/tools`),
    );
    expect(after.servers).toMatchObject([
      { name: CATALOG_SERVER, state: "ready", origin: "registry" },
    ]);

    model.script({ model: "test-primary", text: "I can echo now." });
    await say(agentId, "and now?");
    expect(offeredTools()).toContain(`${CATALOG_SERVER}__echo`);
    // Nothing left to ask for: request_tool is no longer offered.
    expect(offeredTools()).not.toContain("request_tool");
    // A server it has can be taken away again.
    expect((await api("DELETE", `/agents/${agentId}/tools/${CATALOG_SERVER}`)).status).toBe(204);
  });

  it("adds nothing when the answer is no, and takes only one answer", async () => {
    const agentId = await agentWith();
    model.script(
      {
        model: "test-primary",
        toolCalls: [{ name: "request_tool", arguments: { server: CATALOG_SERVER, reason: "x" } }],
      },
      { model: "test-primary", text: "Asked." },
    );
    await say(agentId, "get the docs server");
    const [pending] = await proposals(agentId);
    const denied = await api("POST", `/agents/${agentId}/proposals/${pending!.id}`, {
      body: { approve: false },
    });
    expect(denied.status).toBe(200);
    expect(await json(denied)).toMatchObject({ proposal: { status: "denied" }, applied: null });
    const again = await api("POST", `/agents/${agentId}/proposals/${pending!.id}`, {
      body: { approve: true },
    });
    expect(again.status).toBe(409);
    const tools = await json<{ servers: unknown[] }>(await api("GET", `/agents/${agentId}/tools`));
    expect(tools.servers).toEqual([]);
    expect(
      (
        await api("POST", `/agents/${agentId}/proposals/0123456789abcdef`, {
          body: { approve: true },
        })
      ).status,
    ).toBe(404);
  });
});

describe("proposals from every surface", () => {
  it("lands proposals from a REST chat turn, a Discord turn and a task in one list, and lets a Discord manager decide", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);

    // A REST chat turn.
    model.script(
      {
        model: "test-primary",
        toolCalls: [{ name: "save_skill", arguments: skill("file-expenses") }],
      },
      { model: "test-primary", text: "Proposed." },
    );
    const rest = await say(agentId, "keep how we file expenses");
    expect(rest.reply.text).toBe("Proposed.");

    // A Discord turn: the proposal is posted in the channel with buttons, the reply still comes.
    model.script(
      {
        model: "test-primary",
        toolCalls: [{ name: "save_skill", arguments: skill("book-rooms") }],
      },
      { model: "test-primary", text: "I proposed a skill for that." },
    );
    const acknowledged = await post(chat(channel, "remember how to book rooms"));
    expect(await acknowledged.json()).toEqual({ type: 5 });
    const calls = await discord.waitForCalls(2);
    const posted = calls.find((call) => call.path === `/api/v10/channels/${channel}/messages`);
    expect(posted).toBeDefined();
    const prompt = posted!.body as {
      content: string;
      components: Array<{ components: Array<{ custom_id: string; label: string }> }>;
    };
    expect(prompt.content).toContain("proposes to save the skill `book-rooms`");
    expect(prompt.content).toContain("Only who manages the bot here");
    const [approve, deny] = prompt.components[0]!.components;
    expect(approve!.label).toBe("Approve");
    expect(deny!.label).toBe("Deny");
    const reply = calls.find((call) => call.path.endsWith("/messages/@original"));
    expect((reply!.body as { content: string }).content).toBe("I proposed a skill for that.");

    // A task.
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Order supplies"], ["Supplies ordered"])],
          act: [
            { toolCalls: [{ name: "save_skill", arguments: skill("order-supplies") }] },
            { text: "Ordered." },
          ],
          reflect: [reflectReply(true)],
          evaluate: [evaluateReply([true], "Ordered.")],
        }),
      ),
    );
    const started = await api("POST", `/agents/${agentId}/tasks`, {
      body: { goal: "Order supplies" },
    });
    const { taskId } = await json<{ taskId: string }>(started);
    await vi.waitFor(async () => expect(await proposals(agentId)).toHaveLength(3), {
      timeout: 15_000,
      interval: 50,
    });

    const all = await proposals(agentId);
    expect(
      all
        .map((proposal) => [
          proposal.origin.surface,
          proposal.origin.roomId,
          (proposal.change.skill as { name: string }).name,
          proposal.status,
        ])
        .sort(),
    ).toEqual([
      ["discord", `discord:${channel}`, "book-rooms", "pending"],
      ["rest", "user:sam", "file-expenses", "pending"],
      ["task", `task:${taskId}`, "order-supplies", "pending"],
    ]);

    // On Discord, only a manager's click counts.
    const member = "710000000000000001";
    const byMember = await post(click(channel, member, approve!.custom_id, "0"));
    expect(await byMember.json()).toMatchObject({
      type: 4,
      data: { content: expect.stringContaining("Only server managers (Manage Server)") },
    });
    const manager = "710000000000000002";
    const byManager = await post(click(channel, manager, approve!.custom_id, "32"));
    expect(await byManager.json()).toMatchObject({
      type: 7,
      data: {
        content: expect.stringContaining("approved the skill `book-rooms`"),
        components: [],
      },
    });
    const decided = (await proposals(agentId, "?status=approved"))[0]!;
    expect(decided).toMatchObject({
      status: "approved",
      decidedBy: `discord:${manager}`,
      change: { skill: { name: "book-rooms" } },
    });
    const skills = await json<{ skills: Array<{ name: string; source: string }> }>(
      await api("GET", `/agents/${agentId}/skills`),
    );
    expect(skills.skills).toEqual([
      expect.objectContaining({ name: "book-rooms", source: "agent" }),
    ]);
    // A second click finds it decided.
    const late = await post(click(channel, manager, deny!.custom_id, "32"));
    expect(await late.json()).toMatchObject({
      data: { content: "This proposal was already approved." },
    });
    // Its buttons work only in the channel where it was made.
    const rest0 = all.find((proposal) => proposal.origin.surface === "rest")!;
    const elsewhere = await post(click(channel, manager, `pr:y:${rest0.id}:${agentId}`, "32"));
    expect(await elsewhere.json()).toMatchObject({
      data: { content: "That button is no longer valid." },
    });
  });
});

describe("proposals in a Discord DM", () => {
  it("are answered by the bot's owners only", async () => {
    const agentId = await agentWith();
    // DM channels fall back to the client's default agent.
    expect(
      (await api("POST", "/clients/discord/config", { body: { defaultAgentId: agentId } })).status,
    ).toBe(200);
    try {
      const channel = snowflake();
      model.script(
        {
          model: "test-primary",
          toolCalls: [{ name: "save_skill", arguments: skill("plan-trips") }],
        },
        { model: "test-primary", text: "Proposed." },
      );
      const acknowledged = await post(
        dm("chat", {
          channel,
          user: OWNER,
          options: [{ name: "message", type: 3, value: "keep how we plan trips" }],
        }),
      );
      expect(await acknowledged.json()).toEqual({ type: 5 });
      const calls = await discord.waitForCalls(2);
      const posted = calls.find((call) => call.path === `/api/v10/channels/${channel}/messages`);
      const prompt = posted!.body as {
        content: string;
        components: Array<{ components: Array<{ custom_id: string }> }>;
      };
      expect(prompt.content).toContain("the bot's owners in a DM");
      const approve = prompt.components[0]!.components[0]!.custom_id;

      const stranger = snowflake();
      const refused = await post(dmClick(channel, stranger, approve));
      expect(await refused.json()).toMatchObject({
        type: 4,
        data: { content: expect.stringContaining("Only the bot's owners can approve") },
      });
      expect((await proposals(agentId, "?status=pending")).map((p) => p.status)).toEqual([
        "pending",
      ]);

      const byOwner = await post(dmClick(channel, OWNER, approve));
      expect(await byOwner.json()).toMatchObject({
        type: 7,
        data: { content: expect.stringContaining("approved the skill `plan-trips`") },
      });
      expect((await proposals(agentId))[0]).toMatchObject({
        status: "approved",
        decidedBy: `discord:${OWNER}`,
        origin: { surface: "discord", roomId: `discord:${channel}` },
      });
    } finally {
      await api("POST", "/clients/discord/config", { body: {} });
    }
  });
});

/** A button click in a DM: no guild, no member, only `user`. */
function dmClick(channel: string, user: string, customId: string) {
  return JSON.stringify({
    id: snowflake(),
    application_id: APP_ID,
    type: 3,
    token: `tok-${snowflake()}`,
    channel_id: channel,
    user: { id: user, username: `user${user.slice(-4)}`, global_name: `User ${user.slice(-4)}` },
    data: { custom_id: customId, component_type: 2 },
  });
}

/** A button click by `user` with the given server permissions. */
function click(channel: string, user: string, customId: string, permissions: string) {
  return JSON.stringify({
    id: snowflake(),
    application_id: APP_ID,
    type: 3,
    token: `tok-${snowflake()}`,
    guild_id: "900000000000000001",
    channel_id: channel,
    member: {
      user: { id: user, username: `user${user.slice(-4)}`, global_name: `User ${user.slice(-4)}` },
      permissions,
    },
    data: { custom_id: customId, component_type: 2 },
  });
}
