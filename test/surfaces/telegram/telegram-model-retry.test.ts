// A chat turn that failed because the model was unreachable is answered once the model is back,
// exactly once (src/objects/conversation/model-retry.ts), driven through Telegram's webhook: the
// turn waits in the journal with a durable wake-up, a newer message releases it in order, and a
// member whose model stays down past the window gets the neutral text. The wake-up's time is the
// platform's to keep; here the test moves the retry time to now and runs the wake-up itself.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { UNAVAILABLE_TEXT } from "../../../src/clients/chat/member-error.ts";
import { MODEL_RETRY } from "../../../src/objects/conversation/model-retry.ts";
import { roomName } from "../../../src/objects/conversation/room-client.ts";
import { messageUpdate } from "../../stand-ins/telegram-stand-in.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import { lastUserText } from "../../helpers/model-messages.ts";
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
const MODELS = ["test-primary", "test-fallback"];

const mention = (
  chatId: number,
  text: string,
  extra: { message_id?: number; edited?: boolean } = {},
) =>
  messageUpdate({
    chat: { id: chatId, type: "supergroup", title: "Group" },
    from: { id: 800000002, first_name: "Bea" },
    text: `${MENTION} ${text}`,
    entities: [{ type: "mention", offset: 0, length: MENTION.length }],
    ...extra,
  });

function modelDown(): void {
  for (const name of MODELS) model.failModel(name, 503);
}
function modelBack(): void {
  for (const name of MODELS) model.restoreModel(name);
}

interface Waiting {
  status: string;
  retryAt: number | null;
  retries: number;
  error: string | null;
}

async function turns(room: string): Promise<Waiting[]> {
  return runInDurableObject(env.ROOMS.getByName(room), (_instance, state) =>
    state.storage.sql
      .exec<{ status: string; retry_at: number | null; retries: number; error: string | null }>(
        "SELECT status, retry_at, retries, error FROM turn_journal ORDER BY seq",
      )
      .toArray()
      .map((row) => ({
        status: row.status,
        retryAt: row.retry_at,
        retries: row.retries,
        error: row.error,
      })),
  );
}

/** Waits until the room's first turn failed on the model and waits to run again. */
async function waitingToRetry(room: string): Promise<Waiting> {
  let waiting: Waiting | undefined;
  await vi.waitFor(
    async () => {
      waiting = (await turns(room))[0];
      expect(waiting?.retryAt).not.toBeNull();
      expect(waiting?.status).toBe("received");
    },
    { timeout: 15_000, interval: 50 },
  );
  return waiting!;
}

/** The retry time has come: what the room's durable wake-up does then. */
async function wakeAtRetryTime(room: string, arrivedAgoMs = 0): Promise<void> {
  await runInDurableObject(env.ROOMS.getByName(room), async (instance, state) => {
    const now = Date.now();
    state.storage.sql.exec(
      "UPDATE turn_journal SET retry_at = ?, created_at = created_at - ? WHERE status = 'received'",
      now - 1,
      arrivedAgoMs,
    );
    await (instance as unknown as { resumeTurns(): Promise<void> }).resumeTurns();
  });
}

async function wakeUps(room: string): Promise<number[]> {
  return runInDurableObject(env.ROOMS.getByName(room), (_instance, state) =>
    state.storage.sql
      .exec<{ time: number }>("SELECT time FROM cf_agents_jobs WHERE fn = 'resumeTurns'")
      .toArray()
      .map((row) => row.time),
  );
}

async function storedTexts(agentId: string, roomId: string): Promise<string[]> {
  const response = await api(
    "GET",
    `/agents/${agentId}/rooms/${encodeURIComponent(roomId)}/messages`,
  );
  return (await json<{ messages: Array<{ text: string }> }>(response)).messages.map((m) => m.text);
}

async function setUp() {
  const agentId = await createTestAgent();
  await bindTelegram(agentId, []);
  const chatId = groupChatId();
  const roomId = `telegram:${chatId}`;
  return { agentId, chatId, roomId, room: roomName(agentId, roomId) };
}

