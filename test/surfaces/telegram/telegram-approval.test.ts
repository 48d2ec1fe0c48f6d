// Tool approval through Telegram end to end: a character marks `remember` as needing approval; the
// turn pauses and posts Approve / Deny as an inline keyboard replying to the message; only the
// requester's press counts; the prompt is edited to say who answered, and the reply follows.
import { describe, expect, it, vi } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { callbackUpdate, messageUpdate } from "../../stand-ins/telegram-stand-in.ts";
import { createTestAgent, json } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  bindTelegram,
  groupChatId,
  postUpdate,
  TELEGRAM_BOT,
  TELEGRAM_OWNER_ID,
  useTelegramStandIns,
} from "../../helpers/telegram.ts";

const { model, telegram } = useTelegramStandIns();

const MENTION = `@${TELEGRAM_BOT.username}`;
const FACT = "Dana's bees are called the Roof Committee";
const alice = { id: 800000011, first_name: "Alice" };
const bob = { id: 800000012, first_name: "Bob" };

interface Button {
  text: string;
  callback_data: string;
}

/** A mention whose model calls `remember`, and the prompt it posts: its id and its buttons. */
async function pausedTurn() {
  const agentId = await createTestAgent({
    settings: { memory: { factsEvery: 1000 }, toolApproval: ["remember"] },
  });
  await bindTelegram(agentId);
  const chatId = groupChatId();
  const chat = { id: chatId, type: "supergroup" as const };
  model.script(
    { toolCalls: [{ name: "remember", arguments: { fact: FACT } }] },
    { text: "Noted." },
  );
  const update = messageUpdate({
    chat,
    from: alice,
    text: `${MENTION} please remember my bees' name`,
    entities: [{ type: "mention", offset: 0, length: MENTION.length }],
    message_id: 31,
  });
  expect((await postUpdate(update)).status).toBe(200);
  const sent = await vi.waitFor(
    () => {
      const calls = telegram.calls.filter((c) => c.method === "sendMessage" && c.status === 200);
      const index = calls.findIndex((call) => call.body.reply_markup !== undefined);
      expect(index).toBeGreaterThanOrEqual(0);
      return { call: calls[index]!, messageId: index + 1 };
    },
    { timeout: 15_000, interval: 50 },
  );
  const [row] = (sent.call.body.reply_markup as { inline_keyboard: Button[][] }).inline_keyboard;
  const press = (who: { id: number; first_name: string }, label: string) =>
    callbackUpdate({
      from: who,
      chat,
      message_id: sent.messageId,
      data: row!.find((button) => button.text.includes(label))!.callback_data,
    });
  return { agentId, chatId, prompt: sent, press };
}

const outcome = async (response: Response) => (await json<{ outcome: string }>(response)).outcome;

describe("Telegram tool approval", () => {
  it("posts Approve / Deny as a reply, ignores another member's press, and runs the tool when the requester approves", async () => {
    const { agentId, chatId, prompt, press } = await pausedTurn();
    expect(prompt.call.body.reply_parameters).toMatchObject({ message_id: 31 });
    expect(String(prompt.call.body.text)).toContain("wants to run remember");
    expect(String(prompt.call.body.text)).toContain(FACT);

    expect(await outcome(await postUpdate(press(bob, "Approve")))).toBe("skipped");
    const refused = telegram.calls.filter((call) => call.method === "answerCallbackQuery");
    expect(refused.at(-1)!.body.text).toContain("Only the person who asked");

    expect(await outcome(await postUpdate(press(alice, "Approve")))).toBe("answered");
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(telegram.messageText(chatId, prompt.messageId)).toContain("Alice approved");
    expect(telegram.sent(chatId).at(-1)).toBe("Noted.");
    // The model's second call saw the tool run.
    const tool = (model.calls[1]!.body.messages as { role: string; content: string }[]).filter(
      (message) => message.role === "tool",
    );
    expect(tool.at(-1)!.content).not.toContain("not allowed");
  });

  it("tells the model the tool was not allowed when the requester denies, and says so on the prompt", async () => {
    const { agentId, chatId, prompt, press } = await pausedTurn();
    expect(await outcome(await postUpdate(press(alice, "Deny")))).toBe("answered");
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(telegram.messageText(chatId, prompt.messageId)).toContain("Alice denied remember");
    // A second press on the answered prompt finds nothing waiting.
    expect(await outcome(await postUpdate(press(alice, "Approve")))).toBe("skipped");
  });

  it("lets one of the bot's owners (TELEGRAM_OWNER_IDS) answer for the requester", async () => {
    const { agentId, chatId, prompt, press } = await pausedTurn();
    const owner = { id: TELEGRAM_OWNER_ID, first_name: "Owner" };
    expect(await outcome(await postUpdate(press(owner, "Approve")))).toBe("answered");
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(telegram.messageText(chatId, prompt.messageId)).toContain("Owner approved");
    expect(telegram.sent(chatId).at(-1)).toBe("Noted.");
  });
});
