// /chat under a server's filter before the model (`guilds.<id>.filter` of
// `POST /clients/discord/config`): a declined message is stored in its room as a declined turn, the
// person is told privately at once, and nothing else is sent and no model is called. The Gateway's
// side (deleting, the log channel) is test/gateway/message-filter.spec.ts. Patterns past the
// filter's cost bound are refused when saved; saved before it, they are suspended and reported.
// A filter outside a server, a regex literal and a lookbehind are refused saying what to write.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, json } from "../../helpers/api.ts";
import { chat, post, snowflake, useAgentIn, useDiscordStandIns } from "../../helpers/discord.ts";
import { discordRoom, settledJournal, turnOutcomes } from "../../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();
/** The server of the helpers' interactions. */
const SERVER = "900000000000000001";

describe("/chat: the server's filter before the model", () => {
  it("stores a filtered message as declined and tells only the person, with no model call", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const saved = await api("POST", "/clients/discord/config", {
      body: { guilds: { [SERVER]: { filter: { words: ["casino"], action: "delete" } } } },
    });
    expect(saved.status).toBe(200);

    const response = await post(chat(channel, "where is the nearest Casino?"));
    expect(response.status).toBe(200);
    const answer = await json<{ type: number; data: { content: string; flags: number } }>(response);
    // A message at once (type 4), ephemeral (flag 64): nobody else sees it.
    expect(answer.type).toBe(4);
    expect(answer.data.flags).toBe(64);
    expect(answer.data.content).toContain("filter declined your message (a filtered word)");

    model.script({ text: "Here." });
    expect((await post(chat(channel, "what's a good card game?"))).status).toBe(200);
    await settledJournal(discordRoom(agentId, channel), 2);
    expect(await turnOutcomes(discordRoom(agentId, channel))).toEqual(["ignored", "replied"]);
    expect(model.calls).toHaveLength(1);
    expect(JSON.stringify(model.calls[0]!.messages)).not.toContain("Casino");
    // The declined turn sent nothing to the interaction; the other one its answer. A slash
    // command has no message of anyone's to delete.
    await discord.waitForCalls(1);
    expect(discord.calls.map((call) => [call.method, call.body.content])).toEqual([
      ["PATCH", "Here."],
    ]);
  });
});

/** A config as an older version stored it, past today's schema: written to D1 as it was. */
async function storeDiscordConfigAsBefore(config: unknown): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO client_configs (client_id, config, updated_at) VALUES ('discord', ?, ?) " +
      "ON CONFLICT(client_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
  )
    .bind(JSON.stringify(config), Date.now())
    .run();
}

const HOSTILE = "[\\p{L}\\p{N}]{900}x";

describe("/chat: what the filter's patterns may cost", () => {
  it("refuses a pattern past the cost bound when saved, naming its path and the bound", async () => {
    const saved = await api("POST", "/clients/discord/config", {
      body: { guilds: { [SERVER]: { filter: { patterns: ["casino\\d+", HOSTILE] } } } },
    });
    expect(saved.status).toBe(400);
    const body = await json<{ error: { code: string; message: string } }>(saved);
    expect(body.error.code).toBe("validation");
    expect(body.error.message).toContain(
      `guilds.${SERVER}.filter.patterns.1: compiles to 903 RE2 instructions`,
    );
    expect(body.error.message).toContain("may compile to 150 in all");
  });

  it("keeps rules saved before the bound: the pattern past it suspended and reported, the rest applied", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const config = await json<Record<string, unknown>>(await api("GET", "/clients/discord/config"));
    await storeDiscordConfigAsBefore({
      ...config,
      guilds: { [SERVER]: { filter: { patterns: ["casino\\d+", HOSTILE, "scam"] } } },
    });

    // The config route shows both patterns, and which one is suspended and why.
    const shown = await json<{
      guilds: Record<string, { filter: { patterns: string[]; suspended: unknown[] } }>;
    }>(await api("GET", "/clients/discord/config"));
    expect(shown.guilds[SERVER]!.filter.patterns).toEqual(["casino\\d+", HOSTILE, "scam"]);
    expect(shown.guilds[SERVER]!.filter.suspended).toEqual([
      { index: 1, pattern: HOSTILE, reason: expect.stringContaining("903 RE2 instructions") },
    ]);
    // /health counts it (public: counts, never the patterns).
    const health = await json<{ filters: { suspendedPatterns: Record<string, number> } }>(
      await api("GET", "/health"),
    );
    expect(health.filters.suspendedPatterns).toEqual({ discord: 1, telegram: 0, slack: 0 });
    expect(JSON.stringify(health)).not.toContain("900");

    // The patterns within the bound still decline; what only the suspended one finds is answered.
    const declined = await json<{ data: { content: string } }>(
      await post(chat(channel, "CASINO777 tonight")),
    );
    expect(declined.data.content).toContain("filter declined your message");
    model.script({ text: "Sure." });
    expect((await post(chat(channel, `${"b".repeat(900)}x`))).status).toBe(200);
    await settledJournal(discordRoom(agentId, channel), 2);
    expect(await turnOutcomes(discordRoom(agentId, channel))).toEqual(["ignored", "replied"]);

    expect((await api("POST", "/clients/discord/config", { body: {} })).status).toBe(200);
    const after = await json<{ filters: { suspendedPatterns: Record<string, number> } }>(
      await api("GET", "/health"),
    );
    expect(after.filters.suspendedPatterns.discord).toBe(0);
  });
});

describe("POST /clients/discord/config: where the filter goes and how patterns are written", () => {
  /** The 400 a config gets, as the operator reads it. */
  async function refusal(body: unknown): Promise<string> {
    const saved = await api("POST", "/clients/discord/config", { body });
    expect(saved.status).toBe(400);
    const { error } = await json<{ error: { code: string; message: string } }>(saved);
    expect(error.code).toBe("validation");
    return error.message;
  }

  it("refuses a filter at the top level or on a channel, saying it goes per server", async () => {
    // Telegram's and Slack's filter is top-level; Discord's is a server's setting.
    const topLevel = await refusal({ filter: { words: ["casino"] } });
    expect(topLevel).toContain(
      `Unrecognized key: "filter" (Discord's filter is per server, not top-level: ` +
        "set it at guilds.<server id>.filter)",
    );
    const onChannel = await refusal({ channels: { [snowflake()]: { filter: { words: ["x"] } } } });
    expect(onChannel).toContain("not per channel: set it at guilds.<server id>.filter");
    // Where it belongs, the same filter is taken.
    const taken = await api("POST", "/clients/discord/config", {
      body: { guilds: { [SERVER]: { filter: { words: ["casino"] } } } },
    });
    expect(taken.status).toBe(200);
  });

  it("refuses a regex literal and a lookbehind at their paths, saying what to write", async () => {
    const literal = await refusal({
      guilds: { [SERVER]: { filter: { patterns: ["/casino/i"] } } },
    });
    expect(literal).toContain(`guilds.${SERVER}.filter.patterns.0: written like a JavaScript`);
    expect(literal).toContain('write "casino"');
    const lookbehind = await refusal({
      guilds: { [SERVER]: { filter: { patterns: ["(?<!not )spam"] } } },
    });
    expect(lookbehind).toContain(
      `guilds.${SERVER}.filter.patterns.0: not an RE2 pattern: ` +
        "lookbehind ((?<=…), (?<!…)) is not supported",
    );
    expect(lookbehind).not.toContain("named capture");
  });
});
