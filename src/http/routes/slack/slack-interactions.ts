// Slack's interactivity, `POST /slack/interactions` (a form with one `payload` field, signed like
// events). Approve / Deny on a paused turn's prompt goes to the room its button names, which
// decides whether the click counts (only the person whose message started the turn); the prompt is
// then updated with chat.update to say who answered. "Forget me" / "Cancel" answer a /forget:
// only the person who asked can confirm, and only their own memories go. Slack ignores this
// route's body; whoever clicked is told with an ephemeral message, after the acknowledgement.
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import { answerApprovalPress } from "../../../clients/chat/approval-flow.ts";
import { approvalClickOf, approvalOutcomeBlocks } from "../../../clients/slack/blocks.ts";
import type { BlockActionsPayload } from "../../../clients/slack/events.ts";
import { parseInteractionForm } from "../../../clients/slack/events.ts";
import { parseForgetAction } from "../../../clients/slack/forget-prompt.ts";
import { postToResponseUrl } from "../../../clients/slack/response-url.ts";
import {
  SLACK_MESSAGE_KIND,
  type SlackMessageDelivery,
  slackWebApi,
} from "../../../clients/slack/slack-surface.ts";
import { loadConfig } from "../../../config.ts";
import { configuredOwners } from "../../../clients/chat/intake.ts";
import { agentData } from "../../../db/stores/index.ts";
import { errorField, log } from "../../../log.ts";
import { deleteMemories } from "../../../db/memory/memory-repo.ts";
import { forgetRoomHistory } from "../../../objects/conversation/room-client.ts";
import { ValidationError } from "../../../runtime/util/errors.ts";
import { slackDefaultAgent } from "./binding.ts";
import { botOfWorkspace, readSignedSlackBody } from "./signed-request.ts";
import { signedBody } from "../../schemas.ts";
import { documentSlackRoute } from "./slack.ts";

type Ctx = Context<AppEnv>;
type Outcome = "answered" | "not_yours" | "gone" | "forgotten" | "cancelled" | "skipped";

export function slackInteractionRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  documentSlackRoute(app, {
    path: "/slack/interactions",
    summary: "Slack interactivity: button clicks (authenticated by Slack's request signature)",
    body: signedBody(
      "application/x-www-form-urlencoded",
      z.object({
        payload: z.string().openapi({ description: "A block_actions payload as JSON" }),
      }),
    ),
    ok: "The click acknowledged (answered, refused or not ours)",
  });

  app.post("/slack/interactions", async (c) => {
    const { raw, token } = await readSignedSlackBody(c);
    const parsed = parseInteractionForm(raw);
    if (!parsed.ok) throw new ValidationError(`invalid Slack interaction: ${parsed.error}`);
    const payload = parsed.value;
    if (payload.type === "unsupported") return c.json({ ok: true, outcome: "skipped" }, 200);
    // Slack names the workspace in `team` (null in an org-wide app's click: then `user.team_id`).
    // A click that names neither cannot pass the one-workspace rule, so it is refused, not served.
    const teamId = payload.team?.id ?? payload.user.team_id;
    if (!teamId)
      throw new ValidationError(
        "invalid Slack interaction: payload.team.id: required (the workspace)",
      );
    const bot = await botOfWorkspace(c, token, teamId);
    if (!bot) return c.json({ ok: true, outcome: "skipped" }, 200);
    const outcome = await onClick(c, payload);
    return c.json({ ok: true, outcome }, 200);
  });
  return app;
}

