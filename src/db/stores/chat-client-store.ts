// Where a webhook chat client's binding lives in D1 (`POST /clients/<telegram|slack>/config`): the
// agent that answers in the bot's chats and, when not empty, the only chats (Telegram) or channels
// (Slack) it answers in. A row of the generic `client_configs` table per client, validated with the
// client's schema on the way back (a filter saved before the filter's cost bound loads with its
// patterns past the bound suspended). Discord keeps its own store: its config has more in it.
import { eq } from "drizzle-orm";
import { z } from "zod";
import { ChatFilterRules, StoredChatFilterRules } from "../../runtime/access/message-filter.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { clientConfigs } from "../schema.ts";

/** The agent that answers in every chat the bot is in (none: the bot answers nowhere). */
const DefaultAgentId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "an agent id")
  .nullable()
  .default(null);
const MAX_ALLOWED = 1_000;
/** Model tokens a day (UTC); at most ten billion. */
const DailyTokens = z.number().int().positive().max(10_000_000_000);

type FilterSchema = typeof ChatFilterRules | typeof StoredChatFilterRules;

const telegramConfig = (filter: FilterSchema) =>
  z.strictObject({
    defaultAgentId: DefaultAgentId,
    /**
     * When not empty, the bot answers only in these chats. Chat ids as strings: groups and
     * supergroups are negative (-100…), private chats are the user's id.
     */
    allowedChats: z
      .array(z.string().regex(/^-?\d{1,20}$/, "a Telegram chat id (digits, negative for groups)"))
      .max(MAX_ALLOWED)
      .default([]),
    /** Tokens each person's turns may spend a UTC day, over every chat. */
    memberDailyTokens: DailyTokens.optional(),
    /** What is declined before any model call (src/runtime/access/message-filter.ts). */
    filter: filter.optional(),
  });
export const TelegramConfig = telegramConfig(ChatFilterRules);
export type TelegramConfig = z.infer<typeof TelegramConfig>;

const slackConfig = (filter: FilterSchema) =>
  z.strictObject({
    defaultAgentId: DefaultAgentId,
    /**
     * When not empty, the bot answers only in these channels: public (C…), private (G…) and direct
     * message (D…) channel ids. Slash commands follow the same list.
     */
    allowedChannels: z
      .array(z.string().regex(/^[CGD][A-Z0-9]{2,31}$/, "a Slack channel id (C…, G… or D…)"))
      .max(MAX_ALLOWED)
      .default([]),
    /** Tokens each member's turns may spend a UTC day. */
    memberDailyTokens: DailyTokens.optional(),
    /** Tokens the workspace's turns may spend a UTC day, every member together. */
    dailyTokens: DailyTokens.optional(),
    /** What is declined before any model call (src/runtime/access/message-filter.ts). */
    filter: filter.optional(),
  });
export const SlackConfig = slackConfig(ChatFilterRules);
export type SlackConfig = z.infer<typeof SlackConfig>;

/** A webhook chat client: its row in client_configs, its schema and its allow-list's name. */
export interface ChatClient<T> {
  clientId: "telegram" | "slack";
  /** How the client is named in route summaries. */
  name: string;
  /** What its allow-list holds, in route summaries ("chats", "channels"). */
  allowed: string;
  schema: z.ZodType<T, unknown>;
  /** The schema a stored config is read with: a filter past the cost bound loads, suspended. */
  stored: z.ZodType<T, unknown>;
}

export const TELEGRAM_CLIENT: ChatClient<TelegramConfig> = {
  clientId: "telegram",
  name: "Telegram",
  allowed: "chats",
  schema: TelegramConfig,
  stored: telegramConfig(StoredChatFilterRules),
};

export const SLACK_CLIENT: ChatClient<SlackConfig> = {
  clientId: "slack",
  name: "Slack",
  allowed: "channels",
  schema: SlackConfig,
  stored: slackConfig(StoredChatFilterRules),
};

export interface ChatClientStore<T> {
  readConfig(): Promise<T>;
  writeConfig(config: T, now: number): Promise<void>;
}

export function createChatClientStore<T>(db: Db, client: ChatClient<T>): ChatClientStore<T> {
  return {
    async readConfig() {
      const row = await db
        .select()
        .from(clientConfigs)
        .where(eq(clientConfigs.clientId, client.clientId))
        .get();
      return row
        ? readJsonColumn(client.stored, row.config, `client_configs.config of ${client.clientId}`)
        : client.schema.parse({});
    },
    async writeConfig(config, now) {
      const value = JSON.stringify(config);
      await db
        .insert(clientConfigs)
        .values({ clientId: client.clientId, config: value, updatedAt: now })
        .onConflictDoUpdate({
          target: clientConfigs.clientId,
          set: { config: value, updatedAt: now },
        });
    },
  };
}
