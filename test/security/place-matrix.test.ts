// The place matrix (issue 53), like the cross-tenant one: for every path a Discord member reaches a
// model or memory through an interaction (/chat, /task, /remember, a task question's answer),
// each rule of the server holds, asserted on the final state: no model request, nothing stored
// that the rule forbids, and the member told. The rows and columns are test/security/place-paths.ts,
// which test/node/place-paths.spec.ts builds from the code; the other paths' cells name their tests.
import { afterEach, describe, expect, it } from "vitest";
import { api, json } from "../helpers/api.ts";
import {
  command,
  dm,
  modalSubmit,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../helpers/discord.ts";
import { discordRoom, settledJournal, turnOutcomes } from "../helpers/room-journal.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
} from "../helpers/task-script.ts";
import { ENTRY_PATHS, type PlaceRule } from "./place-paths.ts";

const { model, discord } = useDiscordStandIns();
const ROLE = "555000000000000088";
const OWNER = "610000000000000001";
type Command = "chat" | "task" | "remember";
const OPTION: Record<Command, string> = { chat: "message", task: "goal", remember: "fact" };

afterEach(async () => {
  expect((await api("POST", "/clients/discord/config", { body: {} })).status).toBe(200);
});

interface Place {
  agentId: string;
  guildId: string;
  channel: string;
  user: string;
}

async function placeWith(settings: (place: Omit<Place, "agentId">) => Record<string, unknown>) {
  const guildId = snowflake();
  const channel = snowflake();
  const agentId = await useAgentIn(channel);
  const place = { agentId, guildId, channel, user: `7000${snowflake().slice(-14)}` };
  const response = await api("POST", "/clients/discord/config", { body: settings(place) });
  expect(response.status).toBe(200);
  discord.reset();
  model.reset();
  return place;
}

/** A command in the place's server, by `user` (the place's member unless named) with `roles`. */
async function send(
  place: Place,
  name: Command,
  text: string,
  o: { roles?: string[]; user?: string } = {},
): Promise<{ type: number; data?: { content?: string } }> {
  const body = JSON.parse(
    command(name, {
      channel: place.channel,
      user: o.user ?? place.user,
      options: [{ name: OPTION[name], type: 3, value: text }],
    }),
  ) as { guild_id: string; member: Record<string, unknown> };
  body.guild_id = place.guildId;
  body.member.roles = o.roles ?? [];
  const response = await post(JSON.stringify(body));
  expect(response.status).toBe(200);
  return (await response.json()) as { type: number; data?: { content?: string } };
}

async function factsOf(place: Place): Promise<string[]> {
  const page = await json<{ memories: Array<{ text: string }> }>(
    await api("GET", `/memories?agentId=${place.agentId}&userId=discord:${place.user}&type=fact`),
  );
  return page.memories.map((memory) => memory.text);
}

/** Every tool name offered in a model request since the last reset. */
function offeredTools(): string[] {
  return model.calls.flatMap((call) =>
    (call.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name),
  );
}

/** A model that calls `remember` whatever it was offered, then gives up. */
function modelCallsRemember(name: Command): void {
  if (name === "task")
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Store the fact"], ["Stored"])],
          act: [
            { toolCalls: [{ name: "remember", arguments: { fact: "my code is 1234" } }] },
            { text: "Could not store it." },
          ],
          reflect: [reflectReply(false)],
          evaluate: [evaluateReply([false], "Not stored.")],
        }),
      ),
    );
  else
    model.script(
      { toolCalls: [{ name: "remember", arguments: { fact: "my code is 1234" } }] },
      { text: "Done." },
    );
}

/** The member (or another, for a server's budget) spends the day with one answered /chat. */
async function spendTheDay(place: Place, user: string): Promise<void> {
  model.script({ text: "First answer." });
  await send(place, "chat", "hello there", { user });
  await settledJournal(discordRoom(place.agentId, place.channel));
  discord.reset();
  model.reset();
}

/** Waits until the deferred work has posted what it says, then returns all of it. */
async function posted(count: number): Promise<string> {
  const calls = await discord.waitForCalls(count);
  return calls.map((call) => (call.body as { content?: string }).content ?? "").join("\n");
}

const FILTER_REFUSAL: Record<Command, string> = {
  chat: "This server's filter declined your message",
  task: "This server's filter declined your task",
  remember: "This server's filter declined that fact",
};

/** What each cell runs: the setting, what the member does, and the final state asserted. */
const CASES: Record<Command, Partial<Record<PlaceRule, () => Promise<void>>>> = {
  chat: {},
  task: {},
  remember: {},
};

