// Slack for the workerd tests: the model and Web API stand-ins behind globalThis.fetch (the
// worker's SLACK_API_BASE is http://slack.test/api; response_url posts to http://slack.test/hooks/…
// are recorded apart), requests signed with vitest.config.ts's SLACK_SIGNING_SECRET, Events API
// envelopes, block_actions and slash command forms as Slack sends them, and the channel binding.
import { afterEach, vi } from "vitest";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";
import {
  createSlackStandIn,
  type SignedSlackRequestOptions,
  signedSlackRequest,
} from "../stand-ins/slack-stand-in.ts";
import { api, MODEL_HOST } from "./api.ts";
import { exports } from "cloudflare:workers";

/** vitest.config.ts's SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET and SLACK_OWNER_IDS. */
export const SLACK_TOKEN = "xoxb-test-token-not-real";
export const SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
export const SLACK_OWNER = "U0OWNER001";
export const TEAM = "T0TEAM0001";
/** Another workspace the app could be installed in: its requests are signed with our secret too. */
export const OTHER_TEAM = "T0OTHER001";
export const APP = "A0APP00001";
export const BOT_USER = "U0BOT00001";
export const BOT_ID = "B0BOT00001";
export const ALICE = "U0ALICE001";
export const BOB = "U0BOB00001";
export const STRANGER = "U0STRANGE1";
/** A workspace admin (users.info is_admin), not among SLACK_OWNER_IDS. */
export const ADMIN = "U0ADMIN001";

export function useSlackStandIns() {
  const model = createOpenAIStandIn();
  const slack = createSlackStandIn({
    token: SLACK_TOKEN,
    botUserId: BOT_USER,
    botId: BOT_ID,
    teamId: TEAM,
    users: [
      { id: ALICE, name: "alice", real_name: "Alice" },
      { id: BOB, name: "bob", real_name: "Bob" },
      { id: SLACK_OWNER, name: "owner", real_name: "Olga", is_owner: true },
      { id: STRANGER, name: "stranger", real_name: "Sam" },
      { id: ADMIN, name: "admin", real_name: "Ada Admin", is_admin: true },
    ],
  });
  const hooks: Array<{ url: string; body: Record<string, unknown> }> = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request =
      input instanceof Request && init === undefined ? input : new Request(input, init);
    const url = new URL(request.url);
    if (url.host === MODEL_HOST) return model.fetch(request);
    if (url.host === "slack.test" && url.pathname.startsWith("/hooks/")) {
      hooks.push({ url: request.url, body: (await request.json()) as Record<string, unknown> });
      return new Response("ok");
    }
    if (url.host === "slack.test") return slack.fetch(request);
    return realFetch(request);
  });
  afterEach(() => {
    model.releaseHung({ text: "late" });
    model.reset();
    slack.reset();
    hooks.length = 0;
  });
  return { model, slack, hooks };
}

/** Posts a signed request as Slack does; `options.signature` forges one. */
export async function postSlack(
  path: "/slack/events" | "/slack/interactions" | "/slack/commands",
  rawBody: string,
  options: SignedSlackRequestOptions = {},
): Promise<Response> {
  const request = await signedSlackRequest(
    `https://agents.test${path}`,
    rawBody,
    SLACK_SECRET,
    options,
  );
  return exports.default.fetch(request);
}

/** Binds the app's channels to an agent. */
export async function bindSlack(defaultAgentId: string, allowedChannels: string[] = []) {
  const response = await api("POST", "/clients/slack/config", {
    body: { defaultAgentId, allowedChannels },
  });
  if (response.status !== 200)
    throw new Error(`binding Slack failed: ${response.status} ${await response.text()}`);
}

let counter = 0;
const next = () => {
  counter += 1;
  return `${String(Date.now() % 100_000_000).padStart(8, "0")}${String(counter).padStart(4, "0")}`;
};
/** A fresh channel id per test (C…), so tests do not share rooms. */
export const channelId = (): string => `C${next()}`;
/** A fresh DM channel id (D…). */
export const dmChannelId = (): string => `D${next()}`;
/** A fresh message ts. */
export const messageTs = (): string =>
  `${Math.floor(Date.now() / 1000)}.${String(++counter).padStart(6, "0")}`;

