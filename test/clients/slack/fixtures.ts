// Slack payloads as Slack sends them (the shapes of its Events API and interactivity references),
// for the tests of src/clients/slack/. Ids follow Slack's formats; nothing here is a real workspace.
export const TEAM = "T0TEAM0001";
export const APP = "A0APP00001";
export const BOT_USER = "U0BOT00001";
export const BOT_ID = "B0BOT00001";
export const ANN = "U0ANN00001";
export const CHANNEL = "C0CHAN0001";
export const DM = "D0DM000001";

let counter = 0;
export function eventId(): string {
  counter += 1;
  return `Ev0${String(counter).padStart(8, "0")}`;
}

export function envelope(event: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    token: "deprecated-verification-token",
    team_id: TEAM,
    api_app_id: APP,
    event,
    type: "event_callback",
    event_id: eventId(),
    event_time: 1_712_345_678,
    authorizations: [
      {
        enterprise_id: null,
        team_id: TEAM,
        user_id: BOT_USER,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
    event_context: "4-eyJldCI6ImFwcF9tZW50aW9uIn0",
    ...extra,
  });
}

export function appMention(overrides: Record<string, unknown> = {}) {
  return {
    client_msg_id: "0c2a7f4e-1111-2222-3333-444455556666",
    type: "app_mention",
    text: `<@${BOT_USER}> what is on today?`,
    user: ANN,
    ts: "1712345678.000100",
    team: TEAM,
    blocks: [],
    channel: CHANNEL,
    event_ts: "1712345678.000100",
    ...overrides,
  };
}

export function channelMessage(overrides: Record<string, unknown> = {}) {
  return {
    client_msg_id: "0c2a7f4e-1111-2222-3333-444455556666",
    type: "message",
    text: `<@${BOT_USER}> what is on today?`,
    user: ANN,
    ts: "1712345678.000100",
    team: TEAM,
    blocks: [],
    channel: CHANNEL,
    event_ts: "1712345678.000100",
    channel_type: "channel",
    ...overrides,
  };
}

export function directMessage(overrides: Record<string, unknown> = {}) {
  return channelMessage({ text: "hello there", channel: DM, channel_type: "im", ...overrides });
}
