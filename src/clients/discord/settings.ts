// Where Discord settings live in D1: the agent chosen for each channel (`/agent`) and the client
// configuration (`POST /clients/discord/config`: default agent, allowed channels).
import { eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../memory/db.ts";
import { clientConfigs, discordChannels } from "../../memory/schema.ts";

export const DiscordConfig = z.strictObject({
  /** The agent for channels that have not chosen one with /agent. */
  defaultAgentId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "an agent id").nullable().default(null),
  /** When not empty, the bot answers only in these channels (DMs included by their channel id). */
  allowedChannels: z.array(z.string().regex(/^\d{1,20}$/, "a Discord channel id")).max(1_000).default([]),
});
export type DiscordConfig = z.infer<typeof DiscordConfig>;

export async function readDiscordConfig(db: Db): Promise<DiscordConfig> {
  const row = await db.select().from(clientConfigs).where(eq(clientConfigs.clientId, "discord")).get();
  return row ? DiscordConfig.parse(JSON.parse(row.config)) : DiscordConfig.parse({});
}

export async function writeDiscordConfig(db: Db, config: DiscordConfig, now: number): Promise<void> {
  const value = JSON.stringify(config);
  await db
    .insert(clientConfigs)
    .values({ clientId: "discord", config: value, updatedAt: now })
    .onConflictDoUpdate({ target: clientConfigs.clientId, set: { config: value, updatedAt: now } });
}

/** The channel's own agent and the client config, in one round trip. */
export async function channelContext(db: Db, channelId: string): Promise<{ agentId: string | null; config: DiscordConfig }> {
  const [channel, config] = await db.batch([
    db.select({ agentId: discordChannels.agentId }).from(discordChannels).where(eq(discordChannels.channelId, channelId)),
    db.select().from(clientConfigs).where(eq(clientConfigs.clientId, "discord")),
  ]);
  return {
    agentId: channel[0]?.agentId ?? null,
    config: config[0] ? DiscordConfig.parse(JSON.parse(config[0].config)) : DiscordConfig.parse({}),
  };
}

export async function setChannelAgent(db: Db, entry: { channelId: string; guildId: string | null; agentId: string; userId: string; now: number }): Promise<void> {
  await db
    .insert(discordChannels)
    .values({ channelId: entry.channelId, guildId: entry.guildId, agentId: entry.agentId, updatedBy: entry.userId, updatedAt: entry.now })
    .onConflictDoUpdate({
      target: discordChannels.channelId,
      set: { agentId: entry.agentId, guildId: entry.guildId, updatedBy: entry.userId, updatedAt: sql`excluded.updated_at` },
    });
}
