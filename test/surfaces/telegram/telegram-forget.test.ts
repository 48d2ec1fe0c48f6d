// `/forget` on Telegram end to end: the question with "Forget me" / "Cancel" as a reply to the
// person who asked, only their press counting; yes deletes their memories (`telegram:<id>`), as
// Discord's /forget does, and cancel deletes nothing. Either answer removes the buttons.
import { env } from "cloudflare:workers";
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
  useTelegramStandIns,
} from "../../helpers/telegram.ts";

const { model, telegram } = useTelegramStandIns();

const MENTION = `@${TELEGRAM_BOT.username}`;
const alice = { id: 800000021, first_name: "Alice" };
const bob = { id: 800000022, first_name: "Bob" };
interface Button {
  text: string;
  callback_data: string;
}

const memoriesOf = async (agentId: string, user: { id: number }) =>
  (
    await env.DB.prepare("SELECT count(*) AS n FROM memories WHERE agent_id = ? AND user_id = ?")
      .bind(agentId, `telegram:${user.id}`)
      .first<{ n: number }>()
  )?.n ?? 0;

/** An agent whose room holds one message each from Alice and Bob, and Alice's /forget question. */
async function forgetAsked() {
  const agentId = await createTestAgent();
  await bindTelegram(agentId);
  const chatId = groupChatId();
  const chat = { id: chatId, type: "supergroup" as const };
  for (const [who, text] of [
    [alice, "I keep bees"],
    [bob, "I keep goats"],
  ] as const)
    await postUpdate(
      messageUpdate({
        chat,
        from: who,
        text: `${MENTION} ${text}`,
        entities: [{ type: "mention", offset: 0, length: MENTION.length }],
      }),
    );
  await settledJournal(roomName(agentId, `telegram:${chatId}`), 2);
  expect(await memoriesOf(agentId, alice)).toBeGreaterThan(0);

  const asked = await postUpdate(
    messageUpdate({
      chat,
      from: alice,
      text: "/forget",
      entities: [{ type: "bot_command", offset: 0, length: "/forget".length }],
      message_id: 77,
    }),
  );
  expect((await json<{ outcome: string }>(asked)).outcome).toBe("answered");
  const sent = telegram.calls.filter((c) => c.method === "sendMessage" && c.status === 200);
  const index = sent.findIndex((call) => call.body.reply_markup !== undefined);
  const prompt = { call: sent[index]!, messageId: index + 1 };
  const [row] = (prompt.call.body.reply_markup as { inline_keyboard: Button[][] }).inline_keyboard;
  const press = (who: { id: number; first_name: string }, label: string) =>
    postUpdate(
      callbackUpdate({
        from: who,
        chat,
        message_id: prompt.messageId,
        data: row!.find((button) => button.text === label)!.callback_data,
      }),
    );
  return { agentId, chatId, prompt, row: row!, press };
}

const notices = () =>
  telegram.calls
    .filter((call) => call.method === "answerCallbackQuery")
    .map((call) => call.body.text ?? null);

describe("Telegram /forget", () => {
  it("asks with Forget me / Cancel as a reply, in callback data within 64 bytes, and no turn", async () => {
    const { prompt, row } = await forgetAsked();
    expect(String(prompt.call.body.text)).toContain("Delete everything I remember about you");
    expect(prompt.call.body.reply_parameters).toMatchObject({ message_id: 77 });
    expect(row.map((button) => button.text)).toEqual(["Forget me", "Cancel"]);
    for (const button of row)
      expect(new TextEncoder().encode(button.callback_data).byteLength).toBeLessThanOrEqual(64);
    // The two mentions were answered; /forget itself reached no model.
    expect(model.callsFor("test-primary")).toHaveLength(2);
  });

  it("refuses another member's press and deletes nothing; Cancel deletes nothing", async () => {
    const { agentId, chatId, prompt, press } = await forgetAsked();
    const before = await memoriesOf(agentId, alice);
    await press(bob, "Forget me");
    expect(notices()).toEqual(["Only the person who asked can answer this."]);
    expect(await memoriesOf(agentId, alice)).toBe(before);

    await press(alice, "Cancel");
    expect(await memoriesOf(agentId, alice)).toBe(before);
    expect(telegram.messageText(chatId, prompt.messageId)).toBe("Nothing was deleted.");
  });

  it("deletes the asker's memories on Forget me, and only theirs", async () => {
    const { agentId, chatId, prompt, press } = await forgetAsked();
    const bobs = await memoriesOf(agentId, bob);
    const response = await press(alice, "Forget me");
    expect((await json<{ outcome: string }>(response)).outcome).toBe("answered");
    expect(await memoriesOf(agentId, alice)).toBe(0);
    expect(await memoriesOf(agentId, bob)).toBe(bobs);
    await vi.waitFor(() =>
      expect(telegram.messageText(chatId, prompt.messageId)).toMatch(
        /^Done: I forgot \d+ memor(y|ies) about you\.$/,
      ),
    );
  });
});
