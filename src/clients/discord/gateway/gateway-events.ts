// What the Gateway object does with message events: finds the agent serving the channel (its own,
// or the default; `allowedChannels` applies as to commands) and hands the message to the shared
// chat intake (src/clients/chat/intake.ts: DM rules, per-user rate limit, principal), which makes
// it a turn keyed by its message id, so a replayed event is recognised, never a second turn. With
// autoThread, a mention first opens a thread (auto-thread.ts) and the turn goes to its room.
// Edits and deletes go to the same room. Events of one channel are handled in order; channels run
// side by side. A room that cannot be reached is tried again a few times before the event is
// logged as lost.
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import { stores } from "../../../db/stores/index.ts";
import { roomName } from "../../../objects/conversation/room-client.ts";
import { agentDirectMessages, takeMessage } from "../../chat/intake.ts";
import { filterVerdict } from "../../../runtime/access/message-filter.ts";
import { admitEdit } from "../../chat/admission.ts";
import { accountCreatedAt, actOnFiltered } from "../filter-actions.ts";
import type { DirectMessagePolicy } from "../../../runtime/character.ts";
import { discordOwners } from "../owners.ts";
import { placeAgent, placeAutoThread, placePolicy, type DiscordPlace } from "../place-settings.ts";
import { createDiscordRest, type DiscordRest } from "../rest.ts";
import { createSharedLimiter } from "../rest-limiter.ts";
import { openThread, threadName } from "./auto-thread.ts";
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
  type MessageIntake,
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
  /** The bot started a thread from a message in `parentId` (autoThread). */
  threadOpened?(threadId: string, parentId: string, guildId: string): void;
  /** Discord's REST API for starting threads (default: the bot token, the shared limiter). */
  rest?: DiscordRest;
  now?: () => number;
  /** Tests shrink the caches' size caps (default MAX_CACHED_CHANNELS, MAX_CACHED_AGENTS). */
  maxCached?: { channels: number; agents: number };
}

export class GatewayEvents {
  private readonly options: GatewayEventsOptions;
  private readonly chains = new Map<string, Promise<void>>();
  private readonly routes: ExpiringCache<string, ChannelRoute>;
  private readonly dmPolicies: ExpiringCache<string, DirectMessagePolicy>;
  private discordRest: DiscordRest | null = null;
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
    const member = { roles: intake.roles, owner };
    const here = { guildId: intake.guildId, channelId: intake.channelId, parentId: route.parentId };
    // The server's filter before the model (docs/discord.md): a declined message opens no thread.
    const filter = intake.guildId ? route.config.guilds[intake.guildId]?.filter : undefined;
    const receivedAt = this.now();
    // Read once, before the rate limit: a flood of filtered messages is still deleted or reported.
    const filtered = filter
      ? filterVerdict(filter, {
          text: intake.text,
          accountCreatedAt: accountCreatedAt(intake.userId),
          now: receivedAt,
        })
      : null;
    // autoThread: the conversation moves to a thread opened from the message (its own room).
    const threadId = filtered
      ? null
      : await this.threadFor(parsed.data, intake, route, here, member, bot.userId);
    const chatId = threadId ?? intake.channelId;
    const place = placePolicy(
      route.config,
      threadId
        ? { guildId: intake.guildId, channelId: threadId, parentId: intake.channelId }
        : here,
      member,
    );
    const delivery: DiscordMessageDelivery = {
      kind: "discord-message",
      channelId: chatId,
      messageId: intake.messageId,
      addressed: intake.mentioned || intake.isDirect,
      ...(threadId ? { startedThread: true } : {}),
    };
    const result = await takeMessage(
      env,
      {
        platform: "discord",
        turnKey: messageTurnKey(intake.messageId),
        roomId: `discord:${chatId}`,
        chatId,
        spaceId: intake.guildId,
        sender: { id: intake.userId, name: intake.userName, isBot: intake.fromBot },
        text: intake.text,
        attachments: intake.attachments,
        isDirect: intake.isDirect,
        mentioned: intake.mentioned,
        receivedAt,
        delivery,
        ...(place ? { place } : {}),
        filtered,
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
        tellDmClosed: (text) => this.rest().channelMessage(intake.channelId, { content: text }),
      },
    );
    // Deleted and reported beside the channel's later events (each request bounded: rest.ts); a
    // replayed event was acted on the first time.
    if (filter && filtered && result !== "duplicate")
      void actOnFiltered(this.rest(), filter, {
        channelId: intake.channelId,
        messageId: intake.messageId,
        userId: intake.userId,
        text: intake.text,
        verdict: filtered,
      });
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

