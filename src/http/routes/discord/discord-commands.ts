// The slash commands of a Discord interaction webhook (discord.ts checks its signature first):
// /chat journals a turn in its room, /task starts one, and the small commands (/agent, /remember,
// /recall, /forget, /tools, ...) read and write D1 directly (/settings: discord-settings.ts); and
// the agent autocomplete.
import { loadConfig } from "../../../config.ts";
import { COMMANDS } from "../../../clients/discord/commands.ts";
import { createTask } from "../../../objects/tasks/task-client.ts";
import { DEFAULT_TASK_LIMITS } from "../../../runtime/tasks/task-types.ts";
import { interactionDelivery } from "../../../clients/discord/interaction-delivery.ts";
import {
  invoker,
  ResponseType,
  stringOption,
  threadParentOf,
  type CommandInteraction,
} from "../../../clients/discord/interaction.ts";
import {
  isDirectMessage,
  isManager,
  managersHere,
  memberPrincipal,
} from "../../../clients/discord/permissions.ts";
import { agentData, stores } from "../../../db/stores/index.ts";
import { insertMemories } from "../../../db/memory/memory-repo.ts";
import { enqueueTurn } from "../../../objects/conversation/room-client.ts";
import { placePolicy } from "../../../clients/discord/place-settings.ts";
import { accountCreatedAt, FILTER_RULE_NAMES } from "../../../clients/discord/filter-actions.ts";
import { admit, type Admission, commandRefusal } from "../../../clients/chat/admission.ts";
import type { DiscordConfig } from "../../../db/stores/discord-settings-store.ts";
import { BUILTIN_TOOL_DEFINITIONS } from "../../../runtime/turn/builtin-tools.ts";
import { pluginTools } from "../../../plugins/room-plugins.ts";
import { describeServers } from "../../../mcp/overview.ts";
import { mcpPlatform } from "../../../mcp/platform.ts";
import { effectiveServers } from "../../../mcp-registry.ts";
import { RateLimitedError, ValidationError } from "../../../runtime/util/errors.ts";
import type { Attachment, Memory } from "../../../runtime/ports/memory.ts";
import {
  admitDiscordUser,
  type Ctx,
  message,
  owners,
  resolveAgent,
  userRateRefusal,
} from "./discord-replies.ts";
import { settingsCommand } from "./discord-settings.ts";

const MAX_FACTS_SHOWN = 15;
const TOOLS_OVERVIEW_BUDGET_MS = 2_000;

