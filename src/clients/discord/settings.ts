// The Discord client's configuration (`POST /clients/discord/config`): the default agent and the
// channels the bot may answer in. Stored by src/db/discord-settings-store.ts.
import { z } from "zod";

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
