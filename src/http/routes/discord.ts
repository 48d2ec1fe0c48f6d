// The Discord bot over interaction webhooks. The signature (Ed25519 over timestamp + raw body) is
// checked before anything is parsed; a timestamp older than 5 minutes is a replay. `/chat` is
// journalled in its room's Durable Object with one RPC and acknowledged with a deferred response
// (type 5) at once; the room edits that response when the turn is done. The other commands are
// small D1 reads and writes answered directly. Room = `discord:<channel>`, user = `discord:<user>`.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { verifyKey } from "discord-interactions";
import { loadConfig } from "../../config.ts";
import type { AppEnv } from "../app-env.ts";
import { enforceRate } from "../rate-limit.ts";
import { guard, keepAliveOf } from "../auth.ts";
import { COMMANDS } from "../../clients/discord/commands.ts";
import { answerTaskApprovalClick, createTask } from "../../room/task-client.ts";
import { DEFAULT_TASK_LIMITS } from "../../runtime/task-types.ts";
import { interactionDelivery } from "../../clients/discord/delivery.ts";
import {
  EPHEMERAL,
  Interaction,
  InteractionType,
  invoker,
  ResponseType,
  stringOption,
  type CommandInteraction,
  type ComponentInteraction,
} from "../../clients/discord/interaction.ts";
import { DiscordConfig } from "../../clients/discord/settings.ts";
import { discordOwners, type DiscordOwners } from "../../clients/discord/owners.ts";
import {
  directMessageRefusal,
  isDirectMessage,
  isManager,
  managersHere,
} from "../../clients/discord/permissions.ts";
import { stores } from "../../memory/stores.ts";
import { deleteMemories, insertMemories } from "../../memory/memory-repo.ts";
import { enqueueTurn, forgetRoomHistory, resolveApproval } from "../../room/room-client.ts";
import {
  approvalResultText,
  parseApprovalCustomId,
  type ApprovalButton,
} from "../../clients/discord/approval.ts";
import { BUILTIN_TOOL_DEFINITIONS } from "../../runtime/builtin-tools.ts";
import { parseProposalCustomId } from "../../clients/discord/proposal-prompt.ts";
import { answerProposalClick } from "./discord-proposals.ts";
import { pluginTools } from "../../plugins/room-plugins.ts";
import { describeServers } from "../../mcp/overview.ts";
import { mcpPlatform } from "../../mcp/platform.ts";
import { effectiveServers } from "../../mcp/registry.ts";
import {
  NotConfiguredError,
  NotFoundError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
} from "../../runtime/errors.ts";
import type { Attachment, Memory } from "../../runtime/types.ts";
import { errorContent } from "../schemas.ts";
import { validationError } from "../validation.ts";
import { taskQuestionClick, taskQuestionSubmit } from "./discord-task-input.ts";

/** Discord signs the time it sent the request; older than this is treated as a replay. */
export const MAX_INTERACTION_AGE_MS = 5 * 60 * 1000;
export const MAX_INTERACTION_BODY_BYTES = 256 * 1024;
const MAX_FACTS_SHOWN = 15;

type Ctx = Context<AppEnv>;

const publicKeys = new Map<string, Promise<CryptoKey>>();
function publicKey(hex: string): Promise<CryptoKey> {
  let key = publicKeys.get(hex);
  if (!key) {
    const bytes = new Uint8Array(hex.match(/../g)?.map((pair) => Number.parseInt(pair, 16)) ?? []);
    key = crypto.subtle.importKey("raw", bytes, { name: "Ed25519" }, false, ["verify"]);
    key.catch(() => publicKeys.delete(hex));
    publicKeys.set(hex, key);
  }
  return key;
}

const TOOLS_OVERVIEW_BUDGET_MS = 2_000;

