// `npm run deploy -- --slack`: the Slack app's part of the deploy. Before anything changes it reads
// the bot token and the Signing Secret (this shell, or asked for unseen on a terminal), checks both
// as the worker does (src/config.ts) and asks Slack whose token it is (auth.test). After the deploy
// it sends the worker one signed url_verification, as Slack does when it checks a request URL, and
// says which URLs to paste into the app. Neither secret is ever printed or put in an error.
import { createHmac, randomBytes } from "node:crypto";
import { variableIssues } from "../src/config.ts";
import { DEFAULT_SLACK_API_BASE } from "../src/settings.ts";

export interface SlackSetup {
  token: string;
  signingSecret: string;
  /** The bot's name and workspace, from auth.test. */
  user: string;
  team: string;
  teamId: string;
}

/** The three request URLs of the manifest in docs/slack.md, under the worker's address. */
export function slackRequestUrls(base: string): {
  events: string;
  interactions: string;
  commands: string;
} {
  const root = base.replace(/\/+$/, "");
  return {
    events: `${root}/slack/events`,
    interactions: `${root}/slack/interactions`,
    commands: `${root}/slack/commands`,
  };
}

const slackBase = (): string =>
  (process.env.SLACK_API_BASE?.trim() || DEFAULT_SLACK_API_BASE).replace(/\/+$/, "");

/** Slack's codes for a token it will not take (auth.test answers HTTP 200 with ok: false). */
const REFUSED_TOKEN_CODES = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
]);

/**
 * The token and secret from this shell, else asked for on a terminal (`ask` is undefined off a
 * terminal); both checked as the worker checks them, then the token with Slack.
 */
export async function slackSetup(
  ask: ((question: string) => Promise<string>) | undefined,
): Promise<SlackSetup> {
  const token = await value(
    "SLACK_BOT_TOKEN",
    "Slack bot token (OAuth & Permissions, Bot User OAuth Token, xoxb-…; not shown): ",
    ask,
  );
  const signingSecret = await value(
    "SLACK_SIGNING_SECRET",
    "Slack signing secret (Basic Information, App Credentials, Signing Secret; not shown): ",
    ask,
  );
  const issues = variableIssues({ SLACK_BOT_TOKEN: token, SLACK_SIGNING_SECRET: signingSecret });
  if (issues.length > 0) throw new Error(`Slack: ${issues.join("; ")}`);
  return { token, signingSecret, ...(await authTest(token)) };
}

async function value(
  name: string,
  question: string,
  ask: ((question: string) => Promise<string>) | undefined,
): Promise<string> {
  const fromEnv = process.env[name]?.trim();
  if (fromEnv) return fromEnv;
  if (!ask)
    throw new Error(
      `--slack needs ${name}: set it in this shell (the installed app's pages: Bot User OAuth ` +
        "Token under OAuth & Permissions, Signing Secret under Basic Information), or run on a " +
        "terminal to be asked for it",
    );
  const typed = await ask(question);
  if (!typed) throw new Error(`--slack needs ${name}`);
  return typed;
}

/** Whose token it is. The token rides in a header only; no error here repeats it. */
async function authTest(token: string): Promise<{ user: string; team: string; teamId: string }> {
  let response: Response;
  try {
    response = await fetch(`${slackBase()}/auth.test`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "",
    });
  } catch {
    throw new Error("Slack's Web API did not answer auth.test (network error)");
  }
  let answer: { ok?: unknown; error?: unknown; user?: unknown; team?: unknown; team_id?: unknown } =
    {};
  try {
    answer = (await response.json()) as typeof answer;
  } catch {}
  const code = typeof answer.error === "string" ? answer.error.slice(0, 60) : "";
  if (REFUSED_TOKEN_CODES.has(code))
    throw new Error(
      `Slack refused SLACK_BOT_TOKEN (${code}): copy the Bot User OAuth Token again ` +
        "(the app's OAuth & Permissions page, after Install App)",
    );
  if (
    !response.ok ||
    answer.ok !== true ||
    typeof answer.user !== "string" ||
    typeof answer.team !== "string" ||
    typeof answer.team_id !== "string"
  )
    throw new Error(
      `Slack did not say whose SLACK_BOT_TOKEN it is (HTTP ${response.status}${code ? `: ${code}` : ""})`,
    );
  return { user: answer.user, team: answer.team, teamId: answer.team_id };
}

/**
 * Sends the worker what Slack sends when it checks the events URL: a url_verification signed with
 * the Signing Secret (v0 HMAC-SHA256 of `v0:<timestamp>:<body>`). A few tries: a new version takes
 * a moment to serve everywhere. Says what it got, never the secret.
 */
async function answersUrlCheck(slack: SlackSetup, url: string): Promise<true | string> {
  const challenge = randomBytes(16).toString("hex");
  let last = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
    const body = JSON.stringify({ type: "url_verification", challenge });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac("sha256", slack.signingSecret)
      .update(`v0:${timestamp}:${body}`)
      .digest("hex");
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-slack-request-timestamp": timestamp,
          "x-slack-signature": `v0=${signature}`,
        },
        body,
      });
      const answer = (await response.json().catch(() => ({}))) as { challenge?: unknown };
      if (response.ok && answer.challenge === challenge) return true;
      last = `HTTP ${response.status}`;
    } catch {
      last = "no answer";
    }
  }
  return last;
}

/** After the deploy: the URLs to paste into the app, and whether Slack's check of them will pass. */
export async function slackReport(slack: SlackSetup, base: string): Promise<string[]> {
  const urls = slackRequestUrls(base);
  const checked = await answersUrlCheck(slack, urls.events);
  return [
    "Slack request URLs (the manifest in docs/slack.md has them; or paste them on the app's pages):",
    `  Event Subscriptions, Request URL:       ${urls.events}`,
    `  Interactivity & Shortcuts, Request URL: ${urls.interactions}`,
    `  Slash Commands /ask and /forget, URL:   ${urls.commands}`,
    checked === true
      ? "Slack's URL check: the worker answers it. Not verified in Event Subscriptions? Click Retry."
      : `Slack's URL check: the worker did not answer a signed url_verification (${checked}); Slack cannot verify ${urls.events} until it does.`,
  ];
}
