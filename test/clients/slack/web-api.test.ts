// Slack's Web API client against the stand-in, which speaks Slack's wire format: bearer token,
// `{ok, error}` answers with HTTP 200, 429 with Retry-After, 5xx. Waits go through an injected sleep,
// so no test sleeps; errors carry Slack's code and never the token.
import { describe, expect, it } from "vitest";
import {
  SlackApiError,
  createSlackWebApi,
  escapeSlackText,
  slackReplyParts,
  SLACK_MESSAGE_LIMIT,
} from "../../../src/clients/slack/web-api.ts";
import { createSlackStandIn } from "../../stand-ins/slack-stand-in.ts";
import { ANN, BOT_ID, BOT_USER, CHANNEL, TEAM } from "./fixtures.ts";

const TOKEN = "xoxb-test-token-not-real-0123456789";
const BASE = "http://slack.test/api";

function setup(options: { token?: string; maxAttempts?: number } = {}) {
  const slack = createSlackStandIn({
    token: TOKEN,
    botUserId: BOT_USER,
    botId: BOT_ID,
    teamId: TEAM,
    users: [
      { id: ANN, name: "ann", real_name: "Ann Example" },
      { id: "U0ADMIN001", name: "boss", is_admin: true },
    ],
  });
  const waits: number[] = [];
  const api = createSlackWebApi({
    token: options.token ?? TOKEN,
    baseUrl: BASE,
    fetch: (input, init) => slack.fetch(input, init),
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
    ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
  });
  return { slack, api, waits };
}

async function failure(promise: Promise<unknown>): Promise<SlackApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SlackApiError) return error;
    throw error;
  }
  throw new Error("expected a SlackApiError");
}

describe("Slack Web API: calls", () => {
  it("auth.test says who the bot is", async () => {
    const { api, slack } = setup();
    expect(await api.authTest()).toEqual({
      user_id: BOT_USER,
      bot_id: BOT_ID,
      team_id: TEAM,
      team: "Stand-in team",
      user: "agent",
    });
    expect(slack.calls[0]).toMatchObject({
      method: "auth.test",
      authorization: `Bearer ${TOKEN}`,
    });
  });

  it("chat.postMessage goes into the thread, as JSON, with previews off", async () => {
    const { api, slack } = setup();
    const sent = await api.postMessage({
      channel: CHANNEL,
      text: "Today: standup at 10.",
      thread_ts: "1712345678.000100",
    });
    expect(sent.channel).toBe(CHANNEL);
    expect(sent.ts).toMatch(/^\d+\.\d+$/);
    const [call] = slack.callsTo("chat.postMessage");
    expect(call?.contentType).toBe("application/json; charset=utf-8");
    expect(call?.authorization).toBe(`Bearer ${TOKEN}`);
    expect(call?.body).toEqual({
      channel: CHANNEL,
      text: "Today: standup at 10.",
      thread_ts: "1712345678.000100",
      unfurl_links: false,
      unfurl_media: false,
      link_names: false,
    });
    expect(slack.posted(CHANNEL)).toMatchObject([
      { ts: sent.ts, text: "Today: standup at 10.", thread_ts: "1712345678.000100" },
    ]);
  });

  it("escapes what the model wrote, so <!channel> and <@U1> are shown, not acted on", async () => {
    const { api, slack } = setup();
    await api.postMessage({ channel: CHANNEL, text: "hey <!channel> and <@U0ANN00001> & co" });
    expect(slack.posted(CHANNEL)[0]?.text).toBe(
      "hey &lt;!channel&gt; and &lt;@U0ANN00001&gt; &amp; co",
    );
  });

  it("chat.update replaces the text and removes the blocks unless new ones are given", async () => {
    const { api, slack } = setup();
    const sent = await api.postMessage({
      channel: CHANNEL,
      text: "approve?",
      blocks: [{ type: "section", text: { type: "mrkdwn", text: "approve?" } }],
    });
    await api.update({ channel: CHANNEL, ts: sent.ts, text: "approved" });
    expect(slack.posted(CHANNEL)).toMatchObject([
      { ts: sent.ts, text: "approved", blocks: [], updates: 1 },
    ]);
  });

  it("users.info reads a member's admin flags, sent as a form", async () => {
    const { api, slack } = setup();
    expect(await api.usersInfo("U0ADMIN001")).toMatchObject({
      id: "U0ADMIN001",
      name: "boss",
      is_admin: true,
    });
    expect(await api.usersInfo(ANN)).toMatchObject({ id: ANN, real_name: "Ann Example" });
    expect(slack.callsTo("users.info")[0]?.contentType).toBe("application/x-www-form-urlencoded");
    const missing = await failure(api.usersInfo("U0NOBODY01"));
    expect(missing).toMatchObject({ error: "user_not_found", retryable: false });
  });

  it("chat.postEphemeral shows a line to one person in the thread", async () => {
    const { api, slack } = setup();
    const shown = await api.postEphemeral({
      channel: CHANNEL,
      user: ANN,
      text: "Only the person who asked can approve this.",
      thread_ts: "1712345678.000100",
    });
    expect(shown.message_ts).toMatch(/^\d+\.\d+$/);
    expect(slack.ephemerals(CHANNEL)).toEqual([
      {
        user: ANN,
        text: "Only the person who asked can approve this.",
        thread_ts: "1712345678.000100",
      },
    ]);
    expect(slack.posted(CHANNEL)).toEqual([]);
  });
});

