// Who a Telegram message is addressed to and what the model reads of it, by the Bot API's rules
// (MessageEntity: mention, text_mention, bot_command; offsets in UTF-16 code units; "reply to").
import { describe, expect, it } from "vitest";
import {
  addressing,
  roomIdOf,
  senderName,
  textForModel,
} from "../../../src/clients/telegram/message-text.ts";
import type { MessageEntity, TelegramMessage } from "../../../src/clients/telegram/update.ts";

const BOT = { id: 7_000_000_001, username: "Ada_Agent_Bot" };
const ALICE = { id: 5_123_456_789, is_bot: false, first_name: "Alice" };
const GROUP = { id: -1_001_987_654_321, type: "supergroup" as const, title: "Wonderland" };

function message(
  text: string,
  entities: MessageEntity[] = [],
  extra: Partial<TelegramMessage> = {},
): TelegramMessage {
  return { message_id: 10, from: ALICE, chat: GROUP, date: 1, text, entities, ...extra };
}

/** An entity covering `part` where it first occurs in `text` (UTF-16 offsets, like Telegram's). */
function entity(text: string, part: string, type: string, user?: MessageEntity["user"]) {
  const offset = text.indexOf(part);
  if (offset < 0) throw new Error(`${part} is not in the text`);
  return { type, offset, length: part.length, ...(user ? { user } : {}) };
}

describe("Addressing: mentions (MessageEntity mention, text_mention)", () => {
  it("sees the bot's @username in any case", () => {
    const text = "hey @ada_agent_bot, what is 2+2?";
    const result = addressing(message(text, [entity(text, "@ada_agent_bot", "mention")]), BOT);
    expect(result).toEqual({ mentionsBot: true, replyToBot: false, command: null });
  });

  it("does not take another bot's mention or a mention entity that points past the text", () => {
    const text = "ask @other_bot instead";
    expect(
      addressing(message(text, [entity(text, "@other_bot", "mention")]), BOT).mentionsBot,
    ).toBe(false);
    const outOfBounds = { type: "mention", offset: 5, length: 40 };
    expect(addressing(message("hi @ada_agent_bot", [outOfBounds]), BOT).mentionsBot).toBe(false);
  });

  it("does not take the bot's name in plain text without an entity", () => {
    expect(addressing(message("@ada_agent_bot typed in a code span"), BOT).mentionsBot).toBe(false);
  });

  it("sees a text_mention whose user is the bot", () => {
    const text = "Ada, summarise this";
    const mention = entity(text, "Ada", "text_mention", {
      id: BOT.id,
      is_bot: true,
      first_name: "Ada",
    });
    expect(addressing(message(text, [mention]), BOT).mentionsBot).toBe(true);
    const someoneElse = entity(text, "Ada", "text_mention", ALICE);
    expect(addressing(message(text, [someoneElse]), BOT).mentionsBot).toBe(false);
  });

  it("finds a mention after emoji, whose offsets count UTF-16 code units", () => {
    // 👋 and 🧑‍🚀 take 2 and 5 code units: a code-point count would put the entity elsewhere.
    const text = "👋🧑‍🚀 @ada_agent_bot how far is the moon?";
    const mention = { type: "mention", offset: 8, length: 14 };
    expect(text.slice(8, 22)).toBe("@ada_agent_bot");
    const found = message(text, [mention]);
    expect(addressing(found, BOT).mentionsBot).toBe(true);
    expect(textForModel(found, BOT)).toBe("👋🧑‍🚀 how far is the moon?");
  });

  it("reads a caption's entities when the message is a photo", () => {
    const caption = "@ada_agent_bot what is this?";
    const photo: TelegramMessage = {
      message_id: 3,
      from: ALICE,
      chat: GROUP,
      date: 1,
      caption,
      caption_entities: [entity(caption, "@ada_agent_bot", "mention")],
      photo: [{ file_id: "p", file_unique_id: "u", width: 1, height: 1 }],
    };
    expect(addressing(photo, BOT).mentionsBot).toBe(true);
    expect(textForModel(photo, BOT)).toBe("what is this?");
  });
});

describe("Addressing: replies (Message.reply_to_message)", () => {
  it("sees a reply to one of the bot's messages", () => {
    const reply = message("and then?", [], {
      reply_to_message: { message_id: 9, from: { id: BOT.id, is_bot: true, first_name: "Ada" } },
    });
    expect(addressing(reply, BOT)).toEqual({ mentionsBot: false, replyToBot: true, command: null });
  });

  it("does not take a reply to someone else", () => {
    const reply = message("and then?", [], { reply_to_message: { message_id: 9, from: ALICE } });
    expect(addressing(reply, BOT).replyToBot).toBe(false);
  });

  it("does not take a forum topic's implicit reply to its first message as a reply to the bot", () => {
    const inTopic = message("hello topic", [], {
      message_thread_id: 55,
      is_topic_message: true,
      reply_to_message: { message_id: 55, from: { id: BOT.id, is_bot: true, first_name: "Ada" } },
    });
    expect(addressing(inTopic, BOT).replyToBot).toBe(false);
    const realReply = {
      ...inTopic,
      reply_to_message: { message_id: 60, from: inTopic.reply_to_message!.from },
    };
    expect(addressing(realReply, BOT).replyToBot).toBe(true);
  });
});

