// The bot's own role in each server: Discord gives every bot a managed role (its `tags.bot_id` is
// the bot's user id), and a message that mentions that role is addressed to the bot. Learnt from
// GUILD_CREATE (sent for every server after READY) and role events; kept in the object's storage,
// since a RESUME does not send GUILD_CREATE again.
import { z } from "zod";

const Role = z.object({
  id: z.string(),
  tags: z.object({ bot_id: z.string().optional() }).optional(),
});
const GuildCreate = z.object({ id: z.string(), roles: z.array(Role).max(1_000).default([]) });
const RoleEvent = z.object({ guild_id: z.string(), role: Role });
const GuildDelete = z.object({ id: z.string() });

export const StoredBotRoles = z.record(z.string(), z.array(z.string()).max(50));

export class BotRoles {
  private readonly byGuild: Map<string, string[]>;

  constructor(stored: Record<string, string[]> = {}) {
    this.byGuild = new Map(Object.entries(stored));
  }

  rolesIn(guildId: string): readonly string[] {
    return this.byGuild.get(guildId) ?? [];
  }

  toJSON(): Record<string, string[]> {
    return Object.fromEntries(this.byGuild);
  }

  /** Reads a dispatch; true when the roles changed (to be stored). */
  note(event: string, data: unknown, botUserId: string): boolean {
    if (event === "GUILD_CREATE") {
      const guild = GuildCreate.safeParse(data);
      if (!guild.success) return false;
      const roles = guild.data.roles.filter((role) => role.tags?.bot_id === botUserId);
      this.byGuild.set(
        guild.data.id,
        roles.map((role) => role.id),
      );
      return true;
    }
    if (event === "GUILD_ROLE_CREATE" || event === "GUILD_ROLE_UPDATE") {
      const parsed = RoleEvent.safeParse(data);
      if (!parsed.success || parsed.data.role.tags?.bot_id !== botUserId) return false;
      const current = this.byGuild.get(parsed.data.guild_id) ?? [];
      if (current.includes(parsed.data.role.id)) return false;
      this.byGuild.set(parsed.data.guild_id, [...current, parsed.data.role.id]);
      return true;
    }
    if (event === "GUILD_DELETE") {
      const parsed = GuildDelete.safeParse(data);
      return parsed.success && this.byGuild.delete(parsed.data.id);
    }
    return false;
  }
}
