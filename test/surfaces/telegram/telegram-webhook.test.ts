// Telegram end to end: Updates posted to POST /telegram/webhook with the secret token, turns in the
// bound agent's rooms, replies through the Bot API stand-in. Grouped by the Bot API's rules.
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { DM_CLOSED_TEXT } from "../../../src/clients/chat/dm-notice.ts";
import { UNAVAILABLE_TEXT } from "../../../src/clients/chat/member-error.ts";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { messageUpdate } from "../../stand-ins/telegram-stand-in.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import { journalRows, settledJournal } from "../../helpers/room-journal.ts";
import {
  bindTelegram,
  groupChatId,
  postUpdate,
  TELEGRAM_BOT,
  TELEGRAM_OWNER_ID,
  TELEGRAM_SECRET,
  useTelegramStandIns,
} from "../../helpers/telegram.ts";

const { model, telegram } = useTelegramStandIns();

const MENTION = `@${TELEGRAM_BOT.username}`;
const alice = { id: 800000001, first_name: "Alice" };

/** A group message that mentions the bot first. */
function mention(
  chatId: number,
  text: string,
  extra: Partial<Parameters<typeof messageUpdate>[0]> = {},
) {
  return messageUpdate({
    chat: { id: chatId, type: "supergroup", title: "Group" },
    from: alice,
    text: `${MENTION} ${text}`,
    entities: [{ type: "mention", offset: 0, length: MENTION.length }],
    ...extra,
  });
}

async function agentBound(allowedChats: string[] = []): Promise<string> {
  const agentId = await createTestAgent();
  await bindTelegram(agentId, allowedChats);
  return agentId;
}

const stored = async (agentId: string, roomId: string) =>
  (
    await json<{ messages: Array<{ text: string; role?: string }> }>(
      await api("GET", `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages`),
    )
  ).messages;

const sendMessages = () => telegram.calls.filter((call) => call.method === "sendMessage");
const primaryCalls = () => model.callsFor("test-primary").length;

