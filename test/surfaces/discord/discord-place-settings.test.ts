// Settings per Discord server and channel (`POST /clients/discord/config` `guilds`, `channels`):
// validated with every bad path named; a server's agent serves its channels that chose none; a
// channel's or server's allowed tools and the server's role-gated tools decide what the model is
// offered in a /chat turn, by the member's roles.
import { afterEach, describe, expect, it } from "vitest";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import { chat, post, snowflake, useAgentIn, useDiscordStandIns } from "../../helpers/discord.ts";
import { discordRoom, settledJournal } from "../../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();

async function configure(body: Record<string, unknown>): Promise<Response> {
  return api("POST", "/clients/discord/config", { body });
}

afterEach(async () => {
  expect((await configure({})).status).toBe(200);
});

/** A /chat in a server, by a member holding `roles` there. */
function chatIn(guildId: string, channel: string, text: string, roles: string[] = []): string {
  const body = JSON.parse(chat(channel, text)) as {
    guild_id: string;
    member: Record<string, unknown>;
  };
  body.guild_id = guildId;
  body.member.roles = roles;
  return JSON.stringify(body);
}

/** The tool names the model was offered in its latest request. */
function offeredTools(): string[] {
  const call = model.callsFor("test-primary").at(-1)!;
  return (call.tools ?? [])
    .map((tool) => (tool as { function: { name: string } }).function.name)
    .sort((a, b) => a.localeCompare(b));
}

async function chatAndSettle(agentId: string, guildId: string, channel: string, roles: string[]) {
  model.script({ text: "ok" });
  const response = await post(chatIn(guildId, channel, "what can you do?", roles));
  expect(response.status).toBe(200);
  await settledJournal(discordRoom(agentId, channel));
  await discord.waitForCalls(1);
  discord.reset();
}

describe("Discord settings per server and channel: validation", () => {
  it("names every bad path and stores nothing", async () => {
    const before = await json<Record<string, unknown>>(await api("GET", "/clients/discord/config"));
    const response = await configure({
      guilds: {
        "900000000000000001": { respond: "sometimes", toolRoles: { remember: [] } },
        "900000000000000003": {
          dailyTokens: 0,
          memberDailyTokens: 1.5,
          autoThread: "yes",
          filter: { patterns: ["ok", "(a)\\1"], maxLinks: -1, action: "ban" },
        },
        "not-an-id": {},
      },
      channels: { "800000000000000001": { agentId: "ada" } },
    });
    expect(response.status).toBe(400);
    const { error } = await json<{
      error: { details: { issues: Array<{ path: string }> } };
    }>(response);
    const paths = error.details.issues.map((issue) => issue.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "guilds.900000000000000001.respond",
        "guilds.900000000000000001.toolRoles.remember",
        "guilds.not-an-id",
        "channels.800000000000000001",
        "guilds.900000000000000003.dailyTokens",
        "guilds.900000000000000003.memberDailyTokens",
        "guilds.900000000000000003.autoThread",
        "guilds.900000000000000003.filter.patterns.1",
        "guilds.900000000000000003.filter.maxLinks",
        "guilds.900000000000000003.filter.action",
      ]),
    );
    expect(await json(await api("GET", "/clients/discord/config"))).toEqual(before);
  });

  it("refuses a server's agent that does not exist (404 naming the path)", async () => {
    const response = await configure({ guilds: { "900000000000000002": { agentId: "nobody" } } });
    expect(response.status).toBe(404);
    expect((await json<{ error: { message: string } }>(response)).error.message).toContain(
      'guilds.900000000000000002.agentId: no agent with id "nobody"',
    );
  });

  it("reads back what was stored, with empty guilds and channels by default", async () => {
    const agentId = await createTestAgent();
    const config = {
      defaultAgentId: null,
      allowedChannels: [],
      guilds: {
        "900000000000000003": {
          agentId,
          respond: "always",
          tools: ["remember", "github__*"],
          toolRoles: { remember: ["555000000000000001"] },
        },
      },
      channels: { "800000000000000009": { respond: "never" } },
    };
    expect((await configure(config)).status).toBe(200);
    expect(await json(await api("GET", "/clients/discord/config"))).toEqual(config);
    expect((await configure({})).status).toBe(200);
    expect(await json(await api("GET", "/clients/discord/config"))).toEqual({
      defaultAgentId: null,
      allowedChannels: [],
      guilds: {},
      channels: {},
    });
  });
});

