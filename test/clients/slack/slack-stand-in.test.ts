// The Slack stand-in's own promises, which the route tests rely on: requests signed exactly as Slack
// signs them (checked by the real verifier), the retry headers, and Slack's auth answers.
import { describe, expect, it } from "vitest";
import { verifySlackSignature } from "../../../src/clients/slack/signature.ts";
import { createSlackStandIn, signedSlackRequest } from "../../stand-ins/slack-stand-in.ts";
import { BOT_ID, BOT_USER, TEAM } from "./fixtures.ts";

const SECRET = "stand-in-signing-secret";

describe("Slack stand-in", () => {
  it("signs a request so that the verifier accepts it, with Slack's headers", async () => {
    const body = '{"type":"url_verification","challenge":"c"}';
    const request = await signedSlackRequest("http://worker.test/slack/events", body, SECRET);
    expect(request.headers.get("content-type")).toBe("application/json");
    expect(request.headers.get("x-slack-retry-num")).toBeNull();
    const raw = new TextDecoder().decode(await request.arrayBuffer());
    expect(
      await verifySlackSignature({
        signingSecret: SECRET,
        timestamp: request.headers.get("x-slack-request-timestamp"),
        signature: request.headers.get("x-slack-signature"),
        rawBody: raw,
        nowMs: Date.now(),
      }),
    ).toEqual({ ok: true });
  });

  it("adds X-Slack-Retry-Num and -Reason for a redelivery, and a form type for a form", async () => {
    const request = await signedSlackRequest(
      "http://worker.test/slack/interactions",
      "payload=%7B%7D",
      SECRET,
      {
        retryNum: 2,
        timestampSec: 1_700_000_000,
      },
    );
    expect(request.headers.get("x-slack-retry-num")).toBe("2");
    expect(request.headers.get("x-slack-retry-reason")).toBe("http_timeout");
    expect(request.headers.get("content-type")).toBe("application/x-www-form-urlencoded");
    expect(request.headers.get("x-slack-request-timestamp")).toBe("1700000000");
  });

  it("answers a missing or wrong bearer with HTTP 200 and Slack's error codes", async () => {
    const slack = createSlackStandIn({
      token: "xoxb-right",
      botUserId: BOT_USER,
      botId: BOT_ID,
      teamId: TEAM,
    });
    const none = await slack.fetch("http://slack.test/api/auth.test", { method: "POST" });
    expect(none.status).toBe(200);
    expect(await none.json()).toEqual({ ok: false, error: "not_authed" });
    const wrong = await slack.fetch("http://slack.test/api/auth.test", {
      method: "POST",
      headers: { authorization: "Bearer xoxb-wrong" },
    });
    expect(await wrong.json()).toEqual({ ok: false, error: "invalid_auth" });
    const unknown = await slack.fetch("http://slack.test/api/chat.nope", {
      method: "POST",
      headers: { authorization: "Bearer xoxb-right" },
    });
    expect(await unknown.json()).toEqual({ ok: false, error: "unknown_method" });
    expect(slack.calls.map((c) => c.error)).toEqual([
      "not_authed",
      "invalid_auth",
      "unknown_method",
    ]);
  });
});