export async function command(c: Ctx, interaction: CommandInteraction) {
  const user = invoker(interaction);
  const channelId = interaction.channel_id;
  if (!user || !channelId)
    throw new ValidationError(
      "invalid request body: an application command needs a user and a channel",
    );
  const name = interaction.data.name;
  if (!COMMANDS.some((definition) => definition.name === name))
    return message(`I don't know the command \`/${name}\`.`);
  if (name === "agent") return chooseAgent(c, interaction, user.id, channelId);
  if (name === "settings") return settingsCommand(c, interaction, user.id, channelId);

  const started = Date.now();
  const resolved = await resolveAgent(c, interaction, channelId);
  if ("refusal" in resolved) return resolved.refusal;
  const resolvedAt = Date.now();
  const { agentId, config: discordConfig } = resolved;
  const userId = `discord:${user.id}`;
  const data = await agentData(c.env, agentId);
  const db = data.db;

  switch (name) {
    case "chat": {
      const text = stringOption(interaction, "message")?.trim();
      if (!text) return message("`/chat` needs a message.");
      const now = Date.now();
      const attachments = chatAttachments(interaction);
      try {
        await admitDiscordUser(c, user.id);
      } catch (error) {
        // Discord shows a failed interaction for an HTTP error: tell the person instead, privately.
        if (error instanceof RateLimitedError)
          return message(
            `You're sending messages faster than I can answer; try again in ${error.retryAfterSeconds} s.`,
          );
        throw error;
      }
      // The server's filter before the model: the message is stored, declined, and the person
      // told so privately at once (the turn then sends nothing to the interaction).
      const { principal, place, filtered } = await admitHere(
        c,
        interaction,
        discordConfig,
        channelId,
        text,
      );
      const delivery = interactionDelivery(interaction, channelId, now);
      await enqueueTurn(c.env, {
        idempotencyKey: `discord:${interaction.id}`,
        input: {
          turnId: crypto.randomUUID(),
          agentId,
          roomId: `discord:${channelId}`,
          userId,
          userName: user.global_name ?? user.username,
          text,
          attachments,
          source: "discord",
          isDirect: true,
          mentioned: true,
          fromBot: user.bot === true,
          receivedAt: now,
          principal,
          ...(place ? { place } : {}),
        },
        delivery: filtered ? { ...delivery, answered: true } : delivery,
      });
      if (filtered)
        return message(
          `This server's filter declined your message (${FILTER_RULE_NAMES[filtered]}); I won't answer it.`,
        );
      // Where the acknowledgement's time goes: the channel's settings (D1), the room's journal (RPC).
      c.header(
        "Server-Timing",
        `channel;dur=${resolvedAt - started}, enqueue;dur=${Date.now() - resolvedAt}`,
      );
      return { type: ResponseType.DEFERRED_MESSAGE };
    }
    case "task": {
      const goal = stringOption(interaction, "goal")?.trim();
      if (!goal) return message("`/task` needs a goal.");
      const limited = await userRateRefusal(c, user.id);
      if (limited) return limited;
      const now = Date.now();
      // The server's rules hold for a task as for /chat: its goal through the filter, and its
      // tools, roles and budgets carried with it to every model and tool call of every step.
      const { principal, place, filtered } = await admitHere(
        c,
        interaction,
        discordConfig,
        channelId,
        goal,
      );
      if (filtered)
        return message(
          `This server's filter declined your task (${FILTER_RULE_NAMES[filtered]}); I won't start it.`,
        );
      // Progress lines and the result go to this interaction (then the channel, once its token ages out).
      const queued = await createTask(c.env, agentId, {
        goal,
        roomId: `discord:${channelId}`,
        source: "discord",
        // Only this person may answer the task's approval prompts.
        requestedBy: userId,
        requester: principal,
        ...(place ? { place } : {}),
        limits: DEFAULT_TASK_LIMITS,
        delivery: interactionDelivery(interaction, channelId, now),
      }).catch((error: unknown) => {
        // The agent's queue is full: say so privately rather than fail the interaction.
        if (error instanceof RateLimitedError) return null;
        throw error;
      });
      if (!queued) return message("This agent has too many tasks waiting; try again in a while.");
      return { type: ResponseType.DEFERRED_MESSAGE };
    }
    case "remember": {
      const fact = stringOption(interaction, "fact")?.trim();
      if (!fact) return message("`/remember` needs a fact.");
      const limited = await userRateRefusal(c, user.id);
      if (limited) return limited;
      // /remember is the `remember` tool by hand: the filter reads the fact (later prompts will),
      // and a server that gates the tool by role gates the command too.
      const refusal = commandRefusal(
        await admitHere(c, interaction, discordConfig, channelId, fact),
        "remember",
      );
      if (refusal === "filtered")
        return message("This server's filter declined that fact; I won't remember it.");
      if (refusal === "tool")
        return message("This server's tool settings don't let me remember facts for you here.");
      const memory: Memory = {
        // One fact per interaction: a redelivered webhook writes nothing new.
        id: `discord:${interaction.id}:fact`,
        type: "fact",
        agentId,
        roomId: `discord:${channelId}`,
        userId,
        content: { text: fact, source: "discord", userName: user.global_name ?? user.username },
        metadata: { via: "/remember" },
        createdAt: Date.now(),
      };
      await insertMemories(db, [memory]);
      // The vector can follow the answer: until then text search finds the fact.
      c.executionCtx.waitUntil(data.pipeline.embed([memory]).catch(() => {}));
      return message(`Got it, I'll remember: ${quote(fact)}`);
    }
    case "recall": {
      const limited = await userRateRefusal(c, user.id);
      if (limited) return limited;
      const query = stringOption(interaction, "query")?.trim();
      const { retriever } = data;
      const memories = query
        ? (
            await retriever.search({
              agentId,
              userId,
              includeShared: false,
              types: ["fact", "description"],
              text: query,
              limit: MAX_FACTS_SHOWN,
            })
          ).map((hit) => hit.memory)
        : (await retriever.aboutUser({ agentId, userId, limit: MAX_FACTS_SHOWN * 2 }))
            .filter((memory) => memory.userId === userId)
            .slice(0, MAX_FACTS_SHOWN);
      if (memories.length === 0)
        return message(
          query
            ? `I don't remember anything about you matching ${quote(query)}.`
            : "I don't remember anything about you yet.",
        );
      const lines = memories.map(
        (memory) => `• ${memory.type === "description" ? "(profile) " : ""}${memory.content.text}`,
      );
      return message(truncate(`Here's what I remember about you:\n${lines.join("\n")}`));
    }
    case "forget":
      return message(
        "Delete everything I remember about you (facts, your profile and your messages)? This cannot be undone.",
        true,
        [
          {
            type: 1,
            components: [
              {
                type: 2,
                style: 4,
                label: "Forget me",
                custom_id: `forget:yes:${user.id}:${agentId}`,
              },
              { type: 2, style: 2, label: "Cancel", custom_id: `forget:no:${user.id}:${agentId}` },
            ],
          },
        ],
      );
    case "tools": {
      const limited = await userRateRefusal(c, user.id);
      if (limited) return limited;
      // A consent link connects the agent to the account of whoever opens it: managers only.
      const manager = await isManager(interaction, owners(c));
      const authorizer = isDirectMessage(interaction)
        ? "the bot's owner (they can run /tools in a DM)"
        : "a server manager (they can run /tools)";
      return message(truncate(await toolsOverview(c, agentId, manager, authorizer)));
    }
  }
  return message(`I don't know the command \`/${name}\`.`);
}

