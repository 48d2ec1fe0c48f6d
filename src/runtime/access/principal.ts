// Who is asking, as plain data that travels with a turn, a task and a delegation (it crosses RPC
// and is journalled). Every caller is one of these: an API token, a chat platform's member, an
// agent asking for a conversation it serves (with the principal that started that conversation),
// or a schedule run for whoever created it. What each may do is decided in ./authorize.ts only.

export const SCOPES = [
  "admin",
  "agents:read",
  "agents:write",
  "messages:write",
  "memories:read",
  "memories:write",
  "media:write",
  "tools:write",
] as const;
export type Scope = (typeof SCOPES)[number];

/** A REST caller: the admin token or a minted token with its scopes, agents and user prefix. */
export interface TokenPrincipal {
  kind: "token";
  /** `admin-token` for ADMIN_TOKEN, else the minted token's id. */
  id: string;
  scopes: readonly Scope[];
  /** The agents it may act for; null means every agent. */
  agents: readonly string[] | null;
  /** The user-id prefix it may act as; null means no prefix limit. */
  userPrefix: string | null;
}

/** The chat platforms a member can write from; each owns its user-id namespace `<platform>:`. */
export const MEMBER_PLATFORMS = ["discord", "telegram", "slack"] as const;
export type MemberPlatform = (typeof MEMBER_PLATFORMS)[number];

/** Someone writing on a chat platform, as the platform vouched for them (a signed payload). */
export interface MemberPrincipal {
  kind: "member";
  platform: MemberPlatform;
  /** The turn user id: `<platform>:<id>` (`discord:<id>`, `telegram:<id>`). */
  userId: string;
  /** Manages where they wrote (Discord: Manage Server or Administrator in that server). */
  manager: boolean;
  /** One of the bot's owners (DISCORD_OWNER_IDS or the application's owners, TELEGRAM_OWNER_IDS). */
  owner: boolean;
  /**
   * The platform's server they wrote in (a Discord guild, a Slack workspace, DMs included); null
   * in a Discord DM and on Telegram. Absent in principals journalled before it was kept.
   */
  guildId?: string | null;
}

/**
 * An agent asking another agent (ask_agent, delegate_task) for a conversation it serves: `for` is
 * the principal that started that conversation, so a delegation never widens what it may do.
 */
export interface AgentPrincipal {
  kind: "agent";
  agentId: string;
  for: Principal;
}

/** A schedule's run: it acts for whoever created the schedule (null: created before this was kept). */
export interface SchedulePrincipal {
  kind: "schedule";
  scheduleId: string;
  for: Principal | null;
}

export type Principal = TokenPrincipal | MemberPrincipal | AgentPrincipal | SchedulePrincipal;

export const ADMIN_TOKEN_ID = "admin-token";

/** The principal at the root of a chain of agents and schedules: who actually asked. */
export function originOf(principal: Principal): Principal | null {
  let current: Principal | null = principal;
  while (current && (current.kind === "agent" || current.kind === "schedule"))
    current = current.for;
  return current;
}

/**
 * A stable, short, non-secret key for a principal's origin: a token's id, a member's user id.
 * Per-requester rooms and users (a task's, a delegation's) derive from it.
 */
export function requesterKey(principal: Principal | null): string {
  const origin = principal ? originOf(principal) : null;
  if (!origin) return "unknown";
  if (origin.kind === "token") return `token:${origin.id}`;
  if (origin.kind === "member") return origin.userId;
  return "unknown";
}
