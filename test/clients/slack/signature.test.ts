// Slack's request signing (api.slack.com/authentication/verifying-requests-from-slack): v0 HMAC-SHA256
// of `v0:<timestamp>:<raw body>` with the signing secret, compared in constant time, and a 5-minute
// window either way against replays.
import { describe, expect, it } from "vitest";
import { signSlackRequest, verifySlackSignature } from "../../../src/clients/slack/signature.ts";

const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const NOW_MS = 1_712_345_678_000;
const NOW_S = NOW_MS / 1000;
const BODY = '{"type":"event_callback","event":{"type":"app_mention","text":"<@U0BOT> hi"}}';

async function check(overrides: {
  secret?: string;
  timestamp?: string | null;
  signature?: string | null;
  body?: string | Uint8Array;
  nowMs?: number;
}) {
  const timestamp = overrides.timestamp === undefined ? String(NOW_S) : overrides.timestamp;
  const signature =
    overrides.signature === undefined
      ? await signSlackRequest(SECRET, timestamp ?? "0", BODY)
      : overrides.signature;
  return verifySlackSignature({
    signingSecret: overrides.secret ?? SECRET,
    timestamp,
    signature,
    rawBody: overrides.body ?? BODY,
    nowMs: overrides.nowMs ?? NOW_MS,
  });
}

describe("Slack request signing: v0 HMAC-SHA256 of v0:<timestamp>:<raw body>", () => {
  it("accepts a request signed with the signing secret, as a string or as bytes", async () => {
    expect(await check({})).toEqual({ ok: true });
    expect(await check({ body: new TextEncoder().encode(BODY) })).toEqual({ ok: true });
  });

  it("matches Slack's documented example signature", async () => {
    // The worked example of Slack's "Verifying requests from Slack" guide.
    const body =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    expect(await signSlackRequest(SECRET, "1531420618", body)).toBe(
      "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
    );
  });

  it("refuses a signature made with another secret", async () => {
    const forged = await signSlackRequest("another-secret", String(NOW_S), BODY);
    expect(await check({ signature: forged })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("refuses a body changed by one byte", async () => {
    const changed = BODY.replace("hi", "hI");
    expect(changed.length).toBe(BODY.length);
    expect(await check({ body: changed })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("refuses a signature for another timestamp inside the window", async () => {
    const other = await signSlackRequest(SECRET, String(NOW_S - 1), BODY);
    expect(await check({ signature: other })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("refuses a timestamp 301 s old or 301 s in the future as stale, and accepts 300 s", async () => {
    for (const timestamp of [NOW_S - 301, NOW_S + 301]) {
      expect(await check({ timestamp: String(timestamp) })).toEqual({ ok: false, reason: "stale" });
    }
    for (const timestamp of [NOW_S - 300, NOW_S + 300]) {
      expect(await check({ timestamp: String(timestamp) })).toEqual({ ok: true });
    }
  });

  it("refuses missing headers and a timestamp that is not integer seconds", async () => {
    expect(await check({ timestamp: null })).toEqual({ ok: false, reason: "missing" });
    expect(await check({ signature: null })).toEqual({ ok: false, reason: "missing" });
    expect(await check({ signature: "" })).toEqual({ ok: false, reason: "missing" });
    for (const timestamp of ["abc", "1712345678.5", "-1712345678", " 1712345678", "1e9"]) {
      expect(await check({ timestamp })).toEqual({ ok: false, reason: "missing" });
    }
  });

  it("refuses a malformed signature and an empty signing secret without throwing", async () => {
    const good = await signSlackRequest(SECRET, String(NOW_S), BODY);
    for (const signature of [`v1=${good.slice(3)}`, good.slice(3), `${good}00`, "v0=zz"]) {
      expect(await check({ signature })).toEqual({ ok: false, reason: "mismatch" });
    }
    expect(await check({ secret: "", signature: good })).toEqual({
      ok: false,
      reason: "mismatch",
    });
  });
});