/** An Events API envelope around one event, as Slack sends it. */
export function envelope(event: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    token: "deprecated-verification-token",
    team_id: TEAM,
    api_app_id: APP,
    event,
    type: "event_callback",
    event_id: `Ev0${next()}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ enterprise_id: null, team_id: TEAM, user_id: BOT_USER, is_bot: true }],
    ...extra,
  });
}

/** An app_mention by `user` in `channel`. */
export function appMention(fields: { channel: string; ts: string; text: string; user?: string }) {
  return {
    type: "app_mention",
    user: fields.user ?? ALICE,
    text: `<@${BOT_USER}> ${fields.text}`,
    ts: fields.ts,
    channel: fields.channel,
    event_ts: fields.ts,
  };
}

/** The same message as message.channels (or message.im with channel_type "im") delivers it. */
export function messageEvent(fields: {
  channel: string;
  ts: string;
  text: string;
  user?: string;
  channel_type?: "channel" | "im";
  extra?: Record<string, unknown>;
}) {
  return {
    type: "message",
    user: fields.user ?? ALICE,
    text: fields.text,
    ts: fields.ts,
    channel: fields.channel,
    event_ts: fields.ts,
    channel_type: fields.channel_type ?? "channel",
    ...fields.extra,
  };
}

const NAMES: Record<string, string> = { [ALICE]: "alice", [BOB]: "bob", [SLACK_OWNER]: "olga" };
const nameOf = (user: string): string => NAMES[user] ?? user.toLowerCase();

/**
 * A block_actions form (a click on `actionId`) in `channel`, on the bot's message `messageTs`,
 * from the bot's workspace unless `team` names another; `team: null` names none at all.
 */
export function blockActions(fields: {
  user: string;
  channel: string;
  messageTs: string;
  threadTs?: string;
  actionId: string;
  value?: string;
  team?: string | null;
}) {
  const team = fields.team === undefined ? TEAM : fields.team;
  const payload = {
    type: "block_actions",
    user: {
      id: fields.user,
      username: nameOf(fields.user),
      name: nameOf(fields.user),
      ...(team === null ? {} : { team_id: team }),
    },
    api_app_id: APP,
    team: team === null ? null : { id: team, domain: "stand-in" },
    channel: { id: fields.channel, name: "general" },
    container: {
      type: "message",
      message_ts: fields.messageTs,
      channel_id: fields.channel,
      is_ephemeral: false,
      ...(fields.threadTs ? { thread_ts: fields.threadTs } : {}),
    },
    message: { ts: fields.messageTs, ...(fields.threadTs ? { thread_ts: fields.threadTs } : {}) },
    actions: [
      {
        action_id: fields.actionId,
        block_id: "b1",
        ...(fields.value ? { value: fields.value } : {}),
        type: "button",
        action_ts: messageTs(),
      },
    ],
    response_url: `http://slack.test/hooks/actions/${TEAM}/${next()}/secret`,
    trigger_id: `${next()}.trigger`,
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/**
 * A slash command form as Slack posts it, from the bot's workspace unless `team` names another;
 * `team: null` leaves `team_id` out.
 */
export function slashCommand(fields: {
  command: string;
  text?: string;
  user?: string;
  channel: string;
  team?: string | null;
}) {
  const user = fields.user ?? ALICE;
  const team = fields.team === undefined ? TEAM : fields.team;
  return new URLSearchParams({
    token: "deprecated-verification-token",
    ...(team === null ? {} : { team_id: team }),
    team_domain: "stand-in",
    channel_id: fields.channel,
    channel_name: "general",
    user_id: user,
    user_name: nameOf(user),
    command: fields.command,
    text: fields.text ?? "",
    api_app_id: APP,
    response_url: `http://slack.test/hooks/commands/${TEAM}/${next()}/secret`,
    trigger_id: `${next()}.trigger`,
  }).toString();
}
