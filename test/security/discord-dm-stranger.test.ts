// Hole 2 of issue 22: a Discord DM skipped every manager check (no `member` counted as a manager).
// A stranger DMing the bot must not see the agents, re-point the DM, get a consent link, or be
// answered by an agent that takes DMs only from owners. Owners are DISCORD_OWNER_IDS (vitest.config)
// and the application's owner from `GET /applications/@me` (the Discord stand-in answers it).
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, inject, it } from "vitest";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { command, dm, post, snowflake, useDiscordStandIns } from "../helpers/discord.ts";
import { STAND_IN_APP_OWNER_ID } from "../stand-ins/discord-stand-in.ts";

/** Listed in DISCORD_OWNER_IDS for the main test project. */
const CONFIGURED_OWNER = "610000000000000001";
const peers = inject("mcpPeers");
const { model, discord } = useDiscordStandIns();

interface Answer {
  type: number;
  data: { content: string; flags?: number; choices?: Array<{ name: string; value: string }> };
}

const EPHEMERAL = 64;
const say = (text: string) => [{ name: "message", type: 3, value: text }];
const pick = (agentId: string) => [{ name: "name", type: 3, value: agentId }];
const typing = (text: string) => [{ name: "name", type: 3, value: text, focused: true }];

async function answer(body: string): Promise<Answer> {
  const response = await post(body);
  expect(response.status).toBe(200);
  return json<Answer>(response);
}

/** The agent every DM channel falls back to: the client's default agent. */
async function serveDirectMessages(agentId: string): Promise<void> {
  expect(
    (await api("POST", "/clients/discord/config", { body: { defaultAgentId: agentId } })).status,
  ).toBe(200);
}

afterEach(async () => {
  await api("POST", "/clients/discord/config", { body: {} });
});

async function channelAgent(channelId: string): Promise<string | null> {
  const row = await env.DB.prepare("SELECT agent_id FROM discord_channels WHERE channel_id = ?")
    .bind(channelId)
    .first<{ agent_id: string }>();
  return row?.agent_id ?? null;
}

async function addOAuthServer(agentId: string): Promise<void> {
  const response = await api("POST", `/agents/${agentId}/tools`, {
    body: { name: "secure", url: peers.oauthUrl, auth: { type: "oauth" } },
  });
  expect(response.status).toBe(201);
}

describe("Discord DMs: what a stranger cannot do", () => {
  it("a stranger's DM cannot re-point an agent", async () => {
    const agentId = await createTestAgent();
    const stranger = snowflake();
    const channel = snowflake();
    const refused = await answer(dm("agent", { channel, user: stranger, options: pick(agentId) }));
    expect(refused.type).toBe(4);
    expect(refused.data.flags! & EPHEMERAL).toBe(EPHEMERAL);
    expect(refused.data.content).toContain("Only the bot's owners");
    expect(await channelAgent(channel)).toBeNull();
  });

  it("autocomplete shows a stranger no agents", async () => {
    const agentId = await createTestAgent();
    const inDm = await answer(
      dm("agent", { type: 4, channel: snowflake(), user: snowflake(), options: typing(agentId) }),
    );
    expect(inDm).toEqual({ type: 8, data: { choices: [] } });
    // In a server, a member without Manage Server gets none either.
    const member = await answer(
      command("agent", {
        type: 4,
        channel: snowflake(),
        permissions: "0",
        options: typing(agentId),
      }),
    );
    expect(member).toEqual({ type: 8, data: { choices: [] } });
  });

  it("a stranger's DM gets no consent link from /tools", async () => {
    // Even an agent that takes everyone's DMs keeps its consent links for owners.
    const agentId = await createTestAgent({
      settings: { discord: { directMessages: "everyone" } },
    });
    await addOAuthServer(agentId);
    await serveDirectMessages(agentId);
    const tools = await answer(dm("tools", { channel: snowflake(), user: snowflake() }));
    expect(tools.data.flags! & EPHEMERAL).toBe(EPHEMERAL);
    expect(tools.data.content).toContain("**secure**: needs authorization by the bot's owner");
    expect(tools.data.content).not.toContain("/authorize?");
  });

  it("a stranger's DM is not answered by an agent that allows DMs only from owners", async () => {
    const agentId = await createTestAgent();
    await serveDirectMessages(agentId);
    const stranger = snowflake();
    const channel = snowflake();
    const commands: Array<[string, Array<{ name: string; type: number; value: string }>]> = [
      ["chat", say("hello?")],
      ["task", [{ name: "goal", type: 3, value: "list your tools" }]],
      ["remember", [{ name: "fact", type: 3, value: "I own this bot now" }]],
      ["recall", []],
      ["forget", []],
      ["tools", []],
    ];
    for (const [name, options] of commands) {
      const refused = await answer(dm(name, { channel, user: stranger, options }));
      expect(refused.type, `/${name}`).toBe(4);
      expect(refused.data.flags! & EPHEMERAL, `/${name}`).toBe(EPHEMERAL);
      expect(refused.data.content, `/${name}`).toContain("only from the bot's owners");
    }
    expect(model.calls).toHaveLength(0);
    const stored = await json<{ memories: unknown[] }>(
      await api("GET", `/memories?agentId=${agentId}&userId=discord:${stranger}`),
    );
    expect(stored.memories).toHaveLength(0);
  });

  it("a stranger's DM is not answered by an agent with directMessages \"off\", nor is an owner's", async () => {
    const agentId = await createTestAgent({ settings: { discord: { directMessages: "off" } } });
    await serveDirectMessages(agentId);
    for (const user of [snowflake(), CONFIGURED_OWNER]) {
      const refused = await answer(dm("chat", { channel: snowflake(), user, options: say("hi") }));
      expect(refused.data.flags! & EPHEMERAL).toBe(EPHEMERAL);
      expect(refused.data.content).toContain("doesn't answer direct messages");
    }
    expect(model.calls).toHaveLength(0);
  });
});

