// Where Discord settings live in D1: the agent chosen for each channel (`/agent`) and the client
// configuration (`POST /clients/discord/config`: default agent, allowed channels). The config
// column is validated with its schema on the way back, like every JSON column; a filter saved
// before the filter's cost bound loads with its patterns past the bound suspended.
import { eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import {
  MessageFilterRules,
  StoredMessageFilterRules,
} from "../../runtime/access/message-filter.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { clientConfigs, discordChannels } from "../schema.ts";

const AgentId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "an agent id");
const Snowflake = (what: string) => z.string().regex(/^\d{1,20}$/, `a Discord ${what} id`);
/** A tool's name (`remember`, `github__list_issues`), or `<server>__*` for all of a server's. */
const ToolPattern = z
  .string()
  .regex(
    /^(?:[A-Za-z0-9_.-]{1,128}|[A-Za-z0-9_-]{1,64}__\*)$/,
    "a tool name, or <server>__* for all of an MCP server's tools",
  );
const MAX_PLACES = 1_000;
const placeCount = (places: Record<string, unknown>) => Object.keys(places).length <= MAX_PLACES;

/** What a server or a channel may set; the most specific place wins, key by key. */
const PlaceSettingsShape = {
  /** Over the character's respond mode: "never" answers nobody there, not even a mention. */
  respond: z
    .enum(["mentions", "always", "never"], { error: 'expected "mentions", "always" or "never"' })
    .optional(),
  /** When set, only these tools are offered there. */
  tools: z.array(ToolPattern).max(200).optional(),
  /** A mention in a channel opens a thread named from the message; the conversation goes on there. */
  autoThread: z.boolean().optional(),
};
/** Model tokens a day (UTC); at most ten billion. */
const DailyTokens = z.number().int().positive().max(10_000_000_000);

/**
 * Unknown keys refused, and a `filter` where Discord has none (the top level, a channel) refused
 * saying where it goes: Telegram's and Slack's filter is top-level, so one copied from there lands
 * here, and zod's bare `Unrecognized key: "filter"` would not say that Discord's is per server.
 */
const filterIsPerServer = (notHere: string) => ({
  error: (issue: z.core.$ZodRawIssue) => {
    if (issue.code !== "unrecognized_keys") return undefined;
    const where = `Discord's filter is per server, ${notHere}: set it at guilds.<server id>.filter`;
    const keys = issue.keys.map((key) => (key === "filter" ? `"filter" (${where})` : `"${key}"`));
    return `Unrecognized key${keys.length > 1 ? "s" : ""}: ${keys.join(", ")}`;
  },
});
export const ChannelSettings = z.strictObject(
  PlaceSettingsShape,
  filterIsPerServer("not per channel"),
);
export type ChannelSettings = z.infer<typeof ChannelSettings>;
/** A server's settings, with the filter checked as when saved or as when read back. */
function guildSettings(filter: typeof MessageFilterRules | typeof StoredMessageFilterRules) {
  return z.strictObject({
    ...PlaceSettingsShape,
    /** The server's agent, for its channels that have not chosen one with /agent. */
    agentId: AgentId.optional(),
    /** A tool is offered only to members holding one of its roles (role ids are the server's). */
    toolRoles: z
      .record(ToolPattern, z.array(Snowflake("role")).min(1).max(50))
      .refine((roles) => Object.keys(roles).length <= 200, "at most 200 tools")
      .optional(),
    /** Tokens the server's turns may spend a UTC day, every agent and member together. */
    dailyTokens: DailyTokens.optional(),
    /** Tokens each member's turns in the server may spend a UTC day. */
    memberDailyTokens: DailyTokens.optional(),
    /** What is declined before any model call (src/runtime/access/message-filter.ts). */
    filter: filter.optional(),
  });
}
export const GuildSettings = guildSettings(MessageFilterRules);
export type GuildSettings = z.infer<typeof GuildSettings>;

function discordConfig(filter: typeof MessageFilterRules | typeof StoredMessageFilterRules) {
  return z.strictObject(
    {
      /** The agent for channels that have not chosen one with /agent. */
      defaultAgentId: AgentId.nullable().default(null),
      /** When not empty, the bot answers only in these channels (DMs: by their channel id). */
      allowedChannels: z.array(Snowflake("channel")).max(1_000).default([]),
      /** Per server (guild id): its agent, respond policy, tools and role-gated tools. */
      guilds: z
        .record(Snowflake("server"), guildSettings(filter))
        .refine(placeCount, `at most ${MAX_PLACES} servers`)
        .default({}),
      /** Per channel or thread (channel id): respond policy and tools, over its server's. */
      channels: z
        .record(Snowflake("channel"), ChannelSettings)
        .refine(placeCount, `at most ${MAX_PLACES} channels`)
        .default({}),
    },
    filterIsPerServer("not top-level"),
  );
}

/**
 * The Discord client's configuration (`POST /clients/discord/config`): the default agent, the
 * channels the bot may answer in, and settings per server and per channel.
 */
export const DiscordConfig = discordConfig(MessageFilterRules);
export type DiscordConfig = z.infer<typeof DiscordConfig>;
/** The configuration as read back: a filter past today's cost bound loads, suspended in part. */
export const StoredDiscordConfig = discordConfig(StoredMessageFilterRules);

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
  /**
   * The channel's own agent (a thread without one: its parent's) and the client config, in one
   * round trip.
   */
  channelContext(
    channelId: string,
    parentId?: string | null,
  ): Promise<{ agentId: string | null; config: DiscordConfig }>;
  setChannelAgent(entry: ChannelChoice): Promise<void>;
}

export function createDiscordSettingsStore(db: Db): DiscordSettingsStore {
  const parseConfig = (row: { config: string } | undefined): DiscordConfig =>
    row
      ? readJsonColumn(StoredDiscordConfig, row.config, "client_configs.config of discord")
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
    async channelContext(channelId, parentId) {
      const ids = parentId ? [channelId, parentId] : [channelId];
      const [channels, config] = await db.batch([
        db
          .select({ channelId: discordChannels.channelId, agentId: discordChannels.agentId })
          .from(discordChannels)
          .where(inArray(discordChannels.channelId, ids)),
        db.select().from(clientConfigs).where(eq(clientConfigs.clientId, "discord")),
      ]);
      const agentOf = (id: string) => channels.find((row) => row.channelId === id)?.agentId;
      return {
        agentId: agentOf(channelId) ?? (parentId ? agentOf(parentId) : undefined) ?? null,
        config: parseConfig(config[0]),
      };
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
