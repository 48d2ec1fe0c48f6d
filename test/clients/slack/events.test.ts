// The Events API envelope, its app_mention and message events, interactivity forms and slash
// commands as the bot reads them (docs.slack.dev reference pages for each payload), checked with zod:
// Slack's extra fields pass, other types are reported as unsupported, malformed ones name the path.
import { describe, expect, it } from "vitest";
import {
  parseEventEnvelope,
  parseInteractionForm,
  parseSlashCommand,
} from "../../../src/clients/slack/events.ts";
import {
  ANN,
  BOT_ID,
  BOT_USER,
  CHANNEL,
  DM,
  TEAM,
  appMention,
  channelMessage,
  directMessage,
  envelope,
} from "./fixtures.ts";

function parsedEvent(body: string) {
  const result = parseEventEnvelope(body);
  if (!result.ok) throw new Error(result.error);
  if (result.value.type !== "event_callback") throw new Error(`got ${result.value.type}`);
  return result.value;
}

describe("Events API envelope", () => {
  it("reads url_verification with its challenge", () => {
    const body = JSON.stringify({
      token: "Jhj5dZrVaK7ZwHHjRyZWjbDl",
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
      type: "url_verification",
    });
    expect(parseEventEnvelope(body)).toEqual({
      ok: true,
      value: {
        type: "url_verification",
        challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        token: "Jhj5dZrVaK7ZwHHjRyZWjbDl",
      },
    });
  });

  it("reports another envelope type as unsupported, not as an error", () => {
    const body = JSON.stringify({
      token: "x",
      team_id: TEAM,
      minute_rate_limited: 1518467820,
      api_app_id: "A0APP00001",
      type: "app_rate_limited",
    });
    expect(parseEventEnvelope(body)).toEqual({
      ok: true,
      value: { type: "unsupported", envelopeType: "app_rate_limited" },
    });
  });

  it("reports an inner event type it does not handle as unsupported", () => {
    const body = envelope({ type: "reaction_added", user: ANN, reaction: "thumbsup" });
    expect(parsedEvent(body).event).toEqual({ type: "unsupported", eventType: "reaction_added" });
  });

  it("refuses a body that is not JSON, and one with no type", () => {
    expect(parseEventEnvelope("{nope")).toEqual({ ok: false, error: "(body): not JSON" });
    const noType = parseEventEnvelope("{}");
    expect(noType.ok).toBe(false);
    if (!noType.ok) expect(noType.error).toMatch(/^type: required/);
  });
});

