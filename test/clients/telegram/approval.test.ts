// The approval prompt's inline keyboard and its callback_data (Bot API, InlineKeyboardButton:
// callback_data is 1-64 bytes), sent through the stand-in, which holds that limit as Telegram does.
import { describe, expect, it } from "vitest";
import {
  approvalCallbackData,
  approvalPrompt,
  approvalResultText,
  canRouteApproval,
  MAX_CALLBACK_DATA_BYTES,
  parseApprovalCallbackData,
} from "../../../src/clients/telegram/approval.ts";
import { createTelegramBotApi } from "../../../src/clients/telegram/bot-api.ts";
import { newApprovalId } from "../../../src/objects/shared/approvals.ts";
import { createTelegramStandIn } from "../../stand-ins/telegram-stand-in.ts";

const bytes = (text: string) => new TextEncoder().encode(text).byteLength;

describe("callback_data (1-64 bytes)", () => {
  it("round-trips a room's and a task's Approve and Deny", () => {
    const approvalId = newApprovalId();
    for (const target of ["room", "task"] as const)
      for (const approve of [true, false]) {
        const button = { target, approve, approvalId, agentId: "ada" };
        const data = approvalCallbackData(button);
        expect(data).not.toBeNull();
        expect(parseApprovalCallbackData(data!)).toEqual(button);
      }
    expect(
      approvalCallbackData({ target: "room", approve: true, approvalId, agentId: "ada" }),
    ).toBe(`ap:y:${approvalId}:ada`);
  });

  it("stays within 64 bytes for the longest agent id that fits, and refuses a longer one", () => {
    const approvalId = "0123456789abcdef";
    const room42 = "a".repeat(42);
    const data = approvalCallbackData({
      target: "room",
      approve: false,
      approvalId,
      agentId: room42,
    });
    expect(bytes(data!)).toBe(MAX_CALLBACK_DATA_BYTES);
    expect(
      approvalCallbackData({ target: "room", approve: false, approvalId, agentId: `${room42}b` }),
    ).toBeNull();
    expect(canRouteApproval(room42)).toBe(true);
    expect(canRouteApproval(`${room42}b`)).toBe(false);
    expect(canRouteApproval("a".repeat(41), "task")).toBe(true);
    expect(canRouteApproval(room42, "task")).toBe(false);
  });

  it("decodes nothing else: other data, other ids, Discord-sized ids, multibyte padding", () => {
    for (const data of [
      "",
      "ap:y",
      "ap:x:0123456789abcdef:ada",
      "ap:y:0123456789ABCDEF:ada",
      "ap:y:0123456789abcde:ada",
      "ap:y:0123456789abcdef:",
      "ap:y:0123456789abcdef:-ada",
      "ap:y:0123456789abcdef:ada:extra",
      "ap:y:0123456789abcdef:ada.example",
      `ap:y:0123456789abcdef:${"a".repeat(43)}`,
      "xap:y:0123456789abcdef:ada",
      "ap:y:0123456789abcdef:adä",
      "q:answer:0123456789abcdef",
    ])
      expect(parseApprovalCallbackData(data), data).toBeNull();
  });
});

describe("The approval prompt", () => {
  const input = {
    target: "room" as const,
    approvalId: "0123456789abcdef",
    agentId: "ada",
    agentName: "Ada *Lovelace*",
    tool: "web_fetch",
    arguments: { url: "https://example.com/<b>", note: "```" },
    requesterName: "Alice",
    expiresAt: 1_000_000 + 10 * 60_000,
    now: 1_000_000,
  };

  it("is plain text naming the tool, its arguments, who may answer and for how long", () => {
    const prompt = approvalPrompt(input);
    expect(prompt.text).toContain("🔐 Ada *Lovelace* wants to run web_fetch with:");
    expect(prompt.text).toContain('"url": "https://example.com/<b>"');
    expect(prompt.text).toContain("Only Alice or an owner can answer, within 10 minutes.");
    expect(prompt.reply_markup).toEqual({
      inline_keyboard: [
        [
          { text: "✅ Approve", callback_data: "ap:y:0123456789abcdef:ada" },
          { text: "🚫 Deny", callback_data: "ap:n:0123456789abcdef:ada" },
        ],
      ],
    });
  });

  it("cuts long arguments and stays within one message", () => {
    const prompt = approvalPrompt({
      ...input,
      requesterName: null,
      arguments: { body: "x".repeat(10_000) },
    });
    expect(prompt.text.length).toBeLessThan(1_600);
    expect(prompt.text).toContain("Only the person who asked or an owner can answer");
  });

  it("refuses an agent id whose buttons would not fit", () => {
    expect(() => approvalPrompt({ ...input, agentId: "a".repeat(60) })).toThrow(/too long/);
  });

  it("is accepted by the Bot API stand-in, then edited into its result without buttons", async () => {
    const token = "7000000001:AAH-test_token_not_real_0123456789abc";
    const telegram = createTelegramStandIn({
      token,
      bot: { id: 7_000_000_001, username: "ada_agent_bot", first_name: "Ada" },
    });
    const api = createTelegramBotApi({
      token,
      baseUrl: "https://telegram.test",
      fetch: (request, init) => telegram.fetch(request, init),
    });
    const prompt = approvalPrompt({ ...input, agentId: "a".repeat(42) });
    const { message_id } = await api.sendMessage({ chat_id: -100123, ...prompt });
    await api.editMessageText({
      chat_id: -100123,
      message_id,
      text: approvalResultText("web_fetch", "approved", "Alice"),
    });
    expect(telegram.messageText(-100123, message_id)).toBe("✅ Alice approved: running web_fetch…");
    expect(approvalResultText("web_fetch", "expired")).toBe(
      "⌛ Nobody answered within 10 minutes: web_fetch was not run.",
    );
  });
});
