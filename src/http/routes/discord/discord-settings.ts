// `/settings` (Manage Server): shows this server's and channel's effective settings, and changes
// the common ones (respond mode, autoThread, the server's daily token budgets) with a
// read-modify-write of the client config, validated by the same schema as
// `POST /clients/discord/config`: what the schema refuses is refused here, naming why. Discord
// hides the command from members without Manage Server; the member's permissions are checked
// again here (a principal's `manager`), as for /agent. Answers are ephemeral.
import { loadConfig } from "../../../config.ts";
import {
  subcommand,
  threadParentOf,
  type CommandInteraction,
} from "../../../clients/discord/interaction.ts";
import { managersHere, memberPrincipal } from "../../../clients/discord/permissions.ts";
import { placeAgent } from "../../../clients/discord/place-settings.ts";
import {
  applySettingsChange,
  changedText,
  describeSettings,
  readSettingsChange,
} from "../../../clients/discord/settings-command.ts";
import { StoredDiscordConfig } from "../../../db/stores/discord-settings-store.ts";
import { stores } from "../../../db/stores/index.ts";
import { type Ctx, message, owners, userRateRefusal } from "./discord-replies.ts";

/** Discord's limit for a message is 2,000 characters. */
const MAX_ANSWER_CHARS = 1_900;

export async function settingsCommand(
  c: Ctx,
  interaction: CommandInteraction,
  userId: string,
  channelId: string,
) {
  const guildId = interaction.guild_id;
  if (!guildId)
    return message("`/settings` works in a server: settings belong to a server and its channels.");
  const principal = await memberPrincipal(
    interaction,
    owners(c),
    loadConfig(c.env).discordOwnerIds,
  );
  if (!principal.manager)
    return message(`Only ${managersHere(interaction)} can see or change the bot's settings.`);
  const sub = subcommand(interaction);
  const change = sub ? readSettingsChange(sub) : { problem: "Choose what to show or change." };
  if ("problem" in change) return message(change.problem);
  const { discord, agents } = stores(c.env);

  if (change.kind === "show") {
    const parentId = threadParentOf(interaction);
    const place = { guildId, channelId, parentId };
    const { agentId: channelAgent, config } = await discord.channelContext(channelId, parentId);
    const serving = placeAgent(config, place, channelAgent);
    const record = serving ? await agents.get(serving) : null;
    const agent = record
      ? {
          id: record.id,
          name: record.character.name,
          respondMode: record.character.settings.respond.mode,
        }
      : null;
    return message(clip(describeSettings(config, place, channelAgent, agent)));
  }

  const limited = await userRateRefusal(c, userId);
  if (limited) return limited;
  const at = { guildId, channelId };
  // Checked as stored settings are read: a filter saved before the cost bound keeps its suspended
  // patterns (kept, flagged, not applied) rather than blocking every other setting of the server.
  const parsed = StoredDiscordConfig.safeParse(
    applySettingsChange(await discord.readConfig(), at, change),
  );
  if (!parsed.success) {
    // The same refusal as POST /clients/discord/config's 400, as sentences.
    const reasons = parsed.error.issues.map(
      (issue) => `\`${issue.path.join(".")}\`: ${issue.message}`,
    );
    return message(clip(`Nothing was changed: ${reasons.join("; ")}.`));
  }
  await discord.writeConfig(parsed.data, Date.now());
  return message(changedText(parsed.data, at, change));
}

function clip(text: string): string {
  return text.length > MAX_ANSWER_CHARS ? `${text.slice(0, MAX_ANSWER_CHARS)}…` : text;
}
