// `/settings` (server managers): its subcommand read into a change of the client config, the
// change applied to a copy (respond mode and autoThread for the server or the channel, the server's
// daily token budgets), and a place's effective settings described with where each comes from.
// Pure: the route checks who asks, validates the copy with the same schema as
// `POST /clients/discord/config` and stores it (src/http/routes/discord/discord-settings.ts).
import type { ChannelSettings, DiscordConfig } from "../../db/stores/discord-settings-store.ts";
import { MAX_PATTERN_INSTRUCTIONS, patternInstructions } from "../../runtime/access/filter-cost.ts";
import type { MessageFilterRules } from "../../runtime/access/message-filter.ts";
import type { DiscordPlace } from "./place-settings.ts";

export type SettingsScope = "server" | "channel";

export type SettingsChange =
  | { kind: "show" }
  /** `mode` null: back to the default (the server's setting, else the agent's). */
  | { kind: "respond"; mode: string | null; scope: SettingsScope }
  | { kind: "autoThread"; enabled: boolean; scope: SettingsScope }
  /** A count of 0 removes that limit; undefined leaves it as it is. */
  | { kind: "budget"; serverTokens?: number; memberTokens?: number };

interface SubcommandInput {
  name: string;
  options: ReadonlyArray<{ name: string; value?: string | number | boolean }>;
}

/** The change a subcommand asks for, or what is missing (as a sentence to show). */
export function readSettingsChange(sub: SubcommandInput): SettingsChange | { problem: string } {
  const value = (name: string) => sub.options.find((option) => option.name === name)?.value;
  const scope = value("scope");
  const scoped = scope === "server" || scope === "channel";
  switch (sub.name) {
    case "show":
      return { kind: "show" };
    case "respond": {
      const mode = value("mode");
      if (typeof mode !== "string" || !scoped) return { problem: "Choose a mode and a scope." };
      return { kind: "respond", mode: mode === "default" ? null : mode, scope };
    }
    case "autothread": {
      const enabled = value("enabled");
      if (typeof enabled !== "boolean" || !scoped)
        return { problem: "Choose enabled true or false, and a scope." };
      return { kind: "autoThread", enabled, scope };
    }
    case "budget": {
      const server = value("server_tokens");
      const member = value("member_tokens");
      if (typeof server !== "number" && typeof member !== "number")
        return { problem: "Give `server_tokens`, `member_tokens` or both (0 removes a limit)." };
      return {
        kind: "budget",
        ...(typeof server === "number" ? { serverTokens: server } : {}),
        ...(typeof member === "number" ? { memberTokens: member } : {}),
      };
    }
  }
  return { problem: `I don't know \`/settings ${sub.name}\`.` };
}

type Settings = Record<string, unknown>;
type Candidate = Omit<DiscordConfig, "guilds" | "channels"> & {
  guilds: Record<string, Settings>;
  channels: Record<string, Settings>;
};

/**
 * The config with the change made, not yet validated (the caller parses it with DiscordConfig,
 * which names what it refuses). Empty settings of a server or channel are dropped.
 */
export function applySettingsChange(
  config: DiscordConfig,
  at: { guildId: string; channelId: string },
  change: Exclude<SettingsChange, { kind: "show" }>,
): unknown {
  const next = structuredClone(config) as Candidate;
  const server = next.guilds[at.guildId] ?? {};
  const channel = next.channels[at.channelId] ?? {};
  next.guilds[at.guildId] = server;
  next.channels[at.channelId] = channel;
  const set = (place: Settings, key: string, value: unknown) => {
    if (value === undefined) delete place[key];
    else place[key] = value;
  };
  switch (change.kind) {
    case "respond":
      set(change.scope === "server" ? server : channel, "respond", change.mode ?? undefined);
      break;
    case "autoThread":
      // Off is a server's default; a channel's false stands against its server's true.
      if (change.scope === "server") set(server, "autoThread", change.enabled || undefined);
      else set(channel, "autoThread", change.enabled);
      break;
    case "budget":
      if (change.serverTokens !== undefined)
        set(server, "dailyTokens", change.serverTokens === 0 ? undefined : change.serverTokens);
      if (change.memberTokens !== undefined)
        set(
          server,
          "memberDailyTokens",
          change.memberTokens === 0 ? undefined : change.memberTokens,
        );
      break;
  }
  if (Object.keys(server).length === 0) delete next.guilds[at.guildId];
  if (Object.keys(channel).length === 0) delete next.channels[at.channelId];
  return next;
}

export interface AgentInfo {
  id: string;
  name: string;
  /** The character's own `settings.respond.mode`. */
  respondMode: string;
}

/**
 * The settings in force in this channel and server, each with where it comes from, for managers.
 * `channelAgent` is the channel's `/agent` choice (or its thread parent's); `agent` the one
 * serving.
 */
