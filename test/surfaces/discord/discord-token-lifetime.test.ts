// Discord's interaction token lives 15 minutes (docs/discord.md, "Replies"): a reply finished
// within them edits the deferred response; one finished after them goes to the channel with the
// bot token, and so does the rest of a reply the deadline cuts in two. The clock is moved, not
// waited out: Date.now is shared by the test and the room, which reads it when it delivers.
import { afterEach, describe, expect, it, type MockInstance, vi } from "vitest";
import {
  APP_ID,
  chat,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../../helpers/discord.ts";
import { discordRoom, settledJournal } from "../../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();

const MINUTE_MS = 60_000;
/** Discord's figure, not the code's constant: the test holds the documented rule. */
const TOKEN_LIFETIME_MS = 15 * MINUTE_MS;
const realNow = Date.now.bind(Date);
let clock: MockInstance<() => number> | null = null;

/** From now on the clock reads `offset()` ms ahead of the real one (asked at every reading). */
function moveClock(offset: () => number): void {
  clock?.mockRestore();
  clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + offset());
}

afterEach(() => {
  clock?.mockRestore();
  clock = null;
});

/** A /chat whose model call is held open until `answer` is given. */
async function turnInFlight(channel: string) {
  const agentId = await useAgentIn(channel);
  model.script({ hang: true });
  const ack = await post(chat(channel, "what's on today?"));
  expect(await ack.json()).toEqual({ type: 5 });
  await model.waitForHang();
  return {
    agentId,
    /** Lets the model answer, and resolves once the room says the reply was delivered. */
    async answer(text: string) {
      model.releaseHung({ text });
      const [turn] = await settledJournal(discordRoom(agentId, channel));
      expect(turn).toMatchObject({ status: "evaluated", deliveryStatus: "delivered" });
      return turn!;
    },
  };
}

const webhook = new RegExp(`^/api/v10/webhooks/${APP_ID}/tok-\\d+`);

describe("Discord interaction token: 15 minutes, then the channel", () => {
  it("edits the deferred response when the reply is ready 14 minutes after the interaction", async () => {
    const channel = snowflake();
    const turn = await turnInFlight(channel);
    moveClock(() => 14 * MINUTE_MS);
    await turn.answer("Still in time.");
    expect(discord.calls).toHaveLength(1);
    expect(discord.calls[0]).toMatchObject({
      method: "PATCH",
      body: { content: "Still in time." },
    });
    expect(discord.calls[0]!.path).toMatch(webhook);
    expect(discord.calls[0]!.path).toMatch(/\/messages\/@original$/);
  });

  it("posts the reply in the channel with the bot token when it is ready after the token aged out", async () => {
    const channel = snowflake();
    const turn = await turnInFlight(channel);
    moveClock(() => TOKEN_LIFETIME_MS);
    await turn.answer("Sorry for the wait.");
    // No attempt on the dead token: one message, in the channel, as the bot.
    expect(discord.attempts).toHaveLength(1);
    expect(discord.calls[0]).toMatchObject({
      method: "POST",
      path: `/api/v10/channels/${channel}/messages`,
      body: { content: "Sorry for the wait.", allowed_mentions: { parse: [] } },
      headers: { authorization: "Bot test-bot-token-not-real" },
    });
  });

  it("sends the rest of a long reply to the channel when the token ages out part-way", async () => {
    const channel = snowflake();
    const turn = await turnInFlight(channel);
    // The deadline passes right after Discord took the first message.
    moveClock(() => (discord.calls.length > 0 ? TOKEN_LIFETIME_MS : 0));
    const paragraph = (n: number) => `Paragraph ${n}. ${"Filler words for length. ".repeat(60)}`;
    const { deliveredParts } = await turn.answer([1, 2, 3].map(paragraph).join("\n\n"));
    expect(deliveredParts).toBeGreaterThanOrEqual(2);
    expect(discord.calls).toHaveLength(deliveredParts);
    const [first, ...rest] = discord.calls;
    expect(first!.method).toBe("PATCH");
    expect(first!.path).toMatch(webhook);
    expect(first!.body.content).toContain("Paragraph 1.");
    for (const call of rest) {
      expect(call).toMatchObject({
        method: "POST",
        path: `/api/v10/channels/${channel}/messages`,
        headers: { authorization: "Bot test-bot-token-not-real" },
      });
    }
    expect(rest.at(-1)!.body.content).toContain("Paragraph 3.");
  });

  it("posts in the channel when Discord says the token is gone before its 15 minutes (404)", async () => {
    const channel = snowflake();
    const turn = await turnInFlight(channel);
    discord.failNext({
      status: 404,
      path: "/messages/@original",
      body: { message: "Unknown Webhook", code: 10015 },
    });
    await turn.answer("Here anyway.");
    expect(discord.attempts.map((a) => a.method)).toEqual(["PATCH", "POST"]);
    expect(discord.calls).toHaveLength(1);
    expect(discord.calls[0]).toMatchObject({
      method: "POST",
      path: `/api/v10/channels/${channel}/messages`,
      body: { content: "Here anyway." },
    });
  });
});