export function discordRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  // Documented, not validated by the route schema: the signature covers the raw bytes, so the body
  // is read and verified first and parsed after (below).
  app.openAPIRegistry.registerPath({
    method: "post",
    path: "/discord/interactions",
    summary: "Discord interactions webhook (Ed25519-signed by Discord; no bearer token)",
    request: {
      headers: z.object({
        "x-signature-ed25519": z
          .string()
          .openapi({ description: "Hex Ed25519 signature of timestamp + body" }),
        "x-signature-timestamp": z
          .string()
          .openapi({ description: "Unix seconds; refused when more than 5 minutes off" }),
      }),
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z
              .record(z.string(), z.unknown())
              .openapi({ description: "A Discord interaction" }),
          },
        },
      },
    },
    responses: {
      200: {
        description: "An interaction response (PONG, a message, or a deferred acknowledgement)",
      },
      400: errorContent("A verified body that is not a valid interaction"),
      401: errorContent("Missing, stale or invalid signature"),
    },
  });

  app.post("/discord/interactions", async (c) => {
    const keyHex = c.env.DISCORD_PUBLIC_KEY?.trim();
    if (!keyHex || !/^[0-9a-fA-F]{64}$/.test(keyHex)) {
      throw new NotConfiguredError(
        "DISCORD_PUBLIC_KEY is not set (or is not 64 hex characters): copy it from the Discord developer portal",
      );
    }
    const signature = c.req.header("x-signature-ed25519");
    const timestamp = c.req.header("x-signature-timestamp");
    if (!signature || !timestamp)
      throw new UnauthorizedError("missing X-Signature-Ed25519 or X-Signature-Timestamp");
    if (
      !/^\d{1,12}$/.test(timestamp) ||
      Math.abs(Date.now() - Number(timestamp) * 1000) > MAX_INTERACTION_AGE_MS
    ) {
      throw new UnauthorizedError(
        "the signed timestamp is more than 5 minutes off: refused as a replay",
      );
    }
    const raw = new Uint8Array(await c.req.arrayBuffer());
    if (!(await verifyKey(raw, signature, timestamp, await publicKey(keyHex))))
      throw new UnauthorizedError("invalid request signature");

    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(raw));
    } catch {
      throw new ValidationError("invalid request body: not JSON");
    }
    const parsed = Interaction.safeParse(body);
    if (!parsed.success) throw validationError("json", parsed.error.issues);
    const interaction = parsed.data;
    switch (interaction.type) {
      case InteractionType.PING:
        return c.json({ type: ResponseType.PONG });
      case InteractionType.AUTOCOMPLETE:
        return c.json(await autocomplete(c, interaction));
      case InteractionType.MESSAGE_COMPONENT:
        return c.json(await component(c, interaction));
      case InteractionType.APPLICATION_COMMAND:
        return c.json(await command(c, interaction));
      case InteractionType.MODAL_SUBMIT:
        return c.json(
          (await taskQuestionSubmit(c, interaction)) ?? message("That form is no longer valid."),
        );
    }
  });

  app.openapi(
    createRoute({
      method: "get",
      path: "/clients/{clientId}/config",
      summary: "A client's settings (Discord: default agent, allowed channels)",
      ...guard("admin"),
      request: { params: z.object({ clientId: z.literal("discord") }) },
      responses: {
        200: {
          description: "The settings",
          content: { "application/json": { schema: DiscordConfig } },
        },
        400: errorContent("Unknown client"),
      },
    }),
    async (c) => c.json(await stores(c.env).discord.readConfig(), 200),
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/clients/{clientId}/config",
      summary: "Set a client's settings (Discord: default agent, allowed channels)",
      ...guard("admin"),
      request: {
        params: z.object({ clientId: z.literal("discord") }),
        body: { required: true, content: { "application/json": { schema: DiscordConfig } } },
      },
      responses: {
        200: {
          description: "The settings as stored",
          content: { "application/json": { schema: DiscordConfig } },
        },
        400: errorContent("Invalid settings or unknown client"),
        404: errorContent("The default agent does not exist"),
      },
    }),
    async (c) => {
      const config = c.req.valid("json");
      if (
        config.defaultAgentId &&
        (await stores(c.env).agents.version(config.defaultAgentId)) === null
      ) {
        throw new NotFoundError(`no agent with id "${config.defaultAgentId}"`);
      }
      await stores(c.env).discord.writeConfig(config, Date.now());
      return c.json(config, 200);
    },
  );
  return app;
}