describe("Discord DMs: what owners and open agents may do", () => {
  it("an owner listed in DISCORD_OWNER_IDS manages in a DM: autocomplete, /agent and the consent link", async () => {
    const agentId = await createTestAgent();
    await addOAuthServer(agentId);
    const channel = snowflake();
    const suggested = await answer(
      dm("agent", { type: 4, channel, user: CONFIGURED_OWNER, options: typing(agentId) }),
    );
    expect(suggested.data.choices!.map((choice) => choice.value)).toContain(agentId);
    const chosen = await answer(
      dm("agent", { channel, user: CONFIGURED_OWNER, options: pick(agentId) }),
    );
    expect(chosen.data.content).toContain("now answers in this channel");
    expect(await channelAgent(channel)).toBe(agentId);
    const tools = await answer(dm("tools", { channel, user: CONFIGURED_OWNER }));
    expect(tools.data.content).toMatch(
      /\*\*secure\*\*: needs authorization: http:\/\/127\.0\.0\.1:\d+\/authorize\?/,
    );
  });

  it("the application's owner from GET /applications/@me manages in a DM", async () => {
    const agentId = await createTestAgent();
    const channel = snowflake();
    const chosen = await answer(
      dm("agent", { channel, user: STAND_IN_APP_OWNER_ID, options: pick(agentId) }),
    );
    expect(chosen.data.content).toContain("now answers in this channel");
    expect(await channelAgent(channel)).toBe(agentId);
    // The default directMessages ("owners") answers the application's owner.
    model.script({ text: "hello, owner" });
    expect(
      await answer(dm("chat", { channel, user: STAND_IN_APP_OWNER_ID, options: say("hi") })),
    ).toEqual({ type: 5 });
    const [edit] = await discord.waitForCalls(1);
    expect(edit!.body.content).toBe("hello, owner");
  });

  it('an agent with directMessages "everyone" answers anyone\'s DM', async () => {
    const agentId = await createTestAgent({
      settings: { discord: { directMessages: "everyone" }, memory: { factsEvery: 1000 } },
    });
    await serveDirectMessages(agentId);
    model.script({ text: "hello, stranger" });
    expect(
      await answer(dm("chat", { channel: snowflake(), user: snowflake(), options: say("hi") })),
    ).toEqual({ type: 5 });
    const [edit] = await discord.waitForCalls(1);
    expect(edit!.body.content).toBe("hello, stranger");
  });

  it("in a server, Manage Server or Administrator manages; an owner without either does not", async () => {
    const agentId = await createTestAgent();
    const channel = snowflake();
    const administrator = await answer(
      command("agent", { channel, permissions: "8", options: pick(agentId) }),
    );
    expect(administrator.data.content).toContain("now answers in this channel");
    const owner = await answer(
      command("agent", {
        channel: snowflake(),
        user: CONFIGURED_OWNER,
        permissions: "0",
        options: pick(agentId),
      }),
    );
    expect(owner.data.flags! & EPHEMERAL).toBe(EPHEMERAL);
    expect(owner.data.content).toContain("Only server managers");
  });
});
