// Telegram photos, documents and voice notes end to end: the webhook hands the room token-free
// references (`telegram-file:` / `telegram-voice:`), the room fetches them through getFile and
// the Bot API's file download (the stand-in), stores them in R2, shows images to the model and
// transcribes voice notes (the model stand-in's /audio/transcriptions) before the turn reads them.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { messageUpdate } from "../../stand-ins/telegram-stand-in.ts";
import { createTestAgent, json } from "../../helpers/api.ts";
import { settledJournal } from "../../helpers/room-journal.ts";
import {
  bindTelegram,
  groupChatId,
  postUpdate,
  TELEGRAM_BOT,
  TELEGRAM_TOKEN,
  useTelegramStandIns,
} from "../../helpers/telegram.ts";

const { model, telegram } = useTelegramStandIns();

const alice = { id: 800000011, first_name: "Alice" };
const MENTION = `@${TELEGRAM_BOT.username}`;
const TOKEN_SECRET = TELEGRAM_TOKEN.slice(TELEGRAM_TOKEN.indexOf(":") + 1);
const PNG = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4,
]);
/** The first bytes of an OGG/Opus voice note. */
const OGG = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 9, 8, 7, 6]);
const BOT_MESSAGE_ID = 9001;

async function agentBound(): Promise<string> {
  const agentId = await createTestAgent();
  await bindTelegram(agentId);
  return agentId;
}

const group = (id: number) => ({ id, type: "supergroup" as const, title: "Group" });

/** A voice note replying to one of the bot's messages (so it is addressed to the bot). */
function voiceNote(
  chatId: number,
  fileId: string,
  extra: Record<string, unknown> = {},
  edited = false,
) {
  return messageUpdate({
    chat: group(chatId),
    from: alice,
    edited,
    reply_to_message: { message_id: BOT_MESSAGE_ID, from: { ...TELEGRAM_BOT, is_bot: true } },
    extra: { voice: { file_id: fileId, file_unique_id: `u-${fileId}`, duration: 3 }, ...extra },
  });
}

/** The stored messages of the room, as D1 holds them (content JSON included). */
async function storedMessages(agentId: string, roomId: string) {
  const rows = await env.DB.prepare(
    "SELECT content FROM memories WHERE agent_id = ? AND room_id = ? AND type = 'message' ORDER BY seq",
  )
    .bind(agentId, roomId)
    .all<{ content: string }>();
  return rows.results.map(
    (row) =>
      JSON.parse(row.content) as {
        text: string;
        role?: string;
        attachments?: { url: string; contentType?: string; title?: string }[];
      },
  );
}

/** The journalled inputs of a room's turns, as JSON text. */
async function journalInputs(room: string): Promise<string> {
  return runInDurableObject(env.ROOMS.getByName(room), (_instance, state) =>
    JSON.stringify(state.storage.sql.exec("SELECT input FROM turn_journal").toArray()),
  );
}

async function storedUnder(agentId: string): Promise<R2Object[]> {
  return (
    await env.MEDIA.list({
      prefix: `attachments/${agentId}/`,
      include: ["customMetadata", "httpMetadata"],
    })
  ).objects;
}

const userText = (call: { messages: Record<string, unknown>[] }) => JSON.stringify(call.messages);
const primaryCalls = () => model.callsFor("test-primary");

describe("Telegram photos and documents", () => {
  it("shows a captioned photo to the model as an image and stores it in R2, with the token nowhere", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("photo-small", PNG.slice(0, 16), "image/png");
    telegram.addFile("photo-large", PNG, "image/png");
    model.script({ text: "A tiny picture." });
    const caption = `${MENTION} what is this?`;
    await postUpdate(
      messageUpdate({
        chat: group(chatId),
        from: alice,
        caption,
        entities: [{ type: "mention", offset: 0, length: MENTION.length }],
        extra: {
          photo: [
            { file_id: "photo-small", file_unique_id: "s", width: 90, height: 90 },
            { file_id: "photo-large", file_unique_id: "l", width: 800, height: 800 },
          ],
        },
      }),
    );
    const room = roomName(agentId, `telegram:${chatId}`);
    await settledJournal(room);
    expect(telegram.sent(chatId)).toEqual(["A tiny picture."]);

    // The largest size only, fetched through getFile.
    const asked = telegram.calls.filter((call) => call.method === "getFile");
    expect(asked.map((call) => call.body.file_id)).toEqual(["photo-large"]);
    const [call] = primaryCalls();
    const prompt = userText(call!);
    expect(prompt).toContain("what is this?");
    expect(prompt).toContain("Image attached");
    expect(prompt).toContain("data:image/png;base64,");

    const objects = await storedUnder(agentId);
    expect(objects).toHaveLength(1);
    expect(objects[0]!.httpMetadata?.contentType).toBe("image/png");
    expect(objects[0]!.customMetadata).toMatchObject({ source: "telegram" });
    const messages = await storedMessages(agentId, `telegram:${chatId}`);
    expect(messages[0]!.attachments).toEqual([
      expect.objectContaining({ url: "telegram-file:photo-large" }),
    ]);
    // Neither R2, the journal nor the memory holds the bot token or a file URL.
    const everywhere = [
      JSON.stringify(objects.map((o) => [o.key, o.customMetadata, o.httpMetadata])),
      await journalInputs(room),
      JSON.stringify(messages),
    ].join("\n");
    expect(everywhere).not.toContain(TOKEN_SECRET);
    expect(everywhere).not.toContain("/file/bot");
  });

  it("refuses a document over the size cap with a note to the model, and stores nothing", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("big-doc", PNG, "image/png", { contentLength: 9 * 1024 * 1024 });
    model.script({ text: "Too big." });
    await postUpdate(
      messageUpdate({
        chat: group(chatId),
        from: alice,
        caption: `${MENTION} read this`,
        entities: [{ type: "mention", offset: 0, length: MENTION.length }],
        extra: { document: { file_id: "big-doc", file_name: "big.png", mime_type: "image/png" } },
      }),
    );
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    const prompt = userText(primaryCalls()[0]!);
    expect(prompt).toContain('The attachment \\"big.png\\" was not read: it is larger than 8 MB');
    expect(await storedUnder(agentId)).toEqual([]);
  });
});