describe("Addressing: commands (bot_command at offset 0)", () => {
  it("takes /ask and /ask@ourbot, in any case", () => {
    const plain = "/ask what is x";
    expect(addressing(message(plain, [entity(plain, "/ask", "bot_command")]), BOT).command).toBe(
      "ask",
    );
    const targeted = "/Ask@ada_agent_bot what is x";
    const ours = message(targeted, [entity(targeted, "/Ask@ada_agent_bot", "bot_command")]);
    expect(addressing(ours, BOT).command).toBe("ask");
    expect(textForModel(ours, BOT)).toBe("what is x");
  });

  it("leaves a command addressed to another bot alone", () => {
    const text = "/ask@otherbot what is x";
    const theirs = message(text, [entity(text, "/ask@otherbot", "bot_command")]);
    expect(addressing(theirs, BOT)).toEqual({
      mentionsBot: false,
      replyToBot: false,
      command: null,
    });
    expect(textForModel(theirs, BOT)).toBe(text);
  });

  it("takes a command only at the start of the message", () => {
    const text = "please /ask what is x";
    expect(
      addressing(message(text, [entity(text, "/ask", "bot_command")]), BOT).command,
    ).toBeNull();
  });
});

describe("Text for the model", () => {
  it("strips a leading command", () => {
    const text = "/ask what is x";
    expect(textForModel(message(text, [entity(text, "/ask", "bot_command")]), BOT)).toBe(
      "what is x",
    );
  });

  it("removes the bot's mention wherever it is, and the comma after a leading one", () => {
    const middle = "so @ada_agent_bot what now";
    expect(textForModel(message(middle, [entity(middle, "@ada_agent_bot", "mention")]), BOT)).toBe(
      "so what now",
    );
    const leading = "@ADA_AGENT_BOT, tell me a joke";
    expect(
      textForModel(message(leading, [entity(leading, "@ADA_AGENT_BOT", "mention")]), BOT),
    ).toBe("tell me a joke");
  });

  it("keeps other people's mentions and the text around them", () => {
    const text = "@ada_agent_bot ask @alice about it";
    const entities = [entity(text, "@ada_agent_bot", "mention"), entity(text, "@alice", "mention")];
    expect(textForModel(message(text, entities), BOT)).toBe("ask @alice about it");
  });

  it("strips a command and a mention together", () => {
    const text = "/ask@ada_agent_bot @ada_agent_bot hi";
    const entities = [
      { type: "bot_command", offset: 0, length: 18 },
      { type: "mention", offset: 19, length: 14 },
    ];
    expect(textForModel(message(text, entities), BOT)).toBe("hi");
  });

  it("is empty for a message with neither text nor caption", () => {
    const voice: TelegramMessage = {
      message_id: 1,
      from: ALICE,
      chat: GROUP,
      date: 1,
      voice: { file_id: "v", duration: 3 },
    };
    expect(textForModel(voice, BOT)).toBe("");
  });
});

describe("Rooms and names", () => {
  it("keys a topic only when is_topic_message is true", () => {
    expect(roomIdOf({ chat: { id: -100123 }, message_thread_id: 7, is_topic_message: true })).toBe(
      "telegram:-100123:7",
    );
    expect(roomIdOf({ chat: { id: -100123 }, message_thread_id: 7 })).toBe("telegram:-100123");
    expect(roomIdOf({ chat: { id: -100123 }, message_thread_id: 7, is_topic_message: false })).toBe(
      "telegram:-100123",
    );
  });

  it("renders a 13-digit supergroup id exactly", () => {
    expect(roomIdOf({ chat: { id: -1_009_876_543_210_123 } })).toBe("telegram:-1009876543210123");
  });

  it("names a sender by name, else username, else id", () => {
    expect(senderName({ ...ALICE, last_name: "Liddell" })).toBe("Alice Liddell");
    expect(senderName(ALICE)).toBe("Alice");
    expect(senderName({ id: 42, is_bot: false, first_name: " ", username: "cheshire" })).toBe(
      "cheshire",
    );
    expect(senderName({ id: 42, is_bot: false, first_name: "" })).toBe("42");
  });
});
