// Slack's slash commands, `POST /slack/commands` (a signed form; Slack waits 3 s for the answer,
// shown only to whoever typed the command). `/ask <question>`: in a channel the bot posts the
// question ("Ann asked: …") and answers in that message's thread, a room like a mention's; in a DM
// with the bot it answers in the DM, its one room. `/forget`: a confirmation with "Forget me" and
// "Cancel" (slack-interactions.ts deletes, for the asker only). Both go through the intake's
// member principal and the channel binding; one Web API attempt, so the 3 s hold.
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import { clientBudgets, type IntakeResult, takeMessage } from "../../../clients/chat/intake.ts";
import type { SlackBotIdentity } from "../../../clients/slack/bot-identity.ts";
import { parseSlashCommand, type SlashCommand } from "../../../clients/slack/events.ts";
import { forgetPrompt } from "../../../clients/slack/forget-prompt.ts";
import { textForModel } from "../../../clients/slack/message-text.ts";
import {
  SLACK_MESSAGE_KIND,
  type SlackMessageDelivery,
  slackWebApi,
} from "../../../clients/slack/slack-surface.ts";
import { SlackApiError } from "../../../clients/slack/web-api.ts";
import { errorField, log } from "../../../log.ts";
import { ValidationError } from "../../../runtime/util/errors.ts";
import { filterVerdict } from "../../../runtime/access/message-filter.ts";
import { slackChannelFor, slackDefaultAgent } from "./binding.ts";
import { botOfWorkspace, readSignedSlackBody } from "./signed-request.ts";
import { signedBody } from "../../schemas.ts";
import { documentSlackRoute } from "./slack.ts";

type Ctx = Context<AppEnv>;

const REFUSALS: Record<Exclude<IntakeResult, "queued" | "duplicate">, string> = {
  dm_refused: "I don't take direct messages from you here. Ask me in a channel I'm in.",
  rate_limited: "You're asking faster than I can answer: try again in a minute.",
};

export function slackCommandRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  documentSlackRoute(app, {
    path: "/slack/commands",
    summary: "Slack slash commands /ask and /forget (authenticated by Slack's request signature)",
    body: signedBody(
      "application/x-www-form-urlencoded",
      z.record(z.string(), z.string()).openapi({ description: "Slack's slash command fields" }),
    ),
    ok: "An ephemeral answer for whoever typed the command",
  });

  app.post("/slack/commands", async (c) => {
    const { raw, token } = await readSignedSlackBody(c);
    const parsed = parseSlashCommand(raw);
    if (!parsed.ok) throw new ValidationError(`invalid Slack command: ${parsed.error}`);
    const command = parsed.value;
    const bot = await botOfWorkspace(c, token, command.team_id);
    if (!bot) return say(c, "This app answers in one workspace only.");
    switch (command.command.toLowerCase()) {
      case "/ask":
        return await ask(c, command, bot);
      case "/forget": {
        const agentId = await slackDefaultAgent(c.env);
        if (!agentId) return say(c, "No agent answers on Slack yet.");
        return c.json(forgetPrompt(command.user_id, agentId), 200);
      }
      default:
        return say(c, `I don't know ${command.command}: try /ask or /forget.`);
    }
  });
  return app;
}

async function ask(c: Ctx, command: SlashCommand, bot: SlackBotIdentity): Promise<Response> {
  const question = textForModel(command.text, bot.userId, bot.name);
  if (question === "") return say(c, "Ask me something: /ask what is on the roadmap?");
  const channel = await slackChannelFor(c.env, command.channel_id);
  if (!channel) return say(c, "I don't answer in this channel.");
  const { agentId } = channel;
  // The filter before the model, read before the bot posts the question as its own message.
  const { filter } = channel.config;
  if (filter && filterVerdict(filter, { text: question, accountCreatedAt: null, now: Date.now() }))
    return say(c, "This workspace's filter declined your question; I won't post or answer it.");
  const api = slackWebApi(c.env, { maxAttempts: 1 });
  const name = command.user_name ?? command.user_id;
  const isDirect = command.channel_id.startsWith("D");
  // A DM is one room and the answer goes there; in a channel, the question is posted so the answer
  // has a thread to go into, and that thread is the room.
  let threadTs: string | undefined;
  if (!isDirect) {
    try {
      threadTs = (
        await api.postMessage({ channel: command.channel_id, text: `${name} asked: ${question}` })
      ).ts;
    } catch (error) {
      log.warn("slack_ask_post_failed", { error: errorField(error) });
      const absent =
        error instanceof SlackApiError &&
        (error.error === "not_in_channel" || error.error === "channel_not_found");
      return say(
        c,
        absent
          ? `Invite me to this channel first (/invite @${bot.name}).`
          : "Slack did not take the question: try again.",
      );
    }
  }
  const roomId = threadTs
    ? `slack:${command.channel_id}:${threadTs}`
    : `slack:${command.channel_id}`;
  const delivery: SlackMessageDelivery = {
    kind: SLACK_MESSAGE_KIND,
    channel: command.channel_id,
    ...(threadTs ? { threadTs } : {}),
    roomId,
    addressed: true,
  };
  const result = await takeMessage(
    c.env,
    {
      platform: "slack",
      // The posted question is the message; in a DM the command itself (Slack sends it once).
      turnKey: threadTs
        ? `slack-msg:${command.channel_id}:${threadTs}`
        : `slack-cmd:${command.trigger_id}`,
      roomId,
      chatId: command.channel_id,
      spaceId: command.team_id,
      ...clientBudgets(channel.config),
      // Read once above so nothing is posted; admission reads it again with the turn.
      filter: filter ?? null,
      sender: { id: command.user_id, name, isBot: false },
      text: question,
      isDirect,
      mentioned: true,
      receivedAt: Date.now(),
      delivery,
    },
    agentId,
  );
  if (result === "queued" || result === "duplicate")
    return say(c, isDirect ? "Asked: I'm on it." : "Asked: I'll answer in the thread.");
  return say(c, REFUSALS[result]);
}

/** An answer only the person who typed the command sees. */
function say(c: Ctx, text: string): Response {
  return c.json({ response_type: "ephemeral", text }, 200);
}