describe("Slack Web API: failures", () => {
  it("gives up at once on invalid_auth, and the error never carries the token", async () => {
    const wrong = "xoxb-wrong-token-0000000000000";
    const { api, slack, waits } = setup({ token: wrong });
    const error = await failure(api.postMessage({ channel: CHANNEL, text: "hi" }));
    expect(error).toMatchObject({ error: "invalid_auth", status: 200, retryable: false });
    expect(slack.calls).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(`${error.message} ${error.stack} ${JSON.stringify(error)}`).not.toContain(wrong);
    expect(error.message).not.toContain("xoxb");
  });

  it("waits out a 429's Retry-After through the injected sleep, then succeeds", async () => {
    const { api, slack, waits } = setup();
    slack.failNext("chat.postMessage", { retryAfterSeconds: 3 });
    const sent = await api.postMessage({ channel: CHANNEL, text: "hi" });
    expect(sent.ts).toBeTruthy();
    expect(waits).toEqual([3_000]);
    expect(slack.callsTo("chat.postMessage").map((c) => c.status)).toEqual([429, 200]);
    expect(slack.posted(CHANNEL)).toHaveLength(1);
  });

  it("gives a 429 asking for more than 30 s back as retryable, with the wait, without sleeping", async () => {
    const { api, slack, waits } = setup();
    slack.failNext("chat.postMessage", { retryAfterSeconds: 120 });
    const error = await failure(api.postMessage({ channel: CHANNEL, text: "hi" }));
    expect(error).toMatchObject({
      error: "ratelimited",
      status: 429,
      retryable: true,
      retryAfterMs: 120_000,
    });
    expect(waits).toEqual([]);
    expect(slack.posted(CHANNEL)).toEqual([]);
  });

  it("retries 5xx with backoff and Slack's own internal_error code", async () => {
    const { api, slack, waits } = setup();
    slack.failNext("chat.postMessage", { status: 503 });
    slack.failNext("chat.postMessage", { error: "internal_error" });
    await api.postMessage({ channel: CHANNEL, text: "hi" });
    expect(slack.callsTo("chat.postMessage").map((c) => c.status)).toEqual([503, 200, 200]);
    // Full jitter at random()=0.5: half of 500 ms, then half of 1,000 ms.
    expect(waits).toEqual([250, 500]);
    expect(slack.posted(CHANNEL)).toHaveLength(1);
  });

  it("gives up retryable after maxAttempts of 5xx", async () => {
    const { api, slack } = setup({ maxAttempts: 3 });
    for (let i = 0; i < 3; i++) slack.failNext("chat.update", { status: 502 });
    const error = await failure(api.update({ channel: CHANNEL, ts: "1.1", text: "x" }));
    expect(error).toMatchObject({ error: "http_502", status: 502, retryable: true });
    expect(slack.callsTo("chat.update")).toHaveLength(3);
  });

  it("retries a network failure without repeating what the network said", async () => {
    const { slack } = setup();
    let first = true;
    const waits: number[] = [];
    const api = createSlackWebApi({
      token: TOKEN,
      baseUrl: BASE,
      fetch: async (input, init) => {
        if (first) {
          first = false;
          throw new TypeError(`connect failed: ${TOKEN}`);
        }
        return slack.fetch(input, init);
      },
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 1,
    });
    await api.postMessage({ channel: CHANNEL, text: "hi" });
    expect(waits).toEqual([500]);
    const failing = createSlackWebApi({
      token: TOKEN,
      baseUrl: BASE,
      fetch: async () => {
        throw new TypeError(`connect failed: ${TOKEN}`);
      },
      sleep: async () => {},
      maxAttempts: 2,
    });
    const error = await failure(failing.authTest());
    expect(error).toMatchObject({ error: "network_error", status: 0, retryable: true });
    expect(error.message).not.toContain(TOKEN);
  });

  it("treats other refusals as final and reports only Slack's code", async () => {
    const { api, slack, waits } = setup();
    slack.failNext("chat.postMessage", { error: "channel_not_found" });
    const error = await failure(api.postMessage({ channel: CHANNEL, text: "hi" }));
    expect(error).toMatchObject({ error: "channel_not_found", retryable: false });
    expect(error.message).toBe("Slack chat.postMessage failed: channel_not_found (HTTP 200)");
    expect(waits).toEqual([]);
    slack.failNext("chat.postMessage", { status: 400 });
    expect(await failure(api.postMessage({ channel: CHANNEL, text: "hi" }))).toMatchObject({
      error: "http_400",
      retryable: false,
    });
  });

  it("does not repeat a remote body that is not Slack's short code", async () => {
    const api = createSlackWebApi({
      token: TOKEN,
      baseUrl: BASE,
      fetch: async () =>
        Response.json({ ok: false, error: `Something <b>long</b> with ${TOKEN} in it` }),
    });
    const error = await failure(api.authTest());
    expect(error.error).toBe("unknown_error");
    expect(error.message).not.toContain("long");
    const garbled = createSlackWebApi({
      token: TOKEN,
      baseUrl: BASE,
      fetch: async () => new Response("<html>proxy</html>", { status: 200 }),
    });
    expect(await failure(garbled.authTest())).toMatchObject({
      error: "invalid_response",
      retryable: false,
    });
    const shapeless = createSlackWebApi({
      token: TOKEN,
      baseUrl: BASE,
      fetch: async () => Response.json({ ok: true, ts: "not a ts" }),
    });
    expect(await failure(shapeless.postMessage({ channel: CHANNEL, text: "x" }))).toMatchObject({
      error: "invalid_response",
    });
  });
});

describe("Slack text: escaping and splitting", () => {
  it("escapeSlackText neutralises broadcasts, user mentions and links", () => {
    expect(escapeSlackText("<!channel> <!here> <@U1> <https://x.test|click>")).toBe(
      "&lt;!channel&gt; &lt;!here&gt; &lt;@U1&gt; &lt;https://x.test|click&gt;",
    );
    expect(escapeSlackText("a & b &amp; c")).toBe("a &amp; b &amp;amp; c");
    expect(escapeSlackText("*bold* _it_ `code`")).toBe("*bold* _it_ `code`");
  });

  it("splits a long reply at Slack's 4,000 characters", () => {
    const paragraph = `${"word ".repeat(300).trim()}.`;
    const parts = slackReplyParts(Array.from({ length: 6 }, () => paragraph).join("\n\n"));
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(SLACK_MESSAGE_LIMIT);
  });
});
