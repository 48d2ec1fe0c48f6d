// The Update schema against Updates shaped as Telegram sends them (Bot API, "Update", "Message",
// "CallbackQuery"), with the fields we do not read left in, and malformed ones refused by path.
import { describe, expect, it } from "vitest";
import { roomIdOf } from "../../../src/clients/telegram/message-text.ts";
import { parseUpdate, type TelegramUpdate } from "../../../src/clients/telegram/update.ts";

const BOT = { id: 7_000_000_001, is_bot: true, first_name: "Ada", username: "ada_agent_bot" };
const ALICE = {
  id: 5_123_456_789,
  is_bot: false,
  first_name: "Alice",
  last_name: "Liddell",
  username: "alice",
  language_code: "en",
  is_premium: true,
};
const SUPERGROUP = { id: -1_001_987_654_321, title: "Wonderland", type: "supergroup" };
const FORUM = { ...SUPERGROUP, id: -1_002_222_333_444, is_forum: true };

function parsed(body: unknown): TelegramUpdate {
  const result = parseUpdate(body);
  if (!result.ok) throw new Error(result.error);
  return result.update;
}

function refusal(body: unknown): string {
  const result = parseUpdate(body);
  if (result.ok) throw new Error("expected a refusal");
  return result.error;
}

describe("Update: the kinds the bot reads", () => {
  it("accepts a private text message and keeps a chat id past 2^31 exact", () => {
    const update = parsed({
      update_id: 912_345_678,
      message: {
        message_id: 12,
        from: ALICE,
        chat: { id: ALICE.id, first_name: "Alice", username: "alice", type: "private" },
        date: 1_717_000_000,
        text: "hello there",
      },
    });
    expect(update.message?.text).toBe("hello there");
    expect(update.message?.chat.type).toBe("private");
    expect(roomIdOf(update.message!)).toBe("telegram:5123456789");
  });

  it("accepts a group message with a mention entity, dropping fields it does not read", () => {
    const update = parsed({
      update_id: 1,
      message: {
        message_id: 40,
        from: ALICE,
        chat: SUPERGROUP,
        date: 1_717_000_000,
        text: "@ada_agent_bot what is 2+2?",
        entities: [{ type: "mention", offset: 0, length: 14 }],
        has_protected_content: true,
        via_bot: BOT,
      },
    });
    expect(update.message?.entities).toEqual([{ type: "mention", offset: 0, length: 14 }]);
    expect(update.message).not.toHaveProperty("has_protected_content");
    expect(roomIdOf(update.message!)).toBe("telegram:-1001987654321");
  });

  it("keys a forum topic message (is_topic_message) as a room of its own", () => {
    const update = parsed({
      update_id: 2,
      message: {
        message_id: 77,
        message_thread_id: 55,
        is_topic_message: true,
        from: ALICE,
        chat: FORUM,
        date: 1_717_000_000,
        text: "in the topic",
        // A topic message replies to the topic's service message when it replies to nobody.
        reply_to_message: {
          message_id: 55,
          from: ALICE,
          chat: FORUM,
          date: 1_716_000_000,
          forum_topic_created: { name: "Tea party", icon_color: 7322096 },
        },
      },
    });
    expect(update.message?.is_topic_message).toBe(true);
    expect(update.message?.chat.is_forum).toBe(true);
    expect(roomIdOf(update.message!)).toBe("telegram:-1002222333444:55");
  });

  it("keeps a supergroup reply thread without is_topic_message in the group's one room", () => {
    const update = parsed({
      update_id: 3,
      message: {
        message_id: 91,
        message_thread_id: 90,
        from: ALICE,
        chat: SUPERGROUP,
        date: 1_717_000_000,
        text: "replying in a thread",
        reply_to_message: { message_id: 90, from: BOT, chat: SUPERGROUP, date: 1, text: "hi" },
      },
    });
    expect(update.message?.message_thread_id).toBe(90);
    expect(roomIdOf(update.message!)).toBe("telegram:-1001987654321");
  });

  it("accepts a photo with a caption and caption entities", () => {
    const update = parsed({
      update_id: 4,
      message: {
        message_id: 5,
        from: ALICE,
        chat: SUPERGROUP,
        date: 1_717_000_000,
        photo: [
          {
            file_id: "AgACAgQAAxk-small",
            file_unique_id: "AQADs",
            width: 90,
            height: 67,
            file_size: 1_400,
          },
          {
            file_id: "AgACAgQAAxk-large",
            file_unique_id: "AQADl",
            width: 1280,
            height: 960,
            file_size: 98_000,
          },
        ],
        caption: "@ada_agent_bot what is this?",
        caption_entities: [{ type: "mention", offset: 0, length: 14 }],
      },
    });
    expect(update.message?.photo).toHaveLength(2);
    expect(update.message?.caption_entities?.[0]?.type).toBe("mention");
  });

  it("accepts a document and a voice note", () => {
    const document = parsed({
      update_id: 5,
      message: {
        message_id: 6,
        from: ALICE,
        chat: { id: ALICE.id, type: "private", first_name: "Alice" },
        date: 1_717_000_000,
        document: {
          file_id: "BQACAgQAAxkBAAIB",
          file_unique_id: "AgADcw",
          file_name: "notes.pdf",
          mime_type: "application/pdf",
          file_size: 52_311,
          thumbnail: { file_id: "t", file_unique_id: "t", width: 1, height: 1 },
        },
      },
    });
    expect(document.message?.document?.file_name).toBe("notes.pdf");
    const voice = parsed({
      update_id: 6,
      message: {
        message_id: 7,
        from: ALICE,
        chat: { id: ALICE.id, type: "private", first_name: "Alice" },
        date: 1_717_000_000,
        voice: {
          file_id: "AwACAgQAAxkBAAIC",
          file_unique_id: "AgADdA",
          duration: 4,
          mime_type: "audio/ogg",
          file_size: 14_022,
        },
      },
    });
    expect(voice.message?.voice).toMatchObject({ duration: 4, mime_type: "audio/ogg" });
  });

  it("accepts a callback_query on the bot's message", () => {
    const update = parsed({
      update_id: 7,
      callback_query: {
        id: "4382bfdwdsb323b2d9",
        from: ALICE,
        message: {
          message_id: 300,
          from: BOT,
          chat: SUPERGROUP,
          date: 1_717_000_000,
          text: "🔐 Ada wants to run …",
          reply_markup: { inline_keyboard: [[{ text: "✅ Approve", callback_data: "ap:y:x" }]] },
        },
        chat_instance: "-5312345678901234567",
        data: "ap:y:0123456789abcdef:ada",
      },
    });
    expect(update.callback_query?.data).toBe("ap:y:0123456789abcdef:ada");
    expect(update.callback_query?.message?.chat.id).toBe(SUPERGROUP.id);
  });

  it("accepts an edited_message with its edit_date", () => {
    const update = parsed({
      update_id: 8,
      edited_message: {
        message_id: 40,
        from: ALICE,
        chat: SUPERGROUP,
        date: 1_717_000_000,
        edit_date: 1_717_000_060,
        text: "@ada_agent_bot what is 2+3?",
        entities: [{ type: "mention", offset: 0, length: 14 }],
      },
    });
    expect(update.edited_message?.edit_date).toBe(1_717_000_060);
    expect(update.message).toBeUndefined();
  });

  it("accepts an Update of a kind it does not read with none of its fields set", () => {
    const update = parsed({
      update_id: 9,
      my_chat_member: { chat: SUPERGROUP, from: ALICE, date: 1, old_chat_member: {} },
    });
    expect(update).toEqual({ update_id: 9 });
  });
});