export function describeSettings(
  config: DiscordConfig,
  place: DiscordPlace & { guildId: string },
  channelAgent: string | null,
  agent: AgentInfo | null,
): string {
  const server = config.guilds[place.guildId];
  const places: Array<[ChannelSettings | undefined, string]> = [
    [config.channels[place.channelId], "set on this channel"],
    [place.parentId ? config.channels[place.parentId] : undefined, "set on the parent channel"],
    [server, "set on the server"],
  ];
  /** The most specific place that sets `key`: its value and where it is set. */
  const pick = <K extends keyof ChannelSettings>(key: K) => {
    for (const [settings, from] of places)
      if (settings?.[key] !== undefined) return { value: settings[key], from };
    return null;
  };
  const respond = pick("respond");
  const autoThread = pick("autoThread");
  const tools = pick("tools");
  const agentFrom = channelAgent
    ? "chosen with /agent"
    : server?.agentId
      ? "the server's agent"
      : "the default agent";
  const budgets = [
    server?.dailyTokens ? `${tokens(server.dailyTokens)} for the server` : null,
    server?.memberDailyTokens ? `${tokens(server.memberDailyTokens)} per member` : null,
  ].filter((line) => line !== null);
  const gated = Object.keys(server?.toolRoles ?? {});
  const thread = place.parentId ? `, a thread of <#${place.parentId}>` : "";
  return [
    `**This channel** (<#${place.channelId}>${thread})`,
    agent
      ? `• Agent: ${agent.name} (\`${agent.id}\`), ${agentFrom}`
      : "• Agent: none (pick one with /agent)",
    respond
      ? `• Respond: ${respond.value} (${respond.from})`
      : `• Respond: ${agent?.respondMode ?? "mentions"} (the agent's own)`,
    `• autoThread: ${autoThread?.value ? "on" : "off"} (${autoThread?.from ?? "not set"})`,
    tools
      ? `• Tools: ${tools.value?.join(", ") || "none"} (${tools.from})`
      : "• Tools: all of the agent's",
    "**This server**",
    `• Daily tokens: ${budgets.length > 0 ? budgets.join(", ") : "no limit"}`,
    `• Role-gated tools: ${gated.length > 0 ? gated.join(", ") : "none"}`,
    `• Filter: ${filterText(server?.filter)}`,
    "Change them with `/settings respond`, `/settings autothread` and `/settings budget`; " +
      "the rest with `POST /clients/discord/config`.",
  ].join("\n");
}

/** What a stored change now means, in a sentence. */
export function changedText(
  config: DiscordConfig,
  at: { guildId: string; channelId: string },
  change: Exclude<SettingsChange, { kind: "show" }>,
): string {
  const where = (scope: SettingsScope) => (scope === "server" ? "this server" : "this channel");
  switch (change.kind) {
    case "respond": {
      const here = where(change.scope);
      if (change.mode) return `The bot now answers ${respondMeaning(change.mode)} in ${here}.`;
      const fallback = change.scope === "channel" ? "the server's setting, else " : "";
      return `Respond mode in ${here} is back to the default (${fallback}the agent's own).`;
    }
    case "autoThread": {
      const here = where(change.scope);
      return change.enabled
        ? `autoThread is on in ${here}: a mention opens a thread for the conversation.`
        : `autoThread is off in ${here}: the bot answers in the channel.`;
    }
    case "budget": {
      const server = config.guilds[at.guildId];
      const whole = server?.dailyTokens ? tokens(server.dailyTokens) : "no limit";
      const member = server?.memberDailyTokens ? tokens(server.memberDailyTokens) : "no limit";
      return (
        `Daily tokens in this server: ${whole} for the server, ${member} per member ` +
        "(the day is UTC)."
      );
    }
  }
}

/**
 * On or off, and the patterns saved before the cost bound that pass it: they are kept but not
 * applied, so a manager sees that part of the filter is not working and why.
 */
function filterText(filter: MessageFilterRules | undefined): string {
  if (!filter) return "off";
  const suspended = filter.suspended ?? [];
  if (suspended.length === 0) return "on";
  const which = suspended.map(
    ({ index, pattern }) => `\`patterns.${index}\` (${patternInstructions(pattern)} instructions)`,
  );
  return (
    `on, but ${suspended.length} ${suspended.length === 1 ? "pattern is" : "patterns are"} ` +
    `suspended (kept, not applied): ${which.join(", ")}. A filter's patterns may compile to ` +
    `${MAX_PATTERN_INSTRUCTIONS} RE2 instructions in all; fix them with ` +
    "`POST /clients/discord/config`"
  );
}

function respondMeaning(mode: string): string {
  if (mode === "always") return "every message";
  if (mode === "never") return "nobody (not even a mention)";
  return "mentions and replies";
}

function tokens(count: number): string {
  return `${count.toLocaleString("en-US")} tokens`;
}
