// What every Slack route does first: refuse when Slack is not configured (503), read the body up to
// MAX_SLACK_BODY_BYTES (413 beyond, by its declared length or as it streams in), and check Slack's
// v0 signature over those exact bytes and a timestamp within five minutes (401 otherwise). Nothing
// is parsed, stored or looked up before the signature holds. Then the one-workspace rule: the
// team a request comes from must be the bot token's own (auth.test), since this deployment
// installs the app in one workspace only.
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import { readCappedBody } from "../../capped-body.ts";
import { verifySlackSignature } from "../../../clients/slack/signature.ts";
import { type SlackBotIdentity, slackBotIdentity } from "../../../clients/slack/bot-identity.ts";
import { slackWebApi } from "../../../clients/slack/slack-surface.ts";
import { loadConfig } from "../../../config.ts";
import { surfaceUnavailable } from "../../../surfaces.ts";
import { log } from "../../../log.ts";
import { UnauthorizedError } from "../../../runtime/util/errors.ts";

/** Events, interactions and commands are a few KB; Slack's largest message text is 40,000 chars. */
export const MAX_SLACK_BODY_BYTES = 1024 * 1024;

export interface SignedSlackBody {
  raw: string;
  token: string;
}

export async function readSignedSlackBody(c: Context<AppEnv>): Promise<SignedSlackBody> {
  const config = loadConfig(c.env);
  const slack = config.slack;
  if (!slack) throw surfaceUnavailable(config, "slack", "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET");
  const bytes = await readCappedBody(c.req.raw, MAX_SLACK_BODY_BYTES);
  const verdict = await verifySlackSignature({
    signingSecret: slack.signingSecret,
    timestamp: c.req.header("x-slack-request-timestamp"),
    signature: c.req.header("x-slack-signature"),
    rawBody: bytes,
    nowMs: Date.now(),
  });
  if (!verdict.ok) {
    log.warn("slack_signature_refused", { path: c.req.path, reason: verdict.reason });
    throw new UnauthorizedError(
      verdict.reason === "stale"
        ? "X-Slack-Request-Timestamp is more than five minutes from now"
        : "missing or wrong X-Slack-Signature",
    );
  }
  return { raw: new TextDecoder().decode(bytes), token: slack.botToken };
}

/**
 * The bot, when the request's workspace is the token's; null for any other workspace. A request
 * must name its workspace: the caller refuses one that names none (400) before asking here.
 */
export async function botOfWorkspace(
  c: Context<AppEnv>,
  token: string,
  teamId: string,
): Promise<SlackBotIdentity | null> {
  // One attempt while Slack waits: a failure is a 5xx, and Slack delivers the request again.
  const bot = await slackBotIdentity(slackWebApi(c.env, { maxAttempts: 1 }), token);
  if (teamId !== bot.teamId) {
    // Signed with our secret, so it is our app, installed in a second workspace: not served.
    log.warn("slack_other_workspace", { path: c.req.path });
    return null;
  }
  return bot;
}
