// A person's daily budget on Telegram (`memberDailyTokens` in /clients/telegram/config): the chat
// layer carries it into the turn as on Discord; over it, one notice a day and no model call, while
// another person in the same group is answered. Telegram has no servers: a person's budget counts
// their turns in every chat. A voice note from someone over it is not transcribed either.
import { describe, expect, it } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { messageUpdate } from "../../stand-ins/telegram-stand-in.ts";
import { api, createTestAgent } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  groupChatId,
  postUpdate,
  TELEGRAM_BOT,
  useTelegramStandIns,
} from "../../helpers/telegram.ts";

const { model, telegram } = useTelegramStandIns();
const MENTION = `@${TELEGRAM_BOT.username}`;
/** The first bytes of an OGG/Opus voice note. */
const OGG = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 9, 8, 7, 6]);

function mention(chatId: number, from: { id: number; first_name: string }, text: string) {
  return messageUpdate({
    chat: { id: chatId, type: "supergroup", title: "Group" },
    from,
    text: `${MENTION} ${text}`,
    entities: [{ type: "mention", offset: 0, length: MENTION.length }],
  });
}

describe("Telegram: a person's daily budget", () => {
  it("over it: one notice, then silence, and no model call; someone else is answered", async () => {
    const agentId = await createTestAgent();
    const bound = await api("POST", "/clients/telegram/config", {
      body: { defaultAgentId: agentId, memberDailyTokens: 50 },
    });
    expect(bound.status).toBe(200);
    try {
      const chatId = groupChatId();
      const room = roomName(agentId, `telegram:${chatId}`);
      const carol = { id: 800000101, first_name: "Carol" };
      const dave = { id: 800000102, first_name: "Dave" };
      model.script({ text: "First answer." });
      expect((await postUpdate(mention(chatId, carol, "hello"))).status).toBe(200);
      await settledJournal(room);
      const calls = model.callsFor("test-primary").length;

      expect((await postUpdate(mention(chatId, carol, "again?"))).status).toBe(200);
      expect((await postUpdate(mention(chatId, carol, "and again?"))).status).toBe(200);
      await settledJournal(room, 3);
      expect(telegram.sent(chatId)).toEqual([
        "First answer.",
        "Your budget for today is used; it resets at 00:00 UTC.",
      ]);
      expect(model.callsFor("test-primary").length).toBe(calls);

      model.script({ text: "Dave's answer." });
      expect((await postUpdate(mention(chatId, dave, "my turn"))).status).toBe(200);
      await settledJournal(room, 4);
      expect(telegram.sent(chatId).at(-1)).toBe("Dave's answer.");
    } finally {
      await api("POST", "/clients/telegram/config", { body: { defaultAgentId: null } });
    }
  });

  it("over it: a voice note is not transcribed, and the model is not called", async () => {
    const agentId = await createTestAgent();
    const bound = await api("POST", "/clients/telegram/config", {
      body: { defaultAgentId: agentId, memberDailyTokens: 50 },
    });
    expect(bound.status).toBe(200);
    try {
      const chatId = groupChatId();
      const room = roomName(agentId, `telegram:${chatId}`);
      const erin = { id: 800000103, first_name: "Erin" };
      model.script({ text: "First answer." });
      expect((await postUpdate(mention(chatId, erin, "hello"))).status).toBe(200);
      await settledJournal(room);
      const calls = model.calls.length;
      telegram.addFile("voice-over-budget", OGG, "audio/ogg");
      const voice = messageUpdate({
        chat: { id: chatId, type: "supergroup", title: "Group" },
        from: erin,
        reply_to_message: { message_id: 9001, from: { ...TELEGRAM_BOT, is_bot: true } },
        extra: { voice: { file_id: "voice-over-budget", file_unique_id: "u-vob", duration: 4 } },
      });
      expect((await postUpdate(voice)).status).toBe(200);
      await settledJournal(room, 2);
      expect(model.transcriptions).toHaveLength(0);
      expect(model.calls.length).toBe(calls);
      expect(telegram.sent(chatId)).toEqual([
        "First answer.",
        "Your budget for today is used; it resets at 00:00 UTC.",
      ]);
    } finally {
      await api("POST", "/clients/telegram/config", { body: { defaultAgentId: null } });
    }
  });
});
