// What the Gateway object does with message events: finds the agent serving the channel (its own,
// or the default; `allowedChannels` applies as to commands) and hands the message to the shared
// chat intake (src/clients/chat/intake.ts: DM rules, per-user rate limit, principal), which makes
// it a turn keyed by its message id, so a replayed event is recognised, never a second turn.
// Edits and deletes go to the same room. Events of one channel are handled in order; channels run
// side by side. A room that cannot be reached is tried again a few times before the event is
// logged as lost.
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import { stores } from "../../../db/stores/index.ts";
import { roomName } from "../../../objects/conversation/room-client.ts";
import { agentDirectMessages, takeMessage } from "../../chat/intake.ts";
import type { DirectMessagePolicy } from "../../../runtime/character.ts";
import { discordOwners } from "../owners.ts";
import { placeAgent, placePolicy } from "../place-settings.ts";
import type { DiscordConfig } from "../../../db/stores/discord-settings-store.ts";
import type { DiscordMessageDelivery } from "../message-delivery.ts";
import { ExpiringCache } from "./expiring-cache.ts";
import {
  GatewayMessage,
  MessageDelete,
  MessageUpdate,
  messageTurnKey,
  readMessage,
  type BotIdentity,
} from "./message-intake.ts";

/** How long a channel's agent and the client settings are reused before D1 is asked again. */
export const CHANNEL_CACHE_MS = 10_000;
/** Channels whose agent is kept at once (every DM is a channel of its own). */
export const MAX_CACHED_CHANNELS = 1_000;
/** Agents whose DM policy is kept at once. */
export const MAX_CACHED_AGENTS = 200;
const HANDOFF_ATTEMPTS = 4;
const HANDOFF_BACKOFF_MS = 500;

interface ChannelRoute {
  agentId: string | null;
  allowed: boolean;
  config: DiscordConfig;
  /** A thread's parent channel, whose agent, allow-list entry and settings it takes. */
  parentId: string | null;
}

export interface GatewayEventsOptions {
  env: Env;
  bot(): BotIdentity | null;
  /** The channel a thread belongs to (learnt from the Guilds intent's events); null otherwise. */
  parentOf?(channelId: string): string | null;
  now?: () => number;
  /** Tests shrink the caches' size caps (default MAX_CACHED_CHANNELS, MAX_CACHED_AGENTS). */
  maxCached?: { channels: number; agents: number };
}

export class GatewayEvents {
  private readonly options: GatewayEventsOptions;
  private readonly chains = new Map<string, Promise<void>>();
  private readonly routes: ExpiringCache<string, ChannelRoute>;
  private readonly dmPolicies: ExpiringCache<string, DirectMessagePolicy>;
  /** Messages handed to rooms as turns, and edits or deletions passed on. */
  handled = 0;

  constructor(options: GatewayEventsOptions) {
    this.options = options;
    const max = options.maxCached ?? { channels: MAX_CACHED_CHANNELS, agents: MAX_CACHED_AGENTS };
    this.routes = new ExpiringCache({ ttlMs: CHANNEL_CACHE_MS, maxEntries: max.channels });
    this.dmPolicies = new ExpiringCache({ ttlMs: CHANNEL_CACHE_MS, maxEntries: max.agents });
  }

  /** How many channels' and agents' lookups are kept (bounded by `maxCached`). */
  cached(): { channels: number; agents: number } {
    return { channels: this.routes.size, agents: this.dmPolicies.size };
  }

  /** Handles one message event after the earlier ones of its channel. */
  handle(event: string, data: unknown): Promise<void> {
    const channelId = channelOf(data);
    if (!channelId) return Promise.resolve();
    const previous = this.chains.get(channelId) ?? Promise.resolve();
    const next = previous.then(() => this.withRetries(event, () => this.process(event, data)));
    this.chains.set(channelId, next);
    void next.finally(() => {
      if (this.chains.get(channelId) === next) this.chains.delete(channelId);
    });
    return next;
  }

