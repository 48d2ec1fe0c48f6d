// Where the Telegram client's configuration lives in D1 (`POST /clients/telegram/config`): the
// agent that answers in the bot's chats and, when not empty, the only chats it answers in. A row
// of the generic `client_configs` table, validated with its schema on the way back.
import { eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { clientConfigs } from "../schema.ts";

const CLIENT_ID = "telegram";

export const TelegramConfig = z.strictObject({
  /** The agent that answers in every chat the bot is in (none: the bot answers nowhere). */
  defaultAgentId: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "an agent id")
    .nullable()
    .default(null),
  /**
   * When not empty, the bot answers only in these chats. Chat ids as strings: groups and
   * supergroups are negative (-100…), private chats are the user's id.
   */
  allowedChats: z
    .array(z.string().regex(/^-?\d{1,20}$/, "a Telegram chat id (digits, negative for groups)"))
    .max(1_000)
    .default([]),
});
export type TelegramConfig = z.infer<typeof TelegramConfig>;

export interface TelegramSettingsStore {
  readConfig(): Promise<TelegramConfig>;
  writeConfig(config: TelegramConfig, now: number): Promise<void>;
}

export function createTelegramSettingsStore(db: Db): TelegramSettingsStore {
  return {
    async readConfig() {
      const row = await db
        .select()
        .from(clientConfigs)
        .where(eq(clientConfigs.clientId, CLIENT_ID))
        .get();
      return row
        ? readJsonColumn(TelegramConfig, row.config, "client_configs.config of telegram")
        : TelegramConfig.parse({});
    },
    async writeConfig(config, now) {
      const value = JSON.stringify(config);
      await db
        .insert(clientConfigs)
        .values({ clientId: CLIENT_ID, config: value, updatedAt: now })
        .onConflictDoUpdate({
          target: clientConfigs.clientId,
          set: { config: value, updatedAt: now },
        });
    },
  };
}
