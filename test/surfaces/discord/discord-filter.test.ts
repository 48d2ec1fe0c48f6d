// /chat under a server's filter before the model (`guilds.<id>.filter` of
// `POST /clients/discord/config`): a declined message is stored in its room as a declined turn, the
// person is told privately at once, and nothing else is sent and no model is called. The Gateway's
// side (deleting, the log channel) is test/gateway/message-filter.spec.ts.
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