/** Built-in tools, then each MCP server with its state and, when it waits for consent, the link. */
async function toolsOverview(
  c: Ctx,
  agentId: string,
  canAuthorize: boolean,
  authorizer: string,
): Promise<string> {
  const record = await stores(c.env).agents.get(agentId);
  const fromPlugins = record ? await pluginTools(c.env, agentId, record.character) : [];
  const lines = [
    "Built-in tools:",
    ...[...BUILTIN_TOOL_DEFINITIONS, ...fromPlugins].map(
      (tool) => `• \`${tool.name}\`: ${tool.description}`,
    ),
  ];
  const platform = mcpPlatform(c.env, new URL(c.req.url).origin);
  const entries = record
    ? effectiveServers(record.character.settings.mcpServers, await platform.servers.list(agentId))
    : [];
  if (entries.length === 0)
    return [...lines, "", "No MCP servers are attached to this agent."].join("\n");
  // Discord waits 3 s for this answer: starting an authorization gets at most 2 of them.
  const overview = await Promise.race([
    describeServers(platform, agentId, entries, {
      probe: false,
      startAuthorization: canAuthorize,
      now: Date.now,
    }),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), TOOLS_OVERVIEW_BUDGET_MS)),
  ]);
  lines.push("", "MCP servers:");
  if (!overview)
    return [
      ...lines,
      ...entries.map((entry) => `• **${entry.name}**: checking… run /tools again in a moment`),
    ].join("\n");
  for (const server of overview) {
    if (!canAuthorize && (server.state === "authenticating" || server.authUrl))
      lines.push(`• **${server.name}**: needs authorization by ${authorizer}`);
    else if (server.authUrl)
      lines.push(`• **${server.name}**: needs authorization: ${server.authUrl}`);
    else if (server.state === "failed")
      lines.push(`• **${server.name}**: not usable (${server.error ?? "misconfigured"})`);
    else
      lines.push(
        `• **${server.name}**: ${server.auth === "oauth" ? "authorized" : "configured"} (${server.url})`,
      );
  }
  return lines.join("\n");
}