describe("Telegram webhook: a group mention", () => {
  it("is answered once, as a reply to the mention in its chat", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    model.script({ text: "Four." });
    const update = mention(chatId, "what is 2+2?", { message_id: 41 });
    const response = await postUpdate(update);
    expect(response.status).toBe(200);
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(telegram.sent(chatId)).toEqual(["Four."]);
    const [sent] = sendMessages();
    expect(sent!.body.reply_parameters).toMatchObject({ message_id: 41 });
    // "typing…" was shown while the turn ran, before the reply.
    const typing = telegram.calls.findIndex((call) => call.method === "sendChatAction");
    expect(telegram.calls[typing]?.body).toMatchObject({ chat_id: chatId, action: "typing" });
    expect(typing).toBeLessThan(telegram.calls.indexOf(sent!));
    // The model read the text without the bot's mention.
    expect(JSON.stringify(model.calls.at(0)!.messages)).toContain("what is 2+2?");
    expect(JSON.stringify(model.calls.at(0)!.messages)).not.toContain(MENTION);
  });

  it("tells the member in neutral words when the model fails, never the model's error", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    model.script({ status: 400, body: { error: { message: "model fake-large does not exist" } } });
    await postUpdate(mention(chatId, "are you there?"));
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(telegram.sent(chatId)).toEqual([UNAVAILABLE_TEXT]);
  });

  it("logs a reply Telegram refuses for good as this surface's delivery failure", async () => {
    const errors = vi.spyOn(console, "error");
    onTestFinished(() => errors.mockRestore());
    const agentId = await agentBound();
    const chatId = groupChatId();
    model.script({ text: "Four." });
    telegram.failNext("sendMessage", {
      error_code: 403,
      description: "Forbidden: bot was kicked from the supergroup chat",
    });
    await postUpdate(mention(chatId, "what is 2+2?"));
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    const failed = errors.mock.calls
      .map((args) => String(args[0]))
      .filter((line) => line.includes('"delivery_failed"'))
      .map((line) => JSON.parse(line));
    expect(failed).toEqual([expect.objectContaining({ surface: "telegram-message", final: true })]);
  });

  it("takes the same Update delivered twice as one turn: one model call, one reply", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const update = mention(chatId, "hello there");
    expect((await postUpdate(update)).status).toBe(200);
    const again = await postUpdate(update);
    expect(again.status).toBe(200);
    expect((await json<{ outcome: string }>(again)).outcome).toBe("duplicate");
    const rows = await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(rows).toHaveLength(1);
    expect(primaryCalls()).toBe(1);
    expect(telegram.sent(chatId)).toHaveLength(1);
  });

  it("stores an unaddressed group message without answering it", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const update = messageUpdate({
      chat: { id: chatId, type: "supergroup" },
      from: alice,
      text: "lunch at noon, everyone",
    });
    expect((await postUpdate(update)).status).toBe(200);
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect((await stored(agentId, `telegram:${chatId}`)).map((m) => m.text)).toEqual([
      "lunch at noon, everyone",
    ]);
    expect(primaryCalls()).toBe(0);
    expect(telegram.sent(chatId)).toEqual([]);
  });

  it("keys a forum topic's message to a room of its own, and answers in the topic", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const update = mention(chatId, "in the topic", {
      message_thread_id: 77,
      is_topic_message: true,
    });
    expect((await postUpdate(update)).status).toBe(200);
    await settledJournal(roomName(agentId, `telegram:${chatId}:77`));
    expect(await journalRows(roomName(agentId, `telegram:${chatId}`))).toEqual([]);
    expect(sendMessages()[0]!.body.message_thread_id).toBe(77);
  });

  it("amends the stored text when the message is edited, without a second turn", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const original = messageUpdate({
      chat: { id: chatId, type: "supergroup" },
      from: alice,
      text: "meet at 5",
      message_id: 9,
    });
    await postUpdate(original);
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    const edit = messageUpdate({
      chat: { id: chatId, type: "supergroup" },
      from: alice,
      text: "meet at 6",
      message_id: 9,
      edited: true,
    });
    const response = await postUpdate(edit);
    expect((await json<{ outcome: string }>(response)).outcome).toBe("amended");
    expect((await stored(agentId, `telegram:${chatId}`)).map((m) => m.text)).toEqual(["meet at 6"]);
    expect(await journalRows(roomName(agentId, `telegram:${chatId}`))).toHaveLength(1);
  });

  it("splits a long reply into parts of at most 4,096 characters, the first a reply", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const paragraph = "word ".repeat(700).trim();
    model.script({ text: [paragraph, paragraph, paragraph].join("\n\n") });
    await postUpdate(mention(chatId, "write a lot", { message_id: 5 }));
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    const parts = telegram.sent(chatId);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(4_096);
    const calls = sendMessages();
    expect(calls[0]!.body.reply_parameters).toMatchObject({ message_id: 5 });
    expect(calls[1]!.body.reply_parameters).toBeUndefined();
  });

  it("ignores a chat that is not in allowedChats", async () => {
    const agentId = await agentBound(["-1009999999999"]);
    const chatId = groupChatId();
    const response = await postUpdate(mention(chatId, "anyone?"));
    expect(response.status).toBe(200);
    expect((await json<{ outcome: string }>(response)).outcome).toBe("skipped");
    expect(await journalRows(roomName(agentId, `telegram:${chatId}`))).toEqual([]);
  });
});

