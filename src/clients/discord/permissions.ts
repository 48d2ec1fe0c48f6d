// Who is asking and what they may do: every Discord permission check in one place. In a server,
// managing (choosing the agent, consent links, the agent list) needs Manage Server or
// Administrator, which Discord puts in the member's `permissions`. A DM (no `guild_id`) carries no
// permissions: only the bot's owners manage there, and the agent's `directMessages` decides whom it answers.
import { MANAGE_GUILD } from "./commands.ts";
import { invoker, type CommandInteraction, type ComponentInteraction } from "./interaction.ts";
import type { DiscordOwners } from "./owners.ts";
import type { DirectMessagePolicy } from "../../runtime/character.ts";
import type { MemberPrincipal } from "../../runtime/access/principal.ts";

/** Discord's ADMINISTRATOR permission bit: implies every other permission. */
export const ADMINISTRATOR = 1n << 3n;

type DiscordInteraction = CommandInteraction | ComponentInteraction;

/** DMs with the bot and group DMs: anything outside a server. */
export function isDirectMessage(interaction: DiscordInteraction): boolean {
  return interaction.guild_id === undefined;
}

/** May this person choose agents and see or start consent links here? */
export async function isManager(
  interaction: DiscordInteraction,
  owners: DiscordOwners,
): Promise<boolean> {
  if (!isDirectMessage(interaction)) {
    // No permissions sent means none granted: fail closed.
    const permissions = interaction.member?.permissions;
    return (
      permissions !== undefined && (BigInt(permissions) & (MANAGE_GUILD | ADMINISTRATOR)) !== 0n
    );
  }
  const user = invoker(interaction);
  return user !== undefined && (await owners.isOwner(user.id));
}

/**
 * The person behind an interaction as a principal (src/runtime/access/): a manager here (server
 * permissions), or one of the bot's owners. In a DM the full owner list is asked (the DM policy
 * asked it already, so it is cached); in a server only `DISCORD_OWNER_IDS` count, so a /chat's
 * acknowledgement never waits on Discord's application endpoint (managers manage there anyway).
 */
export async function memberPrincipal(
  interaction: DiscordInteraction,
  owners: DiscordOwners,
  configuredOwnerIds: readonly string[],
): Promise<MemberPrincipal> {
  const user = invoker(interaction);
  const direct = isDirectMessage(interaction);
  const manager = !direct && (await isManager(interaction, owners));
  const owner =
    user !== undefined &&
    (direct ? await owners.isOwner(user.id) : configuredOwnerIds.includes(user.id));
  return {
    kind: "member",
    platform: "discord",
    userId: `discord:${user?.id ?? "unknown"}`,
    manager,
    owner,
    guildId: interaction.guild_id ?? null,
  };
}

/** Who manages where this interaction came from, for refusals ("Only … can …"). */
export function managersHere(interaction: DiscordInteraction): string {
  return isDirectMessage(interaction) ? "the bot's owners" : "server managers (Manage Server)";
}

/** Why the agent does not answer this person here, or null when it does (always, in a server). */
export async function directMessageRefusal(
  interaction: DiscordInteraction,
  policy: DirectMessagePolicy,
  owners: DiscordOwners,
): Promise<string | null> {
  if (!isDirectMessage(interaction) || policy === "everyone") return null;
  if (policy === "off")
    return "This agent doesn't answer direct messages. Talk to it in a server channel it serves.";
  const user = invoker(interaction);
  if (user && (await owners.isOwner(user.id))) return null;
  return "This agent answers direct messages only from the bot's owners. Talk to it in a server channel it serves.";
}
