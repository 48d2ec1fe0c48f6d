// The one way a chat platform's message becomes a turn, once the adapter has verified, parsed and
// normalised it and chosen the agent: the DM policy, the per-user rate limit (`user:<platform>:<id>`),
// the member principal and the place's policy from the one admission (./admission.ts), and one
// `enqueueTurn` keyed by the platform message, so a redelivered message is the same turn. Edits
// amend the stored message by that key, admitted again. A message the place's filter before the
// model declined is still stored, as a turn the rules decline. No platform code here: the adapter
// passes its delivery target through as opaque data.
import { loadConfig, type Config } from "../../config.ts";
import type { Env } from "../../env.ts";
import { stores } from "../../db/stores/index.ts";
import { enqueueTurn, roomName } from "../../objects/conversation/room-client.ts";
import type { DeliveryTarget } from "../../objects/shared/reply-surface.ts";
import { admit as admitRate, type KeepAlive } from "../../rate-limits/admission.ts";
import { personBucket } from "../../rate-limits/buckets.ts";
import type { FilterRules, FilterVerdict } from "../../runtime/access/message-filter.ts";
import type { MemberPlatform } from "../../runtime/access/principal.ts";
import type { DirectMessagePolicy } from "../../runtime/character.ts";
import type { Attachment } from "../../runtime/ports/memory.ts";
import type { PlacePolicy } from "../../runtime/access/place-policy.ts";
import { RateLimitedError } from "../../runtime/util/errors.ts";
import { admit, admitEdit } from "./admission.ts";
import { type TellDmClosed, tellDmClosedOnce } from "./dm-notice.ts";

/** A message as every adapter hands it over. */
export interface ChatMessage {
  platform: MemberPlatform;
  /** One per platform message: `telegram-msg:<chat>:<message_id>`, `discord-msg:<id>`. */
  turnKey: string;
  /** `<platform>:<chat>[:<thread>]`. */
  roomId: string;
  /** The platform's chat or channel id. */
  chatId: string;
  /**
   * The platform's server (a Discord guild, a Slack workspace, DMs included); null in a Discord
   * DM and where there is none (Telegram). Budgets per server count the turns made there.
   */
  spaceId: string | null;
  /** The platform's own user id (without the `<platform>:` prefix). */
  sender: { id: string; name: string; isBot: boolean };
  text: string;
  attachments?: Attachment[];
  isDirect: boolean;
  /** Addressed to the bot: a mention, a reply to it, a command. */
  mentioned: boolean;
  receivedAt: number;
  /** Where the reply goes, the adapter's own data (its `kind` picks the surface). */
  delivery: DeliveryTarget;
  /** What the place's settings say about this turn (a Discord server's or channel's). */
  place?: PlacePolicy;
  /** The place's filter before the model (src/runtime/access/message-filter.ts), if any. */
  filter?: FilterRules | null;
  /**
   * The filter's verdict when the adapter already read it for this message (the Gateway, for its
   * auto-thread too); admission then applies it instead of reading it again.
   */
  filtered?: FilterVerdict | null;
  /** The text the model will read comes later (a voice note's transcript, filtered in the room). */
  transcribed?: boolean;
}

/** What the intake asks the adapter (or its defaults) about the sender and the agent. */
export interface IntakePolicy {
  /** Whose DMs the agent takes; default: the agent's DM policy on the message's platform. */
  directMessages?(agentId: string): Promise<DirectMessagePolicy>;
  /** One of the bot's owners on this platform; default: the configured owner ids. */
  isOwner?(senderId: string): boolean | Promise<boolean>;
  /**
   * Who counts as an owner for the DM policy, when the platform knows more owners than it vouches
   * for in a principal (Discord: the application's owners, looked up); default: `isOwner`.
   */
  directMessageOwner?(senderId: string): Promise<boolean>;
  /** Keeps the rate limit's charge alive without holding the message up (default: awaited). */
  keepAlive?: KeepAlive;
  /**
   * Says in the refused DM's chat that the agent does not take the sender's DMs; called the first
   * time only (./dm-notice.ts). Without it a refused DM gets silence.
   */
  tellDmClosed?: TellDmClosed;
}

const PLATFORM_NAMES: Record<MemberPlatform, string> = {
  discord: "Discord",
  telegram: "Telegram",
  slack: "Slack",
};

export type IntakeResult = "queued" | "duplicate" | "dm_refused" | "rate_limited";