describe("a chat turn that failed on an unreachable model", () => {
  it("waits, says nothing, and is answered exactly once when the model is back", async () => {
    const { agentId, chatId, roomId, room } = await setUp();
    modelDown();
    expect((await postUpdate(mention(chatId, "are you back yet?"))).status).toBe(200);
    const waiting = await waitingToRetry(room);
    expect(waiting.retries).toBe(1);
    expect(JSON.parse(waiting.error!)).toMatchObject({ code: "model", status: 502 });
    // The first try comes back 30 s after the failure, on a durable wake-up.
    const after = waiting.retryAt! - Date.now();
    expect(after).toBeGreaterThan(20_000);
    expect(after).toBeLessThanOrEqual(MODEL_RETRY.firstDelayMs);
    expect((await wakeUps(room)).some((time) => time * 1000 >= waiting.retryAt! - 1000)).toBe(true);
    // The member has seen nothing yet: no error, no reply.
    expect(telegram.sent(chatId)).toEqual([]);
    const triedWhileDown = model.calls.length;

    modelBack();
    model.respondWith((call) => ({ text: `Back: ${lastUserText(call)}` }));
    await wakeAtRetryTime(room);
    await settledJournal(room);
    expect(telegram.sent(chatId)).toEqual(["Back: are you back yet?"]);
    expect(model.calls.length - triedWhileDown).toBe(1);
    // The message is stored once, though the turn ran twice (newest first); the model read it once.
    expect(await storedTexts(agentId, roomId)).toEqual([
      "Back: are you back yet?",
      "are you back yet?",
    ]);
    expect(JSON.stringify(model.calls.at(-1)!.messages).split("are you back yet?")).toHaveLength(2);

    // Another wake-up finds nothing to do: no second answer.
    await wakeAtRetryTime(room);
    expect(telegram.sent(chatId)).toHaveLength(1);
    expect(model.calls.length - triedWhileDown).toBe(1);
    expect((await turns(room)).map((turn) => turn.status)).toEqual(["evaluated"]);
  });

  it("runs before a newer message, so the replies keep the messages' order", async () => {
    const { chatId, room } = await setUp();
    modelDown();
    await postUpdate(mention(chatId, "first question"));
    await waitingToRetry(room);
    modelBack();
    model.respondWith((call) => ({ text: `re: ${lastUserText(call)}` }));
    await postUpdate(mention(chatId, "second question"));
    await settledJournal(room, 2);
    expect(telegram.sent(chatId)).toEqual(["re: first question", "re: second question"]);
  });

  it("tells the member in neutral words once the window has passed with the model still down", async () => {
    const { chatId, room } = await setUp();
    modelDown();
    await postUpdate(mention(chatId, "hello?"));
    await waitingToRetry(room);
    await wakeAtRetryTime(room, MODEL_RETRY.windowMs);
    await settledJournal(room);
    expect(telegram.sent(chatId)).toEqual([UNAVAILABLE_TEXT]);
    const [turn] = await turns(room);
    expect(turn).toMatchObject({ status: "failed", retries: 1 });
  });

  it("answers the message as edited while it waited, and stores the edit", async () => {
    const { agentId, chatId, roomId, room } = await setUp();
    modelDown();
    await postUpdate(mention(chatId, "meet at 5?", { message_id: 12 }));
    await waitingToRetry(room);
    const edit = mention(chatId, "meet at 6?", { message_id: 12, edited: true });
    expect((await postUpdate(edit)).status).toBe(200);
    modelBack();
    model.respondWith((call) => ({ text: `re: ${lastUserText(call)}` }));
    await wakeAtRetryTime(room);
    await settledJournal(room);
    expect(telegram.sent(chatId)).toEqual(["re: meet at 6?"]);
    expect(await storedTexts(agentId, roomId)).toEqual(["re: meet at 6?", "meet at 6?"]);
  });
});