  /**
   * The thread a message opens: only a person's mention in a server channel (not a thread) whose
   * settings turn autoThread on and do not silence the bot there; null otherwise, and when Discord
   * refused (then the answer stays in the channel).
   */
  private async threadFor(
    message: GatewayMessage,
    intake: Extract<MessageIntake, { kind: "turn" }>,
    route: ChannelRoute,
    here: DiscordPlace,
    member: { roles: readonly string[]; owner: boolean },
    botId: string,
  ): Promise<string | null> {
    if (!intake.guildId || !intake.mentioned || intake.fromBot || route.parentId) return null;
    if (!placeAutoThread(route.config, here)) return null;
    if (placePolicy(route.config, here, member)?.respond === "never") return null;
    const threadId = await openThread(
      this.rest(),
      intake.channelId,
      intake.messageId,
      threadName(message, botId, intake.userName),
    );
    if (threadId) this.options.threadOpened?.(threadId, intake.channelId, intake.guildId);
    return threadId;
  }

  private rest(): DiscordRest {
    const { env } = this.options;
    // Few attempts: the channel's later events wait for this; a failure answers in the channel.
    this.discordRest ??=
      this.options.rest ??
      createDiscordRest({
        baseUrl: env.DISCORD_API_BASE,
        botToken: env.DISCORD_BOT_TOKEN,
        limiter: createSharedLimiter(env),
        maxAttempts: 3,
      });
    return this.discordRest;
  }

  private async updated(data: unknown, bot: BotIdentity): Promise<void> {
    const parsed = MessageUpdate.safeParse(data);
    if (!parsed.success || parsed.data.content === undefined) return;
    if (parsed.data.author?.id === bot.userId) return;
    const text = parsed.data.content
      .replace(new RegExp(`<@!?${bot.userId}>`, "g"), `@${bot.username}`)
      .trim();
    await this.amend(
      parsed.data.channel_id,
      parsed.data.guild_id ?? null,
      parsed.data.id,
      { kind: "edit", text },
      parsed.data.author?.id,
    );
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
    edit: { kind: "edit"; text: string } | { kind: "delete" },
    authorId?: string,
  ): Promise<void> {
    const route = await this.routeOf(channelId, guildId);
    if (!route.allowed || !route.agentId) return;
    const { agentId } = route;
    const { env } = this.options;
    // An edit the server's filter declines (a clean message edited into spam afterwards) is no
    // message to keep: it leaves memory, or its waiting turn is dropped, and it is deleted and
    // reported as a new one would be.
    const filter = guildId ? route.config.guilds[guildId]?.filter : undefined;
    const admitted =
      edit.kind === "edit" ? admitEdit({ filter, text: edit.text, now: this.now() }) : null;
    const verdict = admitted?.kind === "delete" ? admitted.verdict : null;
    const change = verdict ? { kind: "delete" as const } : edit;
    const amendment = { idempotencyKey: messageTurnKey(messageId), change, at: this.now() };
    const room = env.ROOMS.getByName(roomName(agentId, `discord:${channelId}`));
    const result = await room.amendMessage(amendment);
    // A message that opened a thread (its id is the thread's) may have its turn in the thread.
    const found =
      result === "unknown" && this.options.parentOf?.(messageId) === channelId
        ? await env.ROOMS.getByName(roomName(agentId, `discord:${messageId}`)).amendMessage(
            amendment,
          )
        : result;
    if (filter && verdict && edit.kind === "edit" && found !== "unknown") {
      log.info("gateway_edit_filtered", { agentId, channelId, verdict });
      void actOnFiltered(this.rest(), filter, {
        channelId,
        messageId,
        userId: authorId ?? "unknown",
        text: edit.text,
        verdict,
      });
    }
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