for (const name of ["chat", "task", "remember"] as const) {
  const filtered = (filter: Record<string, unknown>, text: string) => async () => {
    const place = await placeWith(({ guildId }) => ({ guilds: { [guildId]: { filter } } }));
    const answer = await send(place, name, text, { roles: [ROLE] });
    expect(answer.data?.content).toContain(FILTER_REFUSAL[name]);
    if (name === "chat") {
      await settledJournal(discordRoom(place.agentId, place.channel));
      expect(await turnOutcomes(discordRoom(place.agentId, place.channel))).toEqual(["ignored"]);
    }
    expect(model.calls).toHaveLength(0);
    expect(await factsOf(place)).toEqual([]);
  };
  CASES[name]["filter word"] = filtered({ words: ["casino"] }, "casino: my code is 1234");
  CASES[name]["filter pattern"] = filtered({ patterns: ["cas[i1]no"] }, "CAS1NO: my code is 1234");

  const withheld =
    (settings: (place: Omit<Place, "agentId">) => Record<string, unknown>) => async () => {
      const place = await placeWith(settings);
      modelCallsRemember(name);
      const answer = await send(place, name, "remember that my code is 1234");
      if (name === "remember") {
        expect(answer.data?.content).toBe(
          "This server's tool settings don't let me remember facts for you here.",
        );
        expect(model.calls).toHaveLength(0);
      } else {
        expect(answer).toEqual({ type: 5 });
        if (name === "chat") await settledJournal(discordRoom(place.agentId, place.channel));
        else await posted(2);
        expect(model.calls.length).toBeGreaterThan(0);
        expect(offeredTools()).not.toContain("remember");
      }
      expect(await factsOf(place)).toEqual([]);
    };
  CASES[name]["role-gated tool"] = withheld(({ guildId }) => ({
    guilds: { [guildId]: { toolRoles: { remember: [ROLE] } } },
  }));
  CASES[name]["channel tool list"] = withheld(({ channel }) => ({
    channels: { [channel]: { tools: ["current_time"] } },
  }));

  if (name !== "remember") {
    const overBudget = (scope: "member" | "server") => async () => {
      const place = await placeWith(({ guildId }) => ({
        guilds: { [guildId]: scope === "member" ? { memberDailyTokens: 50 } : { dailyTokens: 50 } },
      }));
      await spendTheDay(place, scope === "member" ? place.user : `7001${snowflake().slice(-14)}`);
      const answer = await send(place, name, "write me a long report");
      expect(answer).toEqual({ type: 5 });
      const said = await posted(1);
      expect(said).toContain(
        name === "chat"
          ? scope === "member"
            ? "Your budget for today is used"
            : "This server's budget for today is used"
          : `the ${scope}'s daily budget is used`,
      );
      expect(model.calls).toHaveLength(0);
    };
    CASES[name]["member budget"] = overBudget("member");
    CASES[name]["server budget"] = overBudget("server");
  }

  CASES[name]["DM policy"] = async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    // The owner points the DM channel at the agent; a stranger then writes there.
    const chosen = await post(
      dm("agent", { channel, user: OWNER, options: [{ name: "name", type: 3, value: agentId }] }),
    );
    expect(chosen.status).toBe(200);
    model.reset();
    const stranger = `7002${snowflake().slice(-14)}`;
    const response = await post(
      dm(name, {
        channel,
        user: stranger,
        options: [{ name: OPTION[name], type: 3, value: "remember that my code is 1234" }],
      }),
    );
    expect(await response.json()).toMatchObject({
      data: { content: expect.stringContaining("direct messages only from the bot's owners") },
    });
    expect(model.calls).toHaveLength(0);
    expect(await factsOf({ agentId, guildId: "", channel, user: stranger })).toEqual([]);
  };
}

describe("the place matrix: a Discord member's commands keep the server's rules", () => {
  for (const path of ENTRY_PATHS) {
    const name = /^Discord \/(chat|task|remember)$/.exec(path.name)?.[1] as Command | undefined;
    if (!name || !path.rules) continue;
    for (const [rule, cell] of Object.entries(path.rules) as [
      PlaceRule,
      (typeof path.rules)[PlaceRule],
    ][]) {
      if (!("heldBy" in cell) || !cell.heldBy.startsWith("test/security/place-matrix.test.ts"))
        continue;
      const run = CASES[name][rule];
      // A cell the table gives this file and no case here is a hole in the matrix: it fails.
      it(`/${name} keeps the ${rule}`, async () => {
        expect(run, `no case for /${name} × ${rule}`).toBeDefined();
        await run!();
      });
    }
  }

  it("a task question's answer goes through the server's filter", async () => {
    const place = await placeWith(({ guildId }) => ({
      guilds: { [guildId]: { filter: { words: ["casino"] } } },
    }));
    const submitted = JSON.parse(
      modalSubmit(place.channel, place.user, `tinm:0123456789abcdef:${place.agentId}`, {
        answer: "the casino on main street",
      }),
    ) as Record<string, unknown>;
    const response = await post(JSON.stringify({ ...submitted, guild_id: place.guildId }));
    expect(await response.json()).toMatchObject({
      data: { content: "This server's filter declined your answer; it was not sent." },
    });
  });
});