describe("Discord settings per server and channel: a /chat turn", () => {
  it("a server's agent serves its channels that chose none; a channel's /agent choice wins", async () => {
    const guildId = snowflake();
    const serverAgent = await createTestAgent({ settings: { memory: { factsEvery: 1000 } } });
    expect((await configure({ guilds: { [guildId]: { agentId: serverAgent } } })).status).toBe(200);
    const channel = snowflake();
    await chatAndSettle(serverAgent, guildId, channel, []);
    const stored = await json<{ messages: unknown[] }>(
      await api("GET", `/agents/${serverAgent}/rooms/discord:${channel}/messages`),
    );
    expect(stored.messages.length).toBeGreaterThan(0);

    // Another channel of the same server that picked its own agent with /agent.
    const own = snowflake();
    const chosen = await useAgentIn(own);
    discord.reset();
    await chatAndSettle(chosen, guildId, own, []);
    const elsewhere = await json<{ messages: unknown[] }>(
      await api("GET", `/agents/${serverAgent}/rooms/discord:${own}/messages`),
    );
    expect(elsewhere.messages).toEqual([]);
  });

  it("offers only the tools allowed there, and a role-gated tool only to members with its role", async () => {
    const guildId = snowflake();
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    discord.reset();
    const role = "555000000000000001";
    expect(
      (
        await configure({
          guilds: {
            [guildId]: {
              tools: ["remember", "current_time", "get_chat_history"],
              toolRoles: { remember: [role] },
            },
          },
          channels: { [channel]: { tools: ["remember", "current_time"] } },
        })
      ).status,
    ).toBe(200);
    // The channel's list wins over the server's; remember needs the role.
    await chatAndSettle(agentId, guildId, channel, []);
    expect(offeredTools()).toEqual(["current_time"]);
    await chatAndSettle(agentId, guildId, channel, ["555000000000000999", role]);
    expect(offeredTools()).toEqual(["current_time", "remember"]);
    // Another channel of the server: the server's list applies.
    const other = snowflake();
    const otherAgent = await useAgentIn(other);
    discord.reset();
    await chatAndSettle(otherAgent, guildId, other, []);
    expect(offeredTools()).toEqual(["current_time", "get_chat_history"]);
  });

  it("a /chat in a thread takes its parent's /agent, allow-list entry and tools; a category does not count", async () => {
    const parent = snowflake();
    const agentId = await useAgentIn(parent);
    discord.reset();
    const category = snowflake();
    expect(
      (
        await configure({
          allowedChannels: [parent, category],
          channels: { [parent]: { tools: ["current_time"] }, [category]: { tools: ["remember"] } },
        })
      ).status,
    ).toBe(200);
    const guildId = snowflake();
    const inChannel = (channel: Record<string, unknown>) => {
      const body = JSON.parse(chatIn(guildId, String(channel.id), "what can you do?")) as Record<
        string,
        unknown
      >;
      body.channel = channel;
      return JSON.stringify(body);
    };
    const thread = snowflake();
    model.script({ text: "ok" });
    const answered = await post(inChannel({ id: thread, type: 11, parent_id: parent }));
    expect(await json(answered)).toEqual({ type: 5 });
    await settledJournal(discordRoom(agentId, thread));
    expect(offeredTools()).toEqual(["current_time"]);
    // A text channel's parent_id is its category: not a thread, so the category's entry is not its.
    const refused = await post(inChannel({ id: snowflake(), type: 0, parent_id: category }));
    expect((await json<{ data: { content: string } }>(refused)).data.content).toContain(
      "not enabled in this channel",
    );
  });

  it("leaves the agent's tools alone in a server with no settings", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    discord.reset();
    await chatAndSettle(agentId, snowflake(), channel, []);
    expect(offeredTools()).toEqual(
      expect.arrayContaining(["current_time", "get_chat_history", "remember"]),
    );
  });
});
