// Where Discord settings live in D1: the agent chosen for each channel (`/agent`) and the client
// configuration (`POST /clients/discord/config`: default agent, allowed channels). The config
// column is validated with its schema on the way back, like every JSON column.
import { eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { clientConfigs, discordChannels } from "../schema.ts";

/**
 * The Discord client's configuration (`POST /clients/discord/config`): the default agent and the
 * channels the bot may answer in.
 */
export const DiscordConfig = z.strictObject({
  /** The agent for channels that have not chosen one with /agent. */
  defaultAgentId: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "an agent id")
    .nullable()
    .default(null),
  /** When not empty, the bot answers only in these channels (DMs included by their channel id). */
  allowedChannels: z
    .array(z.string().regex(/^\d{1,20}$/, "a Discord channel id"))
    .max(1_000)
    .default([]),
});
export type DiscordConfig = z.infer<typeof DiscordConfig>;

export interface ChannelChoice {
  channelId: string;
  guildId: string | null;
  agentId: string;
  userId: string;
  now: number;
}

export interface DiscordSettingsStore {
  readConfig(): Promise<DiscordConfig>;
  writeConfig(config: DiscordConfig, now: number): Promise<void>;
  /** The channel's own agent and the client config, in one round trip. */
  channelContext(channelId: string): Promise<{ agentId: string | null; config: DiscordConfig }>;
  setChannelAgent(entry: ChannelChoice): Promise<void>;
}

export function createDiscordSettingsStore(db: Db): DiscordSettingsStore {
  const parseConfig = (row: { config: string } | undefined): DiscordConfig =>
    row
      ? readJsonColumn(DiscordConfig, row.config, "client_configs.config of discord")
      : DiscordConfig.parse({});
  return {
    async readConfig() {
      return parseConfig(
        await db.select().from(clientConfigs).where(eq(clientConfigs.clientId, "discord")).get(),
      );
    },
    async writeConfig(config, now) {
      const value = JSON.stringify(config);
      await db
        .insert(clientConfigs)
        .values({ clientId: "discord", config: value, updatedAt: now })
        .onConflictDoUpdate({
          target: clientConfigs.clientId,
          set: { config: value, updatedAt: now },
        });
    },
    async channelContext(channelId) {
      const [channel, config] = await db.batch([
        db
          .select({ agentId: discordChannels.agentId })
          .from(discordChannels)
          .where(eq(discordChannels.channelId, channelId)),
        db.select().from(clientConfigs).where(eq(clientConfigs.clientId, "discord")),
      ]);
      return { agentId: channel[0]?.agentId ?? null, config: parseConfig(config[0]) };
    },
    async setChannelAgent(entry) {
      await db
        .insert(discordChannels)
        .values({
          channelId: entry.channelId,
          guildId: entry.guildId,
          agentId: entry.agentId,
          updatedBy: entry.userId,
          updatedAt: entry.now,
        })
        .onConflictDoUpdate({
          target: discordChannels.channelId,
          set: {
            agentId: entry.agentId,
            guildId: entry.guildId,
            updatedBy: entry.userId,
            updatedAt: sql`excluded.updated_at`,
          },
        });
    },
  };
}
