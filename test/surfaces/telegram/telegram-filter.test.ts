// The filter before the model on Telegram, end to end: the client's `filter` (words, RE2 patterns,
// a link limit) declines a message before any model call; the message is stored in its room as a
// declined turn and nothing is sent. Telegram says nothing of an account's age and the webhook
// deletes nothing, so those fields are refused in its config.
import { describe, expect, it } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import { settledJournal, turnOutcomes } from "../../helpers/room-journal.ts";
import {
  groupChatId,
  postUpdate,
  TELEGRAM_BOT,
  useTelegramStandIns,
} from "../../helpers/telegram.ts";
import { messageUpdate } from "../../stand-ins/telegram-stand-in.ts";

const { model, telegram } = useTelegramStandIns();

const MENTION = `@${TELEGRAM_BOT.username}`;
/** The first bytes of an OGG/Opus voice note. */
const OGG = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 9, 8, 7, 6]);
const alice = { id: 800000001, first_name: "Alice" };

function mention(chatId: number, text: string) {
  return messageUpdate({
    chat: { id: chatId, type: "supergroup", title: "Group" },
    from: alice,
    text: `${MENTION} ${text}`,
    entities: [{ type: "mention", offset: 0, length: MENTION.length }],
  });
}

const configure = (body: Record<string, unknown>) =>
  api("POST", "/clients/telegram/config", { body });

describe("Telegram: the filter before the model", () => {
  it("stores a mention holding a filtered word, with no model call, and answers the next", async () => {
    const agentId = await createTestAgent();
    const saved = await configure({
      defaultAgentId: agentId,
      filter: { words: ["casino"], patterns: ["fr[e3]{2}\\s*n[i1]tro"], maxLinks: 0 },
    });
    expect(saved.status).toBe(200);
    const chatId = groupChatId();
    model.script({ text: "Hello!" });
    for (const text of ["best CASINO here", "free nitro", "see https://a.test", "hi there"])
      expect((await postUpdate(mention(chatId, text))).status).toBe(200);
    const room = roomName(agentId, `telegram:${chatId}`);
    await settledJournal(room, 4);
    expect(await turnOutcomes(room)).toEqual(["ignored", "ignored", "ignored", "replied"]);
    expect(model.calls).toHaveLength(1);
    expect(JSON.stringify(model.calls[0]!.messages)).not.toContain("CASINO");
    expect(telegram.sent(chatId)).toEqual(["Hello!"]);
    const history = await json<{ messages: Array<{ text: string }> }>(
      await api(
        "GET",
        `/agents/${agentId}/rooms/${encodeURIComponent(`telegram:${chatId}`)}/messages`,
      ),
    );
    expect(history.messages.map((m) => m.text)).toEqual(
      expect.arrayContaining(["best CASINO here", "free nitro", "see https://a.test"]),
    );
  });

  it("an answered message edited into a filtered word leaves memory", async () => {
    const agentId = await createTestAgent();
    expect(
      (await configure({ defaultAgentId: agentId, filter: { words: ["casino"] } })).status,
    ).toBe(200);
    const chatId = groupChatId();
    model.script({ text: "Hello!" });
    const original = mention(chatId, "hi there");
    expect((await postUpdate(original)).status).toBe(200);
    const room = roomName(agentId, `telegram:${chatId}`);
    await settledJournal(room);
    const sent = original.message as { message_id: number };
    const edited = messageUpdate({
      chat: { id: chatId, type: "supergroup", title: "Group" },
      from: alice,
      text: `${MENTION} come to the casino`,
      message_id: sent.message_id,
      edited: true,
    });
    expect((await postUpdate(edited)).status).toBe(200);
    const history = await json<{ messages: Array<{ text: string }> }>(
      await api(
        "GET",
        `/agents/${agentId}/rooms/${encodeURIComponent(`telegram:${chatId}`)}/messages`,
      ),
    );
    const texts = history.messages.map((m) => m.text);
    expect(texts.join(" ")).not.toContain("casino");
    expect(texts).toContain("Hello!");
  });

  it("filters a voice note's transcript before the model, as it filters typed text", async () => {
    const agentId = await createTestAgent();
    expect(
      (await configure({ defaultAgentId: agentId, filter: { words: ["hello"] } })).status,
    ).toBe(200);
    const chatId = groupChatId();
    telegram.addFile("voice-filtered", OGG, "audio/ogg");
    model.transcribeWith({ text: "hello there, anyone home" });
    const voice = messageUpdate({
      chat: { id: chatId, type: "supergroup", title: "Group" },
      from: alice,
      reply_to_message: { message_id: 9001, from: { ...TELEGRAM_BOT, is_bot: true } },
      extra: { voice: { file_id: "voice-filtered", file_unique_id: "u-vf", duration: 2 } },
    });
    expect((await postUpdate(voice)).status).toBe(200);
    const room = roomName(agentId, `telegram:${chatId}`);
    await settledJournal(room);
    // Transcribed once, then declined by the filter: stored, never answered, no chat model call.
    expect(model.transcriptions).toHaveLength(1);
    expect(await turnOutcomes(room)).toEqual(["ignored"]);
    expect(model.calls).toHaveLength(0);
    expect(telegram.sent(chatId)).toEqual([]);
  });

  it("refuses an account age, a delete action and a log channel, naming each path", async () => {
    const agentId = await createTestAgent();
    const response = await configure({
      defaultAgentId: agentId,
      filter: { words: ["x"], minAccountAgeDays: 7, action: "delete", logChannelId: "1" },
    });
    expect(response.status).toBe(400);
    const problem = await json<{ error: { details: { issues: Array<{ path: string }> } } }>(
      response,
    );
    expect(problem.error.details.issues.map((issue) => issue.path).sort()).toEqual([
      "filter.action",
      "filter.logChannelId",
      "filter.minAccountAgeDays",
    ]);
  });
});