function message(content: string, ephemeral = true, components?: unknown[]) {
  return {
    type: ResponseType.MESSAGE,
    data: {
      content,
      allowed_mentions: { parse: [] },
      ...(ephemeral ? { flags: EPHEMERAL } : {}),
      ...(components ? { components } : {}),
    },
  };
}

/** DISCORD_OWNER_IDS and the application's owners (looked up, cached per isolate). */
function owners(c: Ctx): DiscordOwners {
  return discordOwners({
    configured: loadConfig(c.env).discordOwnerIds,
    apiBase: c.env.DISCORD_API_BASE,
    botToken: c.env.DISCORD_BOT_TOKEN,
  });
}

/** The agent serving the interaction's channel, or why it does not answer here (as a message to show). */
async function resolveAgent(
  c: Ctx,
  interaction: CommandInteraction,
  channelId: string,
): Promise<{ agentId: string } | { refusal: ReturnType<typeof message> }> {
  const { agentId, config } = await stores(c.env).discord.channelContext(channelId);
  if (config.allowedChannels.length > 0 && !config.allowedChannels.includes(channelId)) {
    return {
      refusal: message(
        "I'm not enabled in this channel. A server manager can add it to the bot's allowed channels.",
      ),
    };
  }
  const chosen = agentId ?? config.defaultAgentId;
  if (!chosen)
    return {
      refusal: message(
        `No agent serves this channel yet. Only ${managersHere(interaction)} can pick one with \`/agent\`.`,
      ),
    };
  if (isDirectMessage(interaction)) {
    // A DM has no server permissions to lean on: the agent says whose DMs it answers (default: owners).
    const record = await stores(c.env).agents.get(chosen);
    const refusal = await directMessageRefusal(
      interaction,
      record?.character.settings.discord.directMessages ?? "owners",
      owners(c),
    );
    if (refusal) return { refusal: message(refusal) };
  }
  return { agentId: chosen };
}

/** The per-user bucket that /chat and /task draw from; a private "try again" when it is empty. */
async function userRateRefusal(
  c: Ctx,
  discordUserId: string,
): Promise<ReturnType<typeof message> | null> {
  try {
    await enforceRate(
      c.env,
      `user:discord:${discordUserId}`,
      loadConfig(c.env).rateLimits.perUser,
      "this Discord user",
      keepAliveOf(c),
    );
    return null;
  } catch (error) {
    if (error instanceof RateLimitedError)
      return message(
        `You're sending requests faster than I can take them; try again in ${error.retryAfterSeconds} s.`,
      );
    throw error;
  }
}

