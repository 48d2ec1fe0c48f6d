// The Slack reply surface against the Web API stand-in: every part in the message's thread, split
// at SLACK_MESSAGE_LIMIT, a resumed delivery sending none twice, the approval prompt as Block Kit
// buttons that carry the room back, an expired prompt losing its buttons, and which failures are
// final. The response_url host rule lives here too.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isSlackResponseUrl } from "../../../src/clients/slack/response-url.ts";
import {
  createSlackSurface,
  SLACK_MESSAGE_KIND,
} from "../../../src/clients/slack/slack-surface.ts";
import { SLACK_MESSAGE_LIMIT, SlackApiError } from "../../../src/clients/slack/web-api.ts";
import { useSlackStandIns } from "../../helpers/slack.ts";

const { slack } = useSlackStandIns();

const target = {
  kind: SLACK_MESSAGE_KIND,
  channel: "C0SURFACE1",
  threadTs: "1712345678.000100",
  roomId: "slack:C0SURFACE1:1712345678.000100",
  addressed: true,
};

describe("Slack reply surface", () => {
  it("sends a long reply in parts of at most 4,000 characters, all in the thread, and resumes after the parts sent", async () => {
    const surface = createSlackSurface(env);
    const paragraph = "word ".repeat(700).trim();
    const reply = [paragraph, paragraph, paragraph].join("\n\n");
    const sent: number[] = [];
    await surface.sendReply(target, { reply, error: null, sentParts: 0 }, (n) => sent.push(n));
    const posted = slack.posted(target.channel);
    expect(posted.length).toBeGreaterThan(1);
    for (const part of posted) {
      expect(part.text.length).toBeLessThanOrEqual(SLACK_MESSAGE_LIMIT);
      expect(part.thread_ts).toBe(target.threadTs);
    }
    expect(sent).toEqual(posted.map((_m, i) => i + 1));
    slack.reset();
    await surface.sendReply(target, { reply, error: null, sentParts: sent.length - 1 }, () => {});
    expect(slack.posted(target.channel)).toHaveLength(1);
  });

  it("escapes what the model writes, so it cannot notify the channel", async () => {
    await createSlackSurface(env).sendReply(
      target,
      { reply: "<!channel> look <@U0ALICE001>", error: null, sentParts: 0 },
      () => {},
    );
    expect(slack.posted(target.channel)[0]!.text).toBe("&lt;!channel&gt; look &lt;@U0ALICE001&gt;");
  });

  it("posts the approval prompt with buttons carrying the room, and closes it without them", async () => {
    const surface = createSlackSurface(env);
    expect(surface.canAskApproval(target, "ada")).toBe(true);
    const posted = await surface.postApprovalPrompt(target, {
      asker: "room",
      approvalId: "0123456789abcdef",
      agentId: "ada",
      agentName: "Ada",
      tool: "remember",
      arguments: { fact: "x" },
      requesterId: "slack:U0ALICE001",
      expiresAt: Date.now() + 600_000,
    });
    const [prompt] = slack.posted(target.channel);
    expect(prompt!.thread_ts).toBe(target.threadTs);
    expect(JSON.stringify(prompt!.blocks)).toContain(target.roomId);
    await surface.closeExpiredPrompt(posted!, "remember");
    const closed = slack.posted(target.channel)[0]!;
    expect(closed.text).toContain("Nobody answered");
    expect(JSON.stringify(closed.blocks)).not.toContain("button");
  });

  it("treats Slack's refusals as final and its own trouble as worth another try", () => {
    const surface = createSlackSurface(env);
    expect(
      surface.isPermanentFailure(
        new SlackApiError("chat.postMessage", "not_in_channel", 200, false),
      ),
    ).toBe(true);
    expect(
      surface.isPermanentFailure(new SlackApiError("chat.postMessage", "http_503", 503, true)),
    ).toBe(false);
  });
});

describe("response_url", () => {
  it("is posted to only on Slack's hooks host over https, or the configured API base's host", () => {
    const base = "https://slack.com/api";
    expect(isSlackResponseUrl("https://hooks.slack.com/actions/T1/1/abc", base)).toBe(true);
    expect(isSlackResponseUrl("http://hooks.slack.com/actions/T1/1/abc", base)).toBe(false);
    expect(isSlackResponseUrl("https://hooks.slack.com.evil.test/x", base)).toBe(false);
    expect(isSlackResponseUrl("https://user:pw@hooks.slack.com/x", base)).toBe(false);
    expect(isSlackResponseUrl("http://169.254.169.254/latest", base)).toBe(false);
    expect(isSlackResponseUrl("http://slack.test/hooks/x", "http://slack.test/api")).toBe(true);
    expect(isSlackResponseUrl("not a url", base)).toBe(false);
  });
});
