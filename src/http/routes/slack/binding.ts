// Which agent answers in a Slack channel: the default agent of `POST /clients/slack/config`, when
// the channel is allowed (every channel while allowedChannels is empty). Events, interactions and
// commands all ask here, so a channel left off the list is not answered by any of them.
import type { Env } from "../../../env.ts";
import { stores } from "../../../db/stores/index.ts";
import type { SlackConfig } from "../../../db/stores/chat-client-store.ts";

export async function slackAgentFor(env: Env, channel: string): Promise<string | null> {
  return (await slackChannelFor(env, channel))?.agentId ?? null;
}

/** The channel's agent with the client's settings it is answered under (the filter). */
export async function slackChannelFor(
  env: Env,
  channel: string,
): Promise<{ agentId: string; config: SlackConfig } | null> {
  const config = await stores(env).slack.readConfig();
  if (!config.defaultAgentId) return null;
  if (config.allowedChannels.length > 0 && !config.allowedChannels.includes(channel)) return null;
  return { agentId: config.defaultAgentId, config };
}

/** The agent bound to Slack at all, whatever the channel (for /forget, which is about a person). */
export async function slackDefaultAgent(env: Env): Promise<string | null> {
  return (await stores(env).slack.readConfig()).defaultAgentId;
}
