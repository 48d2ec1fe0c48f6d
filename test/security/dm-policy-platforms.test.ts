// One DM policy for every chat platform: `settings.directMessages`, with a platform's own key
// (`settings.telegram.directMessages`, `settings.discord.directMessages`) winning on that platform.
// Driven through Telegram's webhook: its private chats go through the shared intake, as Slack DMs
// and Discord Gateway DMs do.
import { describe, expect, it } from "vitest";
import { roomName } from "../../src/objects/conversation/room-client.ts";
import { messageUpdate } from "../stand-ins/telegram-stand-in.ts";
import { createTestAgent, json } from "../helpers/api.ts";
import { journalRows, settledJournal } from "../helpers/room-journal.ts";
import {
  bindTelegram,
  postUpdate,
  TELEGRAM_OWNER_ID,
  useTelegramStandIns,
} from "../helpers/telegram.ts";

const { model, telegram } = useTelegramStandIns();

let strangerCounter = 0;
function privateMessage(userId: number, text: string) {
  return messageUpdate({
    chat: { id: userId, type: "private" },
    from: { id: userId, first_name: "Someone" },
    text,
  });
}

async function outcomeOf(update: unknown): Promise<string> {
  const response = await postUpdate(update);
  expect(response.status).toBe(200);
  return (await json<{ outcome: string }>(response)).outcome;
}

describe("the DM policy, one setting for every platform", () => {
  it('settings.directMessages "everyone" opens Telegram private chats to a stranger', async () => {
    const agentId = await createTestAgent({
      settings: { directMessages: "everyone", discord: { directMessages: "off" } },
    });
    await bindTelegram(agentId);
    strangerCounter += 1;
    const stranger = 810000000 + strangerCounter;
    model.script({ text: "Hello, stranger." });
    expect(await outcomeOf(privateMessage(stranger, "hi"))).toBe("queued");
    await settledJournal(roomName(agentId, `telegram:${stranger}`));
    // Discord's own "off" is Discord's alone.
    expect(telegram.sent(stranger)).toEqual(["Hello, stranger."]);
  });

  it("settings.telegram.directMessages wins over settings.directMessages on Telegram", async () => {
    const agentId = await createTestAgent({
      settings: { directMessages: "everyone", telegram: { directMessages: "off" } },
    });
    await bindTelegram(agentId);
    const before = model.callsFor("test-primary").length;
    // "off" refuses even an owner.
    expect(await outcomeOf(privateMessage(TELEGRAM_OWNER_ID, "hi"))).toBe("dm_refused");
    expect(await journalRows(roomName(agentId, `telegram:${TELEGRAM_OWNER_ID}`))).toEqual([]);
    expect(model.callsFor("test-primary").length).toBe(before);
  });

  it("an older file's settings.discord.directMessages does not open Telegram", async () => {
    const agentId = await createTestAgent({
      settings: { discord: { directMessages: "everyone" } },
    });
    await bindTelegram(agentId);
    strangerCounter += 1;
    const stranger = 810000000 + strangerCounter;
    expect(await outcomeOf(privateMessage(stranger, "hi"))).toBe("dm_refused");
    expect(await journalRows(roomName(agentId, `telegram:${stranger}`))).toEqual([]);
  });
});
