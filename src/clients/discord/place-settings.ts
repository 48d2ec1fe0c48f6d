// Settings per Discord server and channel (`POST /clients/discord/config` `guilds` and `channels`),
// resolved for one message: the agent (a channel's `/agent` choice, a thread's parent's, else its
// server's agent, else the default), the turn's place policy (respond mode and tools: the
// channel's setting, a thread's parent's, else its server's; role-gated tools withheld from a
// member without one of their roles) and whether a mention opens a thread (autoThread). Pure: the
// caller reads the config and the channel's agent (one D1 batch) and knows the member's roles.
import type { DiscordConfig } from "../../db/stores/discord-settings-store.ts";
import type { PlacePolicy } from "../../runtime/access/place-policy.ts";

export interface DiscordPlace {
  /** null in a DM. */
  guildId: string | null;
  channelId: string;
  /** A thread's parent channel: its settings apply where the thread sets none. */
  parentId?: string | null;
}

/** The agent serving a channel: its `/agent` choice, its server's agent, the default agent. */
export function placeAgent(
  config: DiscordConfig,
  place: DiscordPlace,
  channelAgent: string | null,
): string | null {
  return (
    channelAgent ??
    (place.guildId ? config.guilds[place.guildId]?.agentId : undefined) ??
    config.defaultAgentId
  );
}

/**
 * Whether a mention there opens a thread (`autoThread`): the channel's setting, a thread's
 * parent's, else its server's; off when none is set and in DMs.
 */
export function placeAutoThread(config: DiscordConfig, place: DiscordPlace): boolean {
  if (!place.guildId) return false;
  const parent = place.parentId ? config.channels[place.parentId] : undefined;
  return (
    config.channels[place.channelId]?.autoThread ??
    parent?.autoThread ??
    config.guilds[place.guildId]?.autoThread ??
    false
  );
}

/**
 * What the place says about a turn of this member: undefined when nothing is set, so turns in
 * unconfigured places carry nothing extra. In a DM, tools gated by roles in any server are for
 * the bot's owners only (a DM has no roles).
 */
export function placePolicy(
  config: DiscordConfig,
  place: DiscordPlace,
  member: { roles: readonly string[]; owner: boolean },
): PlacePolicy | undefined {
  const guild = place.guildId ? config.guilds[place.guildId] : undefined;
  const channel = config.channels[place.channelId];
  const parent = place.parentId ? config.channels[place.parentId] : undefined;
  const respond = channel?.respond ?? parent?.respond ?? guild?.respond;
  const tools = channel?.tools ?? parent?.tools ?? guild?.tools;
  const withheld = new Set<string>();
  if (guild?.toolRoles) {
    for (const [tool, roles] of Object.entries(guild.toolRoles))
      if (!roles.some((role) => member.roles.includes(role))) withheld.add(tool);
  } else if (!place.guildId && !member.owner) {
    for (const settings of Object.values(config.guilds))
      for (const tool of Object.keys(settings.toolRoles ?? {})) withheld.add(tool);
  }
  const budgets = {
    ...(guild?.memberDailyTokens ? { member: guild.memberDailyTokens } : {}),
    ...(guild?.dailyTokens ? { server: guild.dailyTokens } : {}),
  };
  const policy: PlacePolicy = {
    ...(respond ? { respond } : {}),
    ...(Object.keys(budgets).length > 0 ? { budgets } : {}),
    ...(tools ? { tools: [...tools] } : {}),
    ...(withheld.size > 0 ? { withheldTools: [...withheld].sort() } : {}),
  };
  return Object.keys(policy).length > 0 ? policy : undefined;
}