async function command(c: Ctx, interaction: CommandInteraction) {
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

  const started = Date.now();
  const resolved = await resolveAgent(c, interaction, channelId);
  if ("refusal" in resolved) return resolved.refusal;
  const resolvedAt = Date.now();
  const { agentId } = resolved;
  const userId = `discord:${user.id}`;
  const db = stores(c.env).db;

  switch (name) {
    case "chat": {
      const text = stringOption(interaction, "message")?.trim();
      if (!text) return message("`/chat` needs a message.");
      const now = Date.now();
      const attachments = chatAttachments(interaction);
      try {
        await enforceRate(
          c.env,
          `user:discord:${user.id}`,
          loadConfig(c.env).rateLimits.perUser,
          "this Discord user",
          keepAliveOf(c),
        );
      } catch (error) {
        // Discord shows a failed interaction for an HTTP error: tell the person instead, privately.
        if (error instanceof RateLimitedError)
          return message(
            `You're sending messages faster than I can answer; try again in ${error.retryAfterSeconds} s.`,
          );
        throw error;
      }
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
        },
        delivery: interactionDelivery(interaction, channelId, now),
      });
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
      // Progress lines and the result go to this interaction (then the channel, once its token ages out).
      const queued = await createTask(c.env, agentId, {
        goal,
        roomId: `discord:${channelId}`,
        source: "discord",
        // Only this person may answer the task's approval prompts.
        requestedBy: userId,
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
      c.executionCtx.waitUntil(
        stores(c.env)
          .pipeline.embed([memory])
          .catch(() => {}),
      );
      return message(`Got it, I'll remember: ${quote(fact)}`);
    }
    case "recall": {
      const limited = await userRateRefusal(c, user.id);
      if (limited) return limited;
      const query = stringOption(interaction, "query")?.trim();
      const { retriever } = stores(c.env);
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

async function autocomplete(c: Ctx, interaction: CommandInteraction) {
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

async function component(c: Ctx, interaction: ComponentInteraction) {
  const approval = parseApprovalCustomId(interaction.data.custom_id);
  if (approval) return answerApproval(c, interaction, approval);
  const question = await taskQuestionClick(c, interaction);
  if (question) return question;
  const proposal = parseProposalCustomId(interaction.data.custom_id);
  if (proposal) return answerProposalClick(c.env, interaction, proposal, owners(c));
  const user = invoker(interaction);
  const match = /^forget:(yes|no):(\d{1,20}):([A-Za-z0-9][A-Za-z0-9_-]{0,63})$/.exec(
    interaction.data.custom_id,
  );
  if (!user || !match) return message("That button is no longer valid.");
  const [, choice, ownerId, agentId] = match;
  if (user.id !== ownerId) return message("Only the person who asked can answer this.");
  if (choice === "no")
    return {
      type: ResponseType.UPDATE_MESSAGE,
      data: { content: "Nothing was deleted.", components: [] },
    };
  const { deleted, rooms } = await deleteMemories(stores(c.env).db, {
    agentId: agentId!,
    userId: `discord:${ownerId}`,
  });
  c.executionCtx.waitUntil(forgetRoomHistory(c.env, agentId!, rooms));
  return {
    type: ResponseType.UPDATE_MESSAGE,
    data: {
      content: `Done: I forgot ${deleted} ${deleted === 1 ? "memory" : "memories"} about you.`,
      components: [],
    },
  };
}

/**
 * Approve / Deny on a paused turn's or task's prompt: the chat room (`ap:`) or the agent's task
 * object (`tap:`) decides whether this click counts.
 */
async function answerApproval(c: Ctx, interaction: ComponentInteraction, button: ApprovalButton) {
  const user = invoker(interaction);
  if (!user || !interaction.channel_id) return message("That button is no longer valid.");
  const name = user.global_name ?? user.username;
  const click = {
    approvalId: button.approvalId,
    approve: button.approve,
    userId: `discord:${user.id}`,
    userName: name,
    // The click's own interaction: its token is fresh, and its @original is the prompt.
    via: interactionDelivery(interaction, interaction.channel_id, Date.now()),
  };
  const result =
    button.target === "task"
      ? await answerTaskApprovalClick(c.env, button.agentId, click)
      : await resolveApproval(c.env, button.agentId, `discord:${interaction.channel_id}`, click);
  switch (result.status) {
    case "not_yours":
      return message("Only the person who asked can approve or deny this.");
    case "gone":
    // A click never gets `on_discord` (that is the REST answer to a Discord task); read it as gone.
    case "on_discord":
      return message(
        "This request is no longer waiting for an answer: it was already answered, or it expired.",
      );
    case "resolved":
      return {
        type: ResponseType.UPDATE_MESSAGE,
        data: {
          content: approvalResultText(result.tool, result.decision, name),
          components: [],
          allowed_mentions: { parse: [] },
        },
      };
  }
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