  private async withRetries(event: string, work: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= HANDOFF_ATTEMPTS) {
          log.error("gateway_event_lost", { event, error: errorField(error) });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, HANDOFF_BACKOFF_MS * 2 ** attempt));
      }
    }
  }

  private async process(event: string, data: unknown): Promise<void> {
    const bot = this.options.bot();
    if (!bot) return;
    if (event === "MESSAGE_CREATE") return this.created(data, bot);
    if (event === "MESSAGE_UPDATE") return this.updated(data, bot);
    if (event === "MESSAGE_DELETE") return this.deleted(data);
  }

  private async created(data: unknown, bot: BotIdentity): Promise<void> {
    const parsed = GatewayMessage.safeParse(data);
    if (!parsed.success) {
      log.warn("gateway_message_unreadable", { issues: parsed.error.issues.length });
      return;
    }
    const intake = readMessage(parsed.data, bot);
    if (intake.kind === "ignore") return;
    const route = await this.routeOf(intake.channelId, intake.guildId);
    if (!route.allowed || !route.agentId) return;
    const { agentId } = route;
    const { env } = this.options;
    const owner = loadConfig(env).discordOwnerIds.includes(intake.userId);
    const place = placePolicy(
      route.config,
      { guildId: intake.guildId, channelId: intake.channelId, parentId: route.parentId },
      { roles: intake.roles, owner },
    );
    const delivery: DiscordMessageDelivery = {
      kind: "discord-message",
      channelId: intake.channelId,
      messageId: intake.messageId,
      addressed: intake.mentioned || intake.isDirect,
    };
    const result = await takeMessage(
      env,
      {
        platform: "discord",
        turnKey: messageTurnKey(intake.messageId),
        roomId: `discord:${intake.channelId}`,
        chatId: intake.channelId,
        spaceId: intake.guildId,
        sender: { id: intake.userId, name: intake.userName, isBot: intake.fromBot },
        text: intake.text,
        attachments: intake.attachments,
        isDirect: intake.isDirect,
        mentioned: intake.mentioned,
        receivedAt: this.now(),
        delivery,
        ...(place ? { place } : {}),
      },
      agentId,
      {
        directMessages: (id) => this.directMessagePolicy(id),
        // A Gateway message carries no permissions: nobody manages through it; the owners named
        // in DISCORD_OWNER_IDS are owners (docs/security.md). A DM is also taken from the
        // application's owners, looked up.
        isOwner: () => owner,
        directMessageOwner: (userId) =>
          discordOwners({
            configured: loadConfig(env).discordOwnerIds,
            apiBase: env.DISCORD_API_BASE,
            botToken: env.DISCORD_BOT_TOKEN,
          }).isOwner(userId),
        // The charge need not hold the message up: this object lives as long as its socket.
        keepAlive: () => undefined,
      },
    );
    if (result === "dm_refused") {
      log.info("gateway_dm_refused", { agentId, channelId: intake.channelId });
      return;
    }
    if (result === "rate_limited") {
      log.info("gateway_rate_limited", { agentId, channelId: intake.channelId });
      return;
    }
    this.handled += 1;
  }

  private async updated(data: unknown, bot: BotIdentity): Promise<void> {
    const parsed = MessageUpdate.safeParse(data);
    if (!parsed.success || parsed.data.content === undefined) return;
    if (parsed.data.author?.id === bot.userId) return;
    const text = parsed.data.content
      .replace(new RegExp(`<@!?${bot.userId}>`, "g"), `@${bot.username}`)
      .trim();
    await this.amend(parsed.data.channel_id, parsed.data.guild_id ?? null, parsed.data.id, {
      kind: "edit",
      text,
    });
  }

  private async deleted(data: unknown): Promise<void> {
    const parsed = MessageDelete.safeParse(data);
    if (!parsed.success) return;
    await this.amend(parsed.data.channel_id, parsed.data.guild_id ?? null, parsed.data.id, {
      kind: "delete",
    });
  }

  private async amend(
    channelId: string,
    guildId: string | null,
    messageId: string,
    change: { kind: "edit"; text: string } | { kind: "delete" },
  ): Promise<void> {
    const route = await this.routeOf(channelId, guildId);
    if (!route.allowed || !route.agentId) return;
    const { agentId } = route;
    const { env } = this.options;
    const room = env.ROOMS.getByName(roomName(agentId, `discord:${channelId}`));
    await room.amendMessage({ idempotencyKey: messageTurnKey(messageId), change, at: this.now() });
    this.handled += 1;
  }

  /**
   * The channel's agent (its `/agent` choice, a thread's parent's, its server's agent, the default)
   * and whether the bot may answer there (a thread: when it or its parent is allowed), with the
   * settings the place's policy is read from; cached per channel.
   */
  private async routeOf(channelId: string, guildId: string | null): Promise<ChannelRoute> {
    const now = this.now();
    let route = this.routes.get(channelId, now);
    if (!route) {
      const parentId = this.options.parentOf?.(channelId) ?? null;
      const { agentId, config } = await stores(this.options.env).discord.channelContext(
        channelId,
        parentId,
      );
      const listed = (id: string | null) => id !== null && config.allowedChannels.includes(id);
      route = {
        agentId: placeAgent(config, { guildId, channelId, parentId }, agentId),
        allowed: config.allowedChannels.length === 0 || listed(channelId) || listed(parentId),
        config,
        parentId,
      };
      this.routes.set(channelId, route, now);
    }
    return route;
  }

  /** A DM has no server permissions: the agent's `directMessages` says whose it takes (default owners). */
  private async directMessagePolicy(agentId: string): Promise<DirectMessagePolicy> {
    const now = this.now();
    let policy = this.dmPolicies.get(agentId, now);
    if (!policy) {
      policy = await agentDirectMessages(this.options.env, agentId, "discord");
      this.dmPolicies.set(agentId, policy, now);
    }
    return policy;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

function channelOf(data: unknown): string | null {
  if (typeof data !== "object" || data === null || !("channel_id" in data)) return null;
  const channelId = data.channel_id;
  return typeof channelId === "string" && /^\d{1,20}$/.test(channelId) ? channelId : null;
}