describe("Events API: app_mention", () => {
  it("reads a mention with the envelope's event_id, team and authorizations", () => {
    const parsed = parsedEvent(envelope(appMention()));
    expect(parsed.team_id).toBe(TEAM);
    expect(parsed.event_id).toMatch(/^Ev/);
    expect(parsed.authorizations?.[0]).toMatchObject({ user_id: BOT_USER, is_bot: true });
    expect(parsed.event).toEqual({
      type: "app_mention",
      text: `<@${BOT_USER}> what is on today?`,
      user: ANN,
      ts: "1712345678.000100",
      channel: CHANNEL,
      event_ts: "1712345678.000100",
    });
  });

  it("reads a mention inside a thread with its thread_ts and files", () => {
    const parsed = parsedEvent(
      envelope(
        appMention({
          thread_ts: "1712340000.000001",
          files: [
            {
              id: "F0FILE0001",
              name: "plan.pdf",
              mimetype: "application/pdf",
              size: 1234,
              url_private: "https://files.slack.com/files-pri/T0TEAM0001-F0FILE0001/plan.pdf",
            },
          ],
        }),
      ),
    );
    expect(parsed.event).toMatchObject({
      type: "app_mention",
      thread_ts: "1712340000.000001",
      files: [{ id: "F0FILE0001", size: 1234 }],
    });
  });

  it("refuses a malformed mention naming the path, without echoing the value", () => {
    const result = parseEventEnvelope(
      envelope(appMention({ channel: "not a channel <!channel>" })),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBe("event.channel: expected a Slack id");
    expect(result.error).not.toContain("<!channel>");
    const noTs = parseEventEnvelope(envelope(appMention({ ts: undefined })));
    expect(noTs).toEqual({ ok: false, error: "event.ts: required" });
    const badEnvelope = parseEventEnvelope(envelope(appMention(), { event_id: 42 }));
    expect(badEnvelope.ok).toBe(false);
    if (!badEnvelope.ok) expect(badEnvelope.error).toMatch(/^event_id: /);
  });
});

describe("Events API: message", () => {
  it("reads a direct message (message.im)", () => {
    expect(parsedEvent(envelope(directMessage())).event).toMatchObject({
      type: "message",
      channel: DM,
      channel_type: "im",
      user: ANN,
      text: "hello there",
    });
  });

  it("reads a reply in a channel thread", () => {
    const event = channelMessage({
      text: "and tomorrow?",
      ts: "1712345700.000200",
      thread_ts: "1712345678.000100",
      parent_user_id: ANN,
    });
    expect(parsedEvent(envelope(event)).event).toMatchObject({
      channel_type: "channel",
      ts: "1712345700.000200",
      thread_ts: "1712345678.000100",
    });
  });

  it("reads a bot's message with its bot_id and subtype", () => {
    const event = channelMessage({
      subtype: "bot_message",
      user: undefined,
      bot_id: BOT_ID,
      text: "I am a bot",
    });
    expect(parsedEvent(envelope(event)).event).toMatchObject({
      subtype: "bot_message",
      bot_id: BOT_ID,
    });
  });

  it("reads message_changed with the message as it is now and as it was", () => {
    const event = {
      type: "message",
      subtype: "message_changed",
      hidden: true,
      channel: CHANNEL,
      channel_type: "channel",
      ts: "1712345800.000300",
      event_ts: "1712345800.000300",
      message: {
        type: "message",
        user: ANN,
        text: "what is on tomorrow?",
        ts: "1712345678.000100",
        edited: { user: ANN, ts: "1712345800.000000" },
      },
      previous_message: {
        type: "message",
        user: ANN,
        text: "what is on today?",
        ts: "1712345678.000100",
      },
    };
    expect(parsedEvent(envelope(event)).event).toMatchObject({
      subtype: "message_changed",
      message: { ts: "1712345678.000100", text: "what is on tomorrow?", edited: { user: ANN } },
      previous_message: { text: "what is on today?" },
    });
  });

  it("reads message_deleted with the deleted ts", () => {
    const event = {
      type: "message",
      subtype: "message_deleted",
      hidden: true,
      channel: DM,
      channel_type: "im",
      ts: "1712345900.000400",
      deleted_ts: "1712345678.000100",
      event_ts: "1712345900.000400",
      previous_message: {
        type: "message",
        user: ANN,
        text: "hello there",
        ts: "1712345678.000100",
      },
    };
    expect(parsedEvent(envelope(event)).event).toMatchObject({
      subtype: "message_deleted",
      deleted_ts: "1712345678.000100",
    });
  });

  it("refuses an unknown channel_type and an oversized text, naming the path", () => {
    const badType = parseEventEnvelope(envelope(channelMessage({ channel_type: "forum" })));
    expect(badType.ok).toBe(false);
    if (!badType.ok) expect(badType.error).toMatch(/^event\.channel_type: /);
    const long = parseEventEnvelope(envelope(channelMessage({ text: "x".repeat(50_000) })));
    expect(long.ok).toBe(false);
    if (!long.ok) {
      expect(long.error).toMatch(/^event\.text: /);
      expect(long.error).not.toContain("xxxx");
    }
    const badFiles = parseEventEnvelope(
      envelope(channelMessage({ files: [{ id: "F0FILE0001" }, { id: "nope" }] })),
    );
    expect(badFiles).toEqual({ ok: false, error: "event.files.1.id: expected a Slack file id" });
  });
});

function blockActions(overrides: Record<string, unknown> = {}) {
  return {
    type: "block_actions",
    user: { id: ANN, username: "ann", name: "ann", team_id: TEAM },
    api_app_id: "A0APP00001",
    token: "deprecated",
    container: {
      type: "message",
      message_ts: "1712345690.000150",
      channel_id: CHANNEL,
      is_ephemeral: false,
      thread_ts: "1712345678.000100",
    },
    trigger_id: "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
    team: { id: TEAM, domain: "stand-in" },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: CHANNEL, name: "general" },
    message: {
      type: "message",
      user: BOT_USER,
      ts: "1712345690.000150",
      thread_ts: "1712345678.000100",
      bot_id: BOT_ID,
      text: "approve or deny",
    },
    response_url: "https://hooks.slack.com/actions/T0TEAM0001/1/abc",
    actions: [
      {
        action_id: "ap:y:0123456789abcdef:helper",
        block_id: "approval-buttons:0123456789abcdef",
        text: { type: "plain_text", text: "Approve", emoji: true },
        value: `slack:${CHANNEL}:1712345678.000100`,
        style: "primary",
        type: "button",
        action_ts: "1712345695.123456",
      },
    ],
    ...overrides,
  };
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

describe("Interactivity: block_actions in a form's payload field", () => {
  it("reads a button click", () => {
    const result = parseInteractionForm(form({ payload: JSON.stringify(blockActions()) }));
    expect(result.ok).toBe(true);
    if (!result.ok || result.value.type !== "block_actions") return;
    expect(result.value.user).toEqual({ id: ANN, username: "ann", name: "ann", team_id: TEAM });
    expect(result.value.channel?.id).toBe(CHANNEL);
    expect(result.value.message).toEqual({
      ts: "1712345690.000150",
      thread_ts: "1712345678.000100",
    });
    expect(result.value.actions[0]).toEqual({
      action_id: "ap:y:0123456789abcdef:helper",
      block_id: "approval-buttons:0123456789abcdef",
      value: `slack:${CHANNEL}:1712345678.000100`,
      type: "button",
      action_ts: "1712345695.123456",
    });
  });

  it("reads a click in a message without a channel (team null, as Slack sends for some surfaces)", () => {
    const result = parseInteractionForm(
      form({ payload: JSON.stringify(blockActions({ team: null, channel: undefined })) }),
    );
    expect(result.ok).toBe(true);
  });

  it("reports another interaction type as unsupported", () => {
    const result = parseInteractionForm(
      form({ payload: JSON.stringify({ type: "view_submission" }) }),
    );
    expect(result).toEqual({
      ok: true,
      value: { type: "unsupported", payloadType: "view_submission" },
    });
  });

  it("refuses a form without payload, a payload that is not JSON, and a malformed one by path", () => {
    expect(parseInteractionForm("a=b")).toEqual({ ok: false, error: "payload: required" });
    expect(parseInteractionForm(form({ payload: "{nope" }))).toEqual({
      ok: false,
      error: "payload: not JSON",
    });
    const noActions = parseInteractionForm(
      form({ payload: JSON.stringify(blockActions({ actions: [] })) }),
    );
    expect(noActions.ok).toBe(false);
    if (!noActions.ok) expect(noActions.error).toMatch(/^payload\.actions: /);
    const badUser = parseInteractionForm(
      form({ payload: JSON.stringify(blockActions({ user: { id: "ann" } })) }),
    );
    expect(badUser).toEqual({ ok: false, error: "payload.user.id: expected a Slack id" });
  });
});

describe("Slash commands: a form-encoded POST", () => {
  const command = {
    token: "deprecated",
    team_id: TEAM,
    team_domain: "stand-in",
    channel_id: CHANNEL,
    channel_name: "general",
    user_id: ANN,
    user_name: "ann",
    command: "/ask",
    text: "what is on today? & <tomorrow>",
    api_app_id: "A0APP00001",
    is_enterprise_install: "false",
    response_url: "https://hooks.slack.com/commands/T0TEAM0001/1/abc",
    trigger_id: "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
  };

  it("reads /ask with its text, who, where and response_url", () => {
    expect(parseSlashCommand(form(command))).toEqual({
      ok: true,
      value: {
        command: "/ask",
        text: "what is on today? & <tomorrow>",
        user_id: ANN,
        user_name: "ann",
        channel_id: CHANNEL,
        team_id: TEAM,
        response_url: "https://hooks.slack.com/commands/T0TEAM0001/1/abc",
        trigger_id: "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
      },
    });
  });

  it("reads a command with no text as empty text", () => {
    const { text: _text, ...rest } = command;
    const result = parseSlashCommand(form(rest));
    expect(result.ok && result.value.text).toBe("");
  });

  it("refuses a command without user_id or with a bad response_url, naming the field", () => {
    const { user_id: _user, ...noUser } = command;
    expect(parseSlashCommand(form(noUser))).toEqual({ ok: false, error: "user_id: required" });
    const badUrl = parseSlashCommand(form({ ...command, response_url: "not a url" }));
    expect(badUrl.ok).toBe(false);
    if (!badUrl.ok) expect(badUrl.error).toMatch(/^response_url: /);
  });
});