describe("Telegram webhook: private chats (the DM policy)", () => {
  it("refuses a non-owner's private chat under the default policy (owners)", async () => {
    const agentId = await agentBound();
    const stranger = 800000099;
    const dm = () =>
      messageUpdate({
        chat: { id: stranger, type: "private" },
        from: { id: stranger, first_name: "Stranger" },
        text: "hi bot",
      });
    const response = await postUpdate(dm());
    expect((await json<{ outcome: string }>(response)).outcome).toBe("dm_refused");
    expect(await journalRows(roomName(agentId, `telegram:${stranger}`))).toEqual([]);
    expect(primaryCalls()).toBe(0);
    // Told once, in the chat, that DMs are closed; a second DM gets silence.
    expect(telegram.sent(stranger)).toEqual([DM_CLOSED_TEXT]);
    const again = await postUpdate(dm());
    expect((await json<{ outcome: string }>(again)).outcome).toBe("dm_refused");
    expect(telegram.sent(stranger)).toEqual([DM_CLOSED_TEXT]);
  });

  it("tells a refused DM again next time when the notice could not be sent", async () => {
    await agentBound();
    const stranger = 800000098;
    const dm = () =>
      messageUpdate({
        chat: { id: stranger, type: "private" },
        from: { id: stranger, first_name: "Stranger" },
        text: "hello?",
      });
    telegram.failNext("sendMessage", {
      error_code: 400,
      description: "Bad Request: chat not found",
    });
    expect((await json<{ outcome: string }>(await postUpdate(dm()))).outcome).toBe("dm_refused");
    expect(telegram.sent(stranger)).toEqual([]);
    await postUpdate(dm());
    await postUpdate(dm());
    expect(telegram.sent(stranger)).toEqual([DM_CLOSED_TEXT]);
  });

  it("answers an owner's private chat (TELEGRAM_OWNER_IDS)", async () => {
    const agentId = await agentBound();
    model.script({ text: "Hello, owner." });
    const update = messageUpdate({
      chat: { id: TELEGRAM_OWNER_ID, type: "private" },
      from: { id: TELEGRAM_OWNER_ID, first_name: "Owner" },
      text: "hi bot",
    });
    expect((await postUpdate(update)).status).toBe(200);
    await settledJournal(roomName(agentId, `telegram:${TELEGRAM_OWNER_ID}`));
    expect(telegram.sent(TELEGRAM_OWNER_ID)).toEqual(["Hello, owner."]);
  });
});

describe("Telegram webhook: the secret token and the body", () => {
  it("refuses a wrong or missing secret with 401 and stores nothing", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const update = mention(chatId, "sneaky");
    for (const secret of [null, "wrong-secret-value-123", ""]) {
      const response = await postUpdate(update, { secret });
      expect(response.status).toBe(401);
      expect((await json<{ error: { code: string } }>(response)).error.code).toBe("unauthorized");
    }
    expect(await journalRows(roomName(agentId, `telegram:${chatId}`))).toEqual([]);
    expect(await stored(agentId, `telegram:${chatId}`)).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });

  it("refuses a prefix of the secret, and the secret with characters added, with 401", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    const update = mention(chatId, "sneaky");
    const nearMisses = [
      TELEGRAM_SECRET.slice(0, -1),
      TELEGRAM_SECRET.slice(0, 1),
      `${TELEGRAM_SECRET}x`,
      `${TELEGRAM_SECRET}${TELEGRAM_SECRET}`,
    ];
    for (const secret of nearMisses) {
      const response = await postUpdate(update, { secret });
      expect(response.status, secret).toBe(401);
    }
    expect(await journalRows(roomName(agentId, `telegram:${chatId}`))).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });

  it("answers 400 to a body that is not an Update, naming the path", async () => {
    const notJson = await postUpdate(null, { raw: "{not json" });
    expect(notJson.status).toBe(400);
    const bad = await postUpdate({ update_id: 1, message: { message_id: 1, chat: { id: "x" } } });
    expect(bad.status).toBe(400);
    const problem = await json<{ error: { code: string; message: string } }>(bad);
    expect(problem.error.code).toBe("validation");
    expect(problem.error.message).toContain("message.");
  });

  it("answers 413 to a body over 1 MB", async () => {
    const response = await postUpdate(null, { raw: `{"pad":"${"x".repeat(1024 * 1024)}"}` });
    expect(response.status).toBe(413);
  });

  it("answers 200 to a well-formed Update of a kind it does not act on", async () => {
    const response = await postUpdate({ update_id: 5, my_chat_member: { chat: { id: 1 } } });
    expect(response.status).toBe(200);
  });
});