describe("Update: malformed bodies are refused by path, without their values", () => {
  it("names a missing update_id", () => {
    expect(refusal({ message: {} })).toMatch(/^update_id: required/);
  });

  it("names a chat id sent as a string, without echoing it", () => {
    const error = refusal({
      update_id: 1,
      message: {
        message_id: 1,
        from: ALICE,
        chat: { id: "-100secret-value", type: "supergroup" },
        date: 1,
        text: "x",
      },
    });
    expect(error).toMatch(/^message\.chat\.id: expected number/);
    expect(error).not.toContain("secret-value");
  });

  it("names an unknown chat type and an entity's bad offset", () => {
    expect(
      refusal({
        update_id: 1,
        message: { message_id: 1, chat: { id: 1, type: "secret-kind" }, date: 1 },
      }),
    ).toMatch(/^message\.chat\.type: expected one of "private"/);
    const error = refusal({
      update_id: 1,
      message: {
        message_id: 1,
        chat: { id: 1, type: "private" },
        date: 1,
        text: "hi",
        entities: [{ type: "mention", offset: -3, length: 2 }],
      },
    });
    expect(error).toMatch(/^message\.entities\.0\.offset: too short or too small/);
  });

  it("bounds strings and arrays", () => {
    const longText = refusal({
      update_id: 1,
      message: {
        message_id: 1,
        chat: { id: 1, type: "private" },
        date: 1,
        text: "a".repeat(9_000),
      },
    });
    expect(longText).toMatch(/^message\.text: too long/);
    expect(longText).not.toContain("aaaa");
    const sizes = Array.from({ length: 21 }, (_, i) => ({
      file_id: `f${i}`,
      file_unique_id: `u${i}`,
      width: 1,
      height: 1,
    }));
    expect(
      refusal({
        update_id: 1,
        message: { message_id: 1, chat: { id: 1, type: "private" }, date: 1, photo: sizes },
      }),
    ).toMatch(/^message\.photo: too long/);
  });

  it("refuses a chat id past 2^53, which a number cannot hold exactly", () => {
    expect(
      refusal({
        update_id: 1,
        message: { message_id: 1, chat: { id: 2 ** 60, type: "private" }, date: 1 },
      }),
    ).toMatch(/^message\.chat\.id:/);
  });

  it("refuses a body that is not an object, and a callback_query without its sender", () => {
    expect(refusal("update")).toMatch(/^\(body\): expected object/);
    expect(refusal(null)).toMatch(/^\(body\): expected object/);
    expect(refusal({ update_id: 1, callback_query: { id: "q", data: "x" } })).toMatch(
      /^callback_query\.from: required/,
    );
  });
});
