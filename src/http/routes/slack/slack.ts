// Slack's Events API, `POST /slack/events`. The body is read up to 1 MB and its v0 signature checked
// before anything else (signed-request.ts). url_verification is answered with its challenge. An
// app_mention, a channel message that mentions the bot, or a direct message becomes one turn in
// room `slack:<channel>:<thread ts>` (one room per DM: `slack:<D…>`), keyed
// `slack-msg:<channel>:<ts>`: the same message under app_mention and message.*, and Slack's retries
// (X-Slack-Retry-Num), are that one turn, whatever their event_id. Edits and deletions amend the
// stored message by that key. The bot's own messages, and other bots', start nothing. The intake
// only enqueues, so Slack's 3 s acknowledgement holds; the room runs the turn.
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import {
  amendMessage,
  clientBudgets,
  type IntakeResult,
  takeMessage,
} from "../../../clients/chat/intake.ts";
import type { SlackBotIdentity } from "../../../clients/slack/bot-identity.ts";
import { type EventCallback, parseEventEnvelope } from "../../../clients/slack/events.ts";
import { memberName } from "../../../clients/slack/member-names.ts";
import {
  addressing,
  amendmentOf,
  replyThreadOf,
  roomIdOf,
  type SlackMessageEvent,
  shouldIgnore,
  textForModel,
  turnKey,
} from "../../../clients/slack/message-text.ts";
import {
  SLACK_MESSAGE_KIND,
  type SlackMessageDelivery,
  slackWebApi,
} from "../../../clients/slack/slack-surface.ts";
import { log } from "../../../log.ts";
import { ValidationError } from "../../../runtime/util/errors.ts";
import { anyJsonObject, errorContent, signedBody } from "../../schemas.ts";
import { slackChannelFor } from "./binding.ts";
import { botOfWorkspace, readSignedSlackBody } from "./signed-request.ts";

type Ctx = Context<AppEnv>;
type Outcome = IntakeResult | "amended" | "skipped" | "other_workspace";

/** The signed-request headers every Slack route documents. */
const SLACK_SIGNED_HEADERS = z.object({
  "x-slack-signature": z
    .string()
    .openapi({ description: "v0=HMAC-SHA256 of v0:<timestamp>:<body> (SLACK_SIGNING_SECRET)" }),
  "x-slack-request-timestamp": z
    .string()
    .openapi({ description: "Unix seconds; refused more than five minutes from now" }),
});

const SLACK_SIGNED_RESPONSES = {
  400: errorContent("A body that is not a valid Slack payload"),
  401: errorContent("A missing or wrong signature, or a stale timestamp"),
  413: errorContent("A body over 1 MB"),
  503: errorContent("Slack is not configured, or off (a malformed variable of its own)"),
};

/**
 * Documents a Slack route: documented, not validated by the route schema, since the signature
 * covers the raw bytes (signed-request.ts reads and checks them first).
 */
export function documentSlackRoute(
  app: OpenAPIHono<AppEnv>,
  route: { path: string; summary: string; body: ReturnType<typeof signedBody>; ok: string },
): void {
  app.openAPIRegistry.registerPath({
    method: "post",
    path: route.path,
    summary: route.summary,
    request: { headers: SLACK_SIGNED_HEADERS, body: route.body },
    responses: { 200: { description: route.ok }, ...SLACK_SIGNED_RESPONSES },
  });
}

