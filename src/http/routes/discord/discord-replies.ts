// What every kind of Discord interaction answers with: an ephemeral message (mentions never
// ping), the bot's owners, the agent serving a channel (or why none answers there), and the per-user
// rate limit of /chat and /task. Shared by the route (discord.ts) and the commands
// (discord-commands.ts).
import type { Context } from "hono";
import { loadConfig } from "../../../config.ts";
import type { AppEnv } from "../../app-env.ts";
import { admit } from "../../../rate-limits/admission.ts";
import { personBucket } from "../../../rate-limits/buckets.ts";
import { keepAliveOf } from "../../auth.ts";
import {
  EPHEMERAL,
  ResponseType,
  threadParentOf,
  type CommandInteraction,
} from "../../../clients/discord/interaction.ts";
import { discordOwners, type DiscordOwners } from "../../../clients/discord/owners.ts";
import {
  directMessageRefusal,
  isDirectMessage,
  managersHere,
} from "../../../clients/discord/permissions.ts";
import { stores } from "../../../db/stores/index.ts";
import type { DiscordConfig } from "../../../db/stores/discord-settings-store.ts";
import { placeAgent } from "../../../clients/discord/place-settings.ts";
import { RateLimitedError } from "../../../runtime/util/errors.ts";

export type Ctx = Context<AppEnv>;

export function message(content: string, ephemeral = true, components?: unknown[]) {
  return {
    type: ResponseType.MESSAGE,
    data: {
      content,
      allowed_mentions: { parse: [] },
      ...(ephemeral ? { flags: EPHEMERAL } : {}),
      ...(components ? { components } : {}),
    },
  };
}

/** DISCORD_OWNER_IDS and the application's owners (looked up, cached per isolate). */
export function owners(c: Ctx): DiscordOwners {
  return discordOwners({
    configured: loadConfig(c.env).discordOwnerIds,
    apiBase: c.env.DISCORD_API_BASE,
    botToken: c.env.DISCORD_BOT_TOKEN,
  });
}

/** The agent serving the interaction's channel, or why it does not answer here (as a message to show). */
export async function resolveAgent(
  c: Ctx,
  interaction: CommandInteraction,
  channelId: string,
): Promise<{ agentId: string; config: DiscordConfig } | { refusal: ReturnType<typeof message> }> {
  const parentId = threadParentOf(interaction);
  const { agentId, config } = await stores(c.env).discord.channelContext(channelId, parentId);
  const listed = (id: string | null) => id !== null && config.allowedChannels.includes(id);
  if (config.allowedChannels.length > 0 && !listed(channelId) && !listed(parentId)) {
    return {
      refusal: message(
        "I'm not enabled in this channel. A server manager can add it to the bot's allowed channels.",
      ),
    };
  }
  const chosen = placeAgent(
    config,
    { guildId: interaction.guild_id ?? null, channelId, parentId },
    agentId,
  );
  if (!chosen)
    return {
      refusal: message(
        `No agent serves this channel yet. Only ${managersHere(interaction)} can pick one with \`/agent\`.`,
      ),
    };
  if (isDirectMessage(interaction)) {
    // A DM has no server permissions to lean on: the agent says whose DMs it answers (default: owners).
    const record = await stores(c.env).agents.get(chosen);
    const refusal = await directMessageRefusal(
      interaction,
      record?.character.settings.directMessages.discord ?? "owners",
      owners(c),
    );
    if (refusal) return { refusal: message(refusal) };
  }
  return { agentId: chosen, config };
}

/** Draws from a Discord user's bucket, the one their Gateway messages draw from too (429 if empty). */
export function admitDiscordUser(c: Ctx, discordUserId: string): Promise<void> {
  const person = {
    kind: "member",
    userId: `discord:${discordUserId}`,
    platformName: "Discord",
  } as const;
  return admit(c.env, [personBucket(person, loadConfig(c.env).rateLimits.perUser)], keepAliveOf(c));
}

/** The per-user bucket that /chat and /task draw from; a private "try again" when it is empty. */
export async function userRateRefusal(
  c: Ctx,
  discordUserId: string,
): Promise<ReturnType<typeof message> | null> {
  try {
    await admitDiscordUser(c, discordUserId);
    return null;
  } catch (error) {
    if (error instanceof RateLimitedError)
      return message(
        `You're sending requests faster than I can take them; try again in ${error.retryAfterSeconds} s.`,
      );
    throw error;
  }
}