/** Hands one message to the agent's room as a turn (or says why not). */
export async function takeMessage(
  env: Env,
  message: ChatMessage,
  agentId: string,
  policy: IntakePolicy = {},
): Promise<IntakeResult> {
  const config = loadConfig(env);
  const owner = await (
    policy.isOwner ?? ((id) => configuredOwners(config, message.platform).includes(id))
  )(message.sender.id);
  if (message.isDirect) {
    const dm = await (
      policy.directMessages ?? ((id) => agentDirectMessages(env, id, message.platform))
    )(agentId);
    // A DM has no server to manage: the agent's policy says whose it takes (default: owners).
    const refused =
      dm === "off" ||
      (dm === "owners" &&
        !(policy.directMessageOwner ? await policy.directMessageOwner(message.sender.id) : owner));
    if (refused) {
      if (policy.tellDmClosed) {
        const notice = { agentId, userId: userIdOf(message), at: message.receivedAt };
        const told = tellDmClosedOnce(env, notice, policy.tellDmClosed);
        if (policy.keepAlive) policy.keepAlive(told);
        else await told;
      }
      return "dm_refused";
    }
  }
  const userId = userIdOf(message);
  // A chat message carries no server permissions: nobody manages through it; the owners
  // named for the platform are owners (docs/security.md).
  const { principal, place } = admit({
    principal: {
      kind: "member",
      platform: message.platform,
      userId,
      manager: false,
      owner,
      guildId: message.spaceId,
    },
    ...(message.place ? { place: message.place } : {}),
    filter: message.filter ?? null,
    ...(message.filtered !== undefined ? { verdict: message.filtered } : {}),
    text: message.text,
    now: message.receivedAt,
    ...(message.transcribed ? { transcribed: true } : {}),
  });
  try {
    const person = {
      kind: "member",
      userId,
      platformName: PLATFORM_NAMES[message.platform],
    } as const;
    await admitRate(env, [personBucket(person, config.rateLimits.perUser)], policy.keepAlive);
  } catch (error) {
    if (error instanceof RateLimitedError) return "rate_limited";
    throw error;
  }
  const queued = await enqueueTurn(env, {
    idempotencyKey: message.turnKey,
    input: {
      turnId: crypto.randomUUID(),
      agentId,
      roomId: message.roomId,
      userId,
      userName: message.sender.name,
      text: message.text,
      attachments: message.attachments ?? [],
      source: message.platform,
      isDirect: message.isDirect,
      mentioned: message.mentioned,
      fromBot: message.sender.isBot,
      receivedAt: message.receivedAt,
      ...(place ? { place } : {}),
      principal,
    },
    delivery: message.delivery,
  });
  return queued.duplicate ? "duplicate" : "queued";
}

/** The member's id across the product: `<platform>:<their id>`. */
function userIdOf(message: ChatMessage): string {
  return `${message.platform}:${message.sender.id}`;
}

/**
 * A webhook client's daily budgets (`memberDailyTokens`, and Slack's workspace `dailyTokens` in
 * /clients/<telegram|slack>/config) as the place policy its messages carry; undefined when none.
 */
export function clientBudgets(config: {
  memberDailyTokens?: number;
  dailyTokens?: number;
}): { place: PlacePolicy } | Record<string, never> {
  const budgets = {
    ...(config.memberDailyTokens ? { member: config.memberDailyTokens } : {}),
    ...(config.dailyTokens ? { server: config.dailyTokens } : {}),
  };
  return Object.keys(budgets).length > 0 ? { place: { budgets } } : {};
}

/**
 * Amends a stored message by the key its turn was queued with: an edit is admitted as a new
 * message would be (./admission.ts), and one the place's filter declines (a clean message edited
 * into spam) removes the stored message instead, so no later prompt reads it.
 */
export async function amendMessage(
  env: Env,
  target: { agentId: string; roomId: string; turnKey: string },
  change:
    | { kind: "edit"; text: string; filter: FilterRules | null | undefined }
    | { kind: "delete" },
  at: number,
): Promise<void> {
  const admitted =
    change.kind === "edit"
      ? admitEdit({ filter: change.filter, text: change.text, now: at })
      : change;
  const room = env.ROOMS.getByName(roomName(target.agentId, target.roomId));
  await room.amendMessage({
    idempotencyKey: target.turnKey,
    change: admitted.kind === "edit" ? admitted : { kind: "delete" },
    at,
  });
}

/** The owner ids configured for a platform (DISCORD_OWNER_IDS, TELEGRAM_OWNER_IDS, SLACK_OWNER_IDS). */
export function configuredOwners(config: Config, platform: MemberPlatform): readonly string[] {
  switch (platform) {
    case "discord":
      return config.discordOwnerIds;
    case "telegram":
      return config.telegramOwnerIds;
    case "slack":
      return config.slackOwnerIds;
  }
}

/**
 * The agent's DM policy on a platform: `settings.<platform>.directMessages`, else the character's
 * `settings.directMessages`, else "owners" (src/characters/settings.ts resolves it).
 */
export async function agentDirectMessages(
  env: Env,
  agentId: string,
  platform: MemberPlatform,
): Promise<DirectMessagePolicy> {
  const record = await stores(env).agents.get(agentId);
  return record?.character.settings.directMessages[platform] ?? "owners";
}