describe("Telegram voice notes", () => {
  it("transcribes a voice note replying to the bot and answers it once, the transcript in memory and prompt", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("voice-1", OGG, "audio/ogg");
    model.transcribeWith({ text: "what time is the meeting" });
    model.script({ text: "At noon." });
    const update = voiceNote(chatId, "voice-1");
    expect((await postUpdate(update)).status).toBe(200);
    const room = roomName(agentId, `telegram:${chatId}`);
    await settledJournal(room);

    expect(telegram.sent(chatId)).toEqual(["At noon."]);
    expect(model.transcriptions).toHaveLength(1);
    expect(model.transcriptions[0]!.model).toBe("whisper-1");
    expect([...model.transcriptions[0]!.bytes]).toEqual([...OGG]);
    const quoted = "[voice note, transcribed] «what time is the meeting»";
    expect(primaryCalls()).toHaveLength(1);
    expect(userText(primaryCalls()[0]!)).toContain(quoted);
    const [stored] = await storedMessages(agentId, `telegram:${chatId}`);
    expect(stored!.text).toBe(quoted);
    // The audio is kept in R2, and the message refers to that copy.
    const objects = await storedUnder(agentId);
    expect(objects.map((o) => o.httpMetadata?.contentType)).toEqual(["audio/ogg"]);
    expect(stored!.attachments).toEqual([
      expect.objectContaining({ url: `r2:${objects[0]!.key}`, contentType: "audio/ogg" }),
    ]);
  });

  it("takes a redelivered voice Update as one turn: one transcription, one answer", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("voice-2", OGG, "audio/ogg");
    model.script({ text: "Hi." });
    const update = voiceNote(chatId, "voice-2");
    await postUpdate(update);
    await postUpdate(update);
    const rows = await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(rows).toHaveLength(1);
    expect(model.transcriptions).toHaveLength(1);
    expect(primaryCalls()).toHaveLength(1);
    expect(telegram.sent(chatId)).toEqual(["Hi."]);
  });

  it("keeps the transcript when the voice note's caption is edited later", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("voice-4", OGG, "audio/ogg");
    model.transcribeWith({ text: "the bees are out" });
    await postUpdate(voiceNote(chatId, "voice-4", { message_id: 52 }));
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    const edit = voiceNote(chatId, "voice-4", { message_id: 52, caption: "never mind" }, true);
    const response = await postUpdate(edit);
    expect((await json<{ outcome: string }>(response)).outcome).toBe("skipped");
    const [stored] = await storedMessages(agentId, `telegram:${chatId}`);
    expect(stored!.text).toBe("[voice note, transcribed] «the bees are out»");
  });

  it("tells the person when transcription fails, calls no model, and keeps the message", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("voice-3", OGG, "audio/ogg");
    model.transcribeWith({ status: 500 });
    const update = voiceNote(chatId, "voice-3");
    await postUpdate(update);
    const [row] = await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(row!.status).toBe("failed");
    expect(primaryCalls()).toHaveLength(0);
    const [reply] = telegram.sent(chatId);
    expect(reply).toContain("I couldn't transcribe your voice note");
    expect(reply).not.toContain("scripted HTTP");
    const [stored] = await storedMessages(agentId, `telegram:${chatId}`);
    expect(stored!.text).toBe("[voice note, not transcribed]");
    // The recording is kept in R2 and referred to by the stored message.
    const objects = await storedUnder(agentId);
    expect(objects).toHaveLength(1);
    expect(stored!.attachments?.[0]?.url).toBe(`r2:${objects[0]!.key}`);
  });

  it("refuses a voice note over the Bot API's 20 MB download limit clearly, keeping the message", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    // Telegram's getFile refuses such a file outright.
    telegram.addFile("voice-big", OGG, "audio/ogg", { fileSize: 21 * 1024 * 1024 });
    await postUpdate(voiceNote(chatId, "voice-big"));
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(model.transcriptions).toHaveLength(0);
    expect(primaryCalls()).toHaveLength(0);
    const [reply] = telegram.sent(chatId);
    expect(reply).toContain(
      "I couldn't transcribe your voice note: Telegram did not hand it to the bot (bots may download files of at most 20 MB)",
    );
    const [stored] = await storedMessages(agentId, `telegram:${chatId}`);
    expect(stored!.attachments).toEqual([
      expect.objectContaining({ url: "telegram-voice:voice-big" }),
    ]);
    expect(await storedUnder(agentId)).toEqual([]);
  });

  it("refuses a recording whose download outgrows 20 MB while it streams in", async () => {
    const agentId = await agentBound();
    const chatId = groupChatId();
    telegram.addFile("voice-long", OGG, "audio/ogg", { contentLength: 21 * 1024 * 1024 });
    await postUpdate(voiceNote(chatId, "voice-long"));
    await settledJournal(roomName(agentId, `telegram:${chatId}`));
    expect(primaryCalls()).toHaveLength(0);
    expect(telegram.sent(chatId)[0]).toContain(
      "I couldn't transcribe your voice note: it is larger than 20 MB",
    );
  });
});