async function onClick(c: Ctx, payload: BlockActionsPayload): Promise<Outcome> {
  const forget = parseForgetAction(payload.actions[0]?.action_id ?? "");
  if (forget) return await onForget(c, payload, forget);
  const click = approvalClickOf(payload);
  const tell = (text: string) => afterAck(c, () => ephemeral(c, payload, text));
  const invalid = () => {
    tell("That button is no longer valid.");
    return "skipped" as const;
  };
  // Tasks do not post Slack prompts (yet): a `tap:` click (no room) is not ours to answer.
  if (!click || click.roomId === null) return invalid();
  const via: SlackMessageDelivery = {
    kind: SLACK_MESSAGE_KIND,
    channel: click.channelId,
    threadTs: payload.message?.thread_ts ?? payload.container.thread_ts,
    roomId: click.roomId,
    addressed: true,
  };
  const button = {
    target: click.target,
    approve: click.verdict === "approve",
    approvalId: click.approvalId,
    agentId: click.agentId,
  };
  // Not the requester: a workspace admin or owner, or one of SLACK_OWNER_IDS, may answer for them,
  // looked up only then, so the requester's own click costs no Web API call.
  const result = await answerApprovalPress(
    c.env,
    { button, roomId: click.roomId, from: { userId: click.userId, userName: click.userName, via } },
    { tasks: false, onBehalf: () => answersForOthers(c, click.userId) },
  );
  switch (result.status) {
    case "invalid":
      return invalid();
    case "not_yours":
      tell("Only the person who asked, or a workspace admin, can approve or deny this.");
      return "not_yours";
    case "gone":
      tell("This request is no longer waiting for an answer.");
      return "gone";
    case "resolved": {
      const ts = click.messageTs;
      if (ts) {
        const outcome = approvalOutcomeBlocks(result.tool, result.decision, click.userName);
        afterAck(c, () => slackWebApi(c.env).update({ channel: click.channelId, ts, ...outcome }));
      }
      return "answered";
    }
  }
}

/**
 * A click on /forget's buttons. The prompt was shown to its asker only, but the action id is the
 * authority: a click by anyone else deletes nothing. Memories are deleted as the asker's own
 * (`slack:<id>`), like Discord's /forget.
 */
async function onForget(
  c: Ctx,
  payload: BlockActionsPayload,
  click: { confirmed: boolean; userId: string; agentId: string },
): Promise<Outcome> {
  const slack = loadConfig(c.env).slack!;
  const answer = (text: string) =>
    payload.response_url
      ? afterAck(c, () =>
          postToResponseUrl(payload.response_url!, slack.apiBase, { text, replace_original: true }),
        )
      : undefined;
  if (payload.user.id !== click.userId) {
    afterAck(c, () => ephemeral(c, payload, "Only the person who asked can answer this."));
    return "not_yours";
  }
  if (click.agentId !== (await slackDefaultAgent(c.env))) {
    answer("That button is no longer valid.");
    return "skipped";
  }
  if (!click.confirmed) {
    answer("Nothing was deleted.");
    return "cancelled";
  }
  const { deleted, rooms } = await deleteMemories((await agentData(c.env, click.agentId)).db, {
    agentId: click.agentId,
    userId: `slack:${click.userId}`,
  });
  c.executionCtx.waitUntil(forgetRoomHistory(c.env, click.agentId, rooms));
  answer(`Done: I forgot ${deleted} ${deleted === 1 ? "memory" : "memories"} about you.`);
  return "forgotten";
}

async function ephemeral(c: Ctx, payload: BlockActionsPayload, text: string): Promise<void> {
  const channel = payload.channel?.id ?? payload.container.channel_id;
  if (!channel) return;
  const thread = payload.message?.thread_ts ?? payload.container.thread_ts;
  await slackWebApi(c.env).postEphemeral({
    channel,
    user: payload.user.id,
    text,
    ...(thread ? { thread_ts: thread } : {}),
  });
}

/** Slack's calls after the acknowledgement: a slow Web API must not hold the 3 s answer. */
function afterAck(c: Ctx, work: () => Promise<unknown>): void {
  c.executionCtx.waitUntil(
    work().catch((error: unknown) =>
      log.warn("slack_interaction_followup_failed", { error: errorField(error) }),
    ),
  );
}

/** A workspace admin or owner (users.info, one attempt), or one of the bot's SLACK_OWNER_IDS. */
async function answersForOthers(c: Ctx, userId: string): Promise<boolean> {
  const id = userId.replace(/^slack:/, "");
  if (configuredOwners(loadConfig(c.env), "slack").includes(id)) return true;
  try {
    const user = await slackWebApi(c.env, { maxAttempts: 1 }).usersInfo(id);
    return user.is_admin === true || user.is_owner === true;
  } catch (error) {
    log.warn("slack_admin_lookup_failed", { error: errorField(error) });
    return false;
  }
}
