// Discord's /task and /remember keep the server's rules, as /chat does (issue 53): the filter reads
// a task's goal and a fact before anything starts or is stored, a role-gated tool is neither
// offered to a task's steps nor run, a member over the server's budget gets no model call from a
// task, and /remember is the `remember` tool by hand, gated by the same role.
import { afterEach, describe, expect, it } from "vitest";
import { api, json } from "../../helpers/api.ts";
import { command, post, snowflake, useAgentIn, useDiscordStandIns } from "../../helpers/discord.ts";
import { discordRoom, settledJournal } from "../../helpers/room-journal.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
} from "../../helpers/task-script.ts";

const { model, discord } = useDiscordStandIns();
const ROLE = "555000000000000077";

afterEach(async () => {
  expect((await api("POST", "/clients/discord/config", { body: {} })).status).toBe(200);
});

async function configure(guildId: string, settings: Record<string, unknown>): Promise<void> {
  const response = await api("POST", "/clients/discord/config", {
    body: { guilds: { [guildId]: settings } },
  });
  expect(response.status).toBe(200);
}

/** A command in a server, by `user` holding `roles` there. */
function commandIn(
  name: string,
  o: { guildId: string; channel: string; user: string; roles?: string[]; option: [string, string] },
): string {
  const body = JSON.parse(
    command(name, {
      channel: o.channel,
      user: o.user,
      options: [{ name: o.option[0], type: 3, value: o.option[1] }],
    }),
  ) as { guild_id: string; member: Record<string, unknown> };
  body.guild_id = o.guildId;
  body.member.roles = o.roles ?? [];
  return JSON.stringify(body);
}

/** The tool names offered in every model request that offered any. */
function offeredToolNames(): string[][] {
  return model.calls
    .filter((call) => (call.tools ?? []).length > 0)
    .map((call) =>
      (call.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name),
    );
}

async function factsOf(agentId: string, userId: string): Promise<string[]> {
  const page = await json<{ memories: Array<{ text: string }> }>(
    await api("GET", `/memories?agentId=${agentId}&userId=${userId}&type=fact`),
  );
  return page.memories.map((memory) => memory.text);
}

describe("Discord /task and /remember under the server's rules", () => {
  it("the filter declines a task's goal: nothing starts, no model call, the member is told", async () => {
    const guildId = snowflake();
    const channel = snowflake();
    await useAgentIn(channel);
    await configure(guildId, { filter: { words: ["casino"] } });
    const before = model.calls.length;
    const response = await post(
      commandIn("task", {
        guildId,
        channel,
        user: "700000000000000301",
        option: ["goal", "casino: store my fact"],
      }),
    );
    expect(await response.json()).toMatchObject({
      type: 4,
      data: { content: expect.stringContaining("This server's filter declined your task") },
    });
    expect(model.calls.length).toBe(before);
  });

  it("a task's steps are not offered a tool the member's roles do not allow, and cannot run it", async () => {
    const guildId = snowflake();
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    await configure(guildId, { toolRoles: { remember: [ROLE] } });
    const user = "700000000000000302";
    discord.reset();
    model.reset();
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Store the fact"], ["The fact is stored"])],
          // Named although it was not offered: refused, nothing stored.
          act: [
            { toolCalls: [{ name: "remember", arguments: { fact: "my code is 1234" } }] },
            { text: "I could not store it." },
          ],
          reflect: [reflectReply(false)],
          evaluate: [evaluateReply([false], "Not stored.")],
        }),
      ),
    );
    const response = await post(
      commandIn("task", { guildId, channel, user, option: ["goal", "store my fact"] }),
    );
    expect(await response.json()).toEqual({ type: 5 });
    await discord.waitForCalls(2);
    const offered = offeredToolNames();
    expect(offered.length).toBeGreaterThan(0);
    for (const names of offered) expect(names).not.toContain("remember");
    expect(await factsOf(agentId, `discord:${user}`)).toEqual([]);
  });

  it("a member over the server's budget gets no model call from a task, and is told why", async () => {
    const guildId = snowflake();
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const user = "700000000000000303";
    await configure(guildId, { memberDailyTokens: 50 });
    // One /chat spends the member's day (the stand-in counts a token per 4 characters).
    model.script({ text: "First answer." });
    const chatted = await post(
      commandIn("chat", { guildId, channel, user, option: ["message", "hello there"] }),
    );
    expect(chatted.status).toBe(200);
    await settledJournal(discordRoom(agentId, channel));
    discord.reset();
    const before = model.calls.length;
    const response = await post(
      commandIn("task", { guildId, channel, user, option: ["goal", "write me a long report"] }),
    );
    expect(await response.json()).toEqual({ type: 5 });
    const [report] = await discord.waitForCalls(1);
    expect((report!.body as { content: string }).content).toContain(
      "the member's daily budget is used",
    );
    expect(model.calls.length).toBe(before);
  });

  it("/remember: the filter reads the fact, and a role-gated remember needs the role", async () => {
    const guildId = snowflake();
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    await configure(guildId, { filter: { words: ["casino"] }, toolRoles: { remember: [ROLE] } });
    const user = "700000000000000304";
    const remember = (fact: string, roles: string[]) =>
      post(commandIn("remember", { guildId, channel, user, roles, option: ["fact", fact] }));

    const declined = await remember("casino nights are on fridays", [ROLE]);
    expect(await declined.json()).toMatchObject({
      data: { content: "This server's filter declined that fact; I won't remember it." },
    });
    const withheld = await remember("I like tea", []);
    expect(await withheld.json()).toMatchObject({
      data: { content: "This server's tool settings don't let me remember facts for you here." },
    });
    expect(await factsOf(agentId, `discord:${user}`)).toEqual([]);

    const stored = await remember("I like tea", [ROLE]);
    expect(await stored.json()).toMatchObject({
      data: { content: expect.stringContaining("Got it, I'll remember") },
    });
    expect(await factsOf(agentId, `discord:${user}`)).toEqual(["I like tea"]);
  });
});