async function chooseAgent(
  c: Ctx,
  interaction: CommandInteraction,
  userId: string,
  channelId: string,
) {
  // Discord hides the command from members without the permission, but a DM shows it to anyone.
  if (!(await isManager(interaction, owners(c)))) {
    return message(
      `Only ${managersHere(interaction)} can choose the agent for ${isDirectMessage(interaction) ? "a direct message" : "a channel"}.`,
    );
  }
  const agentId = stringOption(interaction, "name")?.trim() ?? "";
  const record = agentId ? await stores(c.env).agents.get(agentId) : null;
  if (!record)
    return message(
      `There is no agent called ${quote(agentId)}. Start typing to see the agents I know.`,
    );
  await stores(c.env).discord.setChannelAgent({
    channelId,
    guildId: interaction.guild_id ?? null,
    agentId,
    userId,
    now: Date.now(),
  });
  return message(`${record.character.name} (\`${agentId}\`) now answers in this channel.`, false);
}

export async function autocomplete(c: Ctx, interaction: CommandInteraction) {
  // Only who may pick an agent sees the list (it names every agent of the deployment).
  if (!(await isManager(interaction, owners(c))))
    return { type: ResponseType.AUTOCOMPLETE_RESULT, data: { choices: [] } };
  const typed = (interaction.data.options?.find((option) => option.focused)?.value ?? "")
    .toString()
    .toLowerCase();
  const { agents } = await stores(c.env).agents.list({ limit: 200 });
  const choices = agents
    .filter(
      (agent) => agent.id.toLowerCase().includes(typed) || agent.name.toLowerCase().includes(typed),
    )
    .slice(0, 25)
    .map((agent) => ({ name: `${agent.name} (${agent.id})`.slice(0, 100), value: agent.id }));
  return { type: ResponseType.AUTOCOMPLETE_RESULT, data: { choices } };
}

/**
 * The one admission of a command's text (src/clients/chat/admission.ts): the member's principal,
 * the place's policy for them (tools, roles, budgets) and the server's filter's verdict on it.
 */
async function admitHere(
  c: Ctx,
  interaction: CommandInteraction,
  discordConfig: DiscordConfig,
  channelId: string,
  text: string,
): Promise<Admission> {
  const principal = await memberPrincipal(
    interaction,
    owners(c),
    loadConfig(c.env).discordOwnerIds,
  );
  const guildId = interaction.guild_id ?? null;
  const user = invoker(interaction);
  return admit({
    principal,
    place: placePolicy(
      discordConfig,
      { guildId, channelId, parentId: threadParentOf(interaction) },
      { roles: interaction.member?.roles ?? [], owner: principal.owner },
    ),
    filter: guildId ? discordConfig.guilds[guildId]?.filter : null,
    text,
    accountCreatedAt: user ? accountCreatedAt(user.id) : null,
    now: Date.now(),
  });
}

/** The /chat attachment, described to the model by its URL (Discord's CDN serves it for a while). */
function chatAttachments(interaction: CommandInteraction): Attachment[] {
  const id = interaction.data.options?.find((option) => option.name === "attachment")?.value;
  const file = typeof id === "string" ? interaction.data.resolved?.attachments?.[id] : undefined;
  if (!file) return [];
  return [
    {
      url: file.url,
      contentType: file.content_type ?? "application/octet-stream",
      title: file.filename,
    },
  ];
}

function quote(text: string): string {
  return `“${text.replace(/[`*_~|>]/g, (ch) => `\\${ch}`).slice(0, 300)}”`;
}

function truncate(text: string): string {
  return text.length > 1_900 ? `${text.slice(0, 1_900)}…` : text;
}