export function slackEventRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  documentSlackRoute(app, {
    path: "/slack/events",
    summary: "Slack Events API (authenticated by Slack's request signature; no bearer token)",
    body: signedBody("application/json", anyJsonObject("An Events API envelope")),
    ok: "The url_verification challenge, or the event taken or skipped",
  });

  app.post("/slack/events", async (c) => {
    const { raw, token } = await readSignedSlackBody(c);
    const parsed = parseEventEnvelope(raw);
    if (!parsed.ok) throw new ValidationError(`invalid Slack event: ${parsed.error}`);
    const envelope = parsed.value;
    if (envelope.type === "url_verification") return c.json({ challenge: envelope.challenge }, 200);
    if (envelope.type === "unsupported") return c.json({ ok: true, outcome: "skipped" }, 200);
    const bot = await botOfWorkspace(c, token, envelope.team_id);
    const outcome: Outcome = bot ? await onEvent(c, envelope, bot) : "other_workspace";
    if (outcome !== "queued" && outcome !== "amended")
      log.info("slack_event_not_taken", {
        eventId: envelope.event_id,
        retry: c.req.header("x-slack-retry-num") ?? null,
        outcome,
      });
    // Any signed, well-formed event is answered 200: Slack retries anything else.
    return c.json({ ok: true, outcome }, 200);
  });
  return app;
}

async function onEvent(c: Ctx, envelope: EventCallback, bot: SlackBotIdentity): Promise<Outcome> {
  const event = envelope.event;
  if (event.type === "unsupported") return "skipped";
  if (
    event.type === "message" &&
    (event.subtype === "message_changed" || event.subtype === "message_deleted")
  )
    return await onAmendment(c, event, bot);
  if (shouldIgnore(event, bot.userId) || event.user === undefined) return "skipped";
  const { mentionsBot, isDirect } = addressing(event, bot.userId);
  // In channels only what mentions the bot is taken; a thread's other replies are not context yet.
  if (!isDirect && !mentionsBot) return "skipped";
  const channel = await slackChannelFor(c.env, event.channel);
  if (!channel) return "skipped";
  const { agentId } = channel;
  const text = textForModel(event.text ?? "", bot.userId, bot.name);
  if (text === "") return "skipped";
  const roomId = roomIdOf(event);
  const delivery: SlackMessageDelivery = {
    kind: SLACK_MESSAGE_KIND,
    channel: event.channel,
    threadTs: replyThreadOf(event),
    roomId,
    addressed: true,
  };
  const now = Date.now();
  const { filter } = channel.config;
  return await takeMessage(
    c.env,
    {
      platform: "slack",
      turnKey: turnKey({ channel: event.channel, ts: event.ts }),
      roomId,
      chatId: event.channel,
      // The workspace plays a Discord server's part (spend and budgets per space), DMs included.
      spaceId: envelope.team_id,
      sender: {
        id: event.user,
        // One attempt: the name is not worth Slack's 3 s (the id stands in when it fails).
        name: await memberName(slackWebApi(c.env, { maxAttempts: 1 }), event.user),
        isBot: false,
      },
      text,
      isDirect,
      mentioned: mentionsBot,
      receivedAt: now,
      delivery,
      // Declined before the model and stored; Slack says nothing of an account's age.
      filter: filter ?? null,
      ...clientBudgets(channel.config),
    },
    agentId,
    {
      // One attempt: Slack wants its event acknowledged within 3 s.
      tellDmClosed: (text) =>
        slackWebApi(c.env, { maxAttempts: 1 }).postMessage({ channel: event.channel, text }),
    },
  );
}

async function onAmendment(
  c: Ctx,
  event: SlackMessageEvent,
  bot: SlackBotIdentity,
): Promise<Outcome> {
  const amendment = amendmentOf(event, bot.userId);
  if (!amendment || event.type !== "message") return "skipped";
  // In a channel only a message that mentioned the bot was a turn; others have nothing to amend.
  const before = event.previous_message?.text;
  if (event.channel_type !== "im" && before !== undefined && !before.includes(`<@${bot.userId}`))
    return "skipped";
  const channel = await slackChannelFor(c.env, event.channel);
  if (!channel) return "skipped";
  // An edit is admitted as a new message is: one the filter declines removes what was stored.
  await amendMessage(
    c.env,
    { agentId: channel.agentId, roomId: amendment.roomId, turnKey: amendment.key },
    amendment.kind === "edit"
      ? {
          kind: "edit",
          text: textForModel(amendment.text, bot.userId, bot.name),
          filter: channel.config.filter,
        }
      : { kind: "delete" },
    Date.now(),
  );
  return "amended";
}
