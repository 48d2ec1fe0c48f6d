// The one check: may this principal do this action on this (agent, room, user)? Routes, built-in
// tools, delegations, reflections and task answers all ask here, so a new surface cannot forget a
// rule: it names its principal and its action, and the answer (with the reason when it is no) is
// the same everywhere. The table in docs/security.md is this file in prose.
import { ForbiddenError } from "../util/errors.ts";
import {
  type MemberPrincipal,
  type Principal,
  type Scope,
  type TokenPrincipal,
  originOf,
} from "./principal.ts";

/**
 * What a principal may ask for. `memory.share` is writing what every user of the agent sees (lore,
 * shared facts, knowledge); `task.answer` is approving, answering or cancelling someone's task;
 * `task.read` is reading a task, its events or a schedule under the same tenant rule (REST and
 * the MCP server's `get_task`; a list leaves out what it refuses); `turn.read` is reading what a
 * turn kept for the inspector (its user's, and with `content` the prompt's text and the tool
 * calls' arguments and results, which also need `memories:read`).
 */
export type Action =
  | "agent.read"
  | "agent.write"
  | "message.send"
  | "memory.read"
  | "memory.write"
  | "memory.share"
  | "task.answer"
  | "task.read"
  | "turn.read"
  | "tools.write"
  | "media.write"
  | "admin";

export interface Target {
  agentId?: string;
  /** A user the caller acts as or names. */
  userId?: string;
  /** A room the caller speaks in or names. */
  roomId?: string;
  /** For `task.answer` and `task.read`: who started the task (null: not recorded, a task from before it was). */
  requester?: Principal | null;
  /** For `memory.read` and `memory.write` by a user-prefix token: the request names no user. */
  spansUsers?: boolean;
  /** For `turn.read`: whose turn it was. */
  turnUserId?: string;
  /** For `turn.read`: the prompt's text and the tools' arguments and results are asked for too. */
  content?: boolean;
}

export type Decision = { allowed: true } | { allowed: false; reason: string };

const SCOPE_OF: Record<Action, Scope> = {
  "agent.read": "agents:read",
  "agent.write": "agents:write",
  "message.send": "messages:write",
  "memory.read": "memories:read",
  "memory.write": "memories:write",
  "memory.share": "memories:write",
  "task.answer": "messages:write",
  "task.read": "agents:read",
  "turn.read": "agents:read",
  "tools.write": "tools:write",
  "media.write": "media:write",
  admin: "admin",
};

/**
 * Namespaces of user and room ids that belong to one surface, which creates them itself: over
 * REST only the admin token names them. One rule for every platform: its namespace is its own.
 */
export const RESERVED_NAMESPACES = [
  { prefix: "discord:", owner: "the Discord surfaces" },
  { prefix: "telegram:", owner: "the Telegram surface" },
  { prefix: "slack:", owner: "the Slack surface" },
  { prefix: "agent:", owner: "agent-to-agent rooms" },
  { prefix: "task:", owner: "tasks (their rooms and the users they remember as)" },
] as const;

/** A user's private room over REST: the default room of POST /agents/:agentId/messages. */
export const USER_ROOM_PREFIX = "user:";

const ALLOWED: Decision = { allowed: true };
const refuse = (reason: string): Decision => ({ allowed: false, reason });

export function decide(principal: Principal, action: Action, target: Target = {}): Decision {
  switch (principal.kind) {
    case "token":
      return decideForToken(principal, action, target);
    case "member":
      return decideForMember(principal, action, target);
    case "agent":
    case "schedule":
      // An agent's turn in another agent's room, or a schedule's run: the hop itself was
      // consented to when the delegates or the schedule were configured; beyond it, it may do
      // only what whoever it acts for may (its internal room and user are not named).
      if (action === "message.send") return ALLOWED;
      if (!principal.for)
        return refuse("this schedule was created before schedules kept their creator");
      return decide(principal.for, action, {
        agentId: target.agentId,
        requester: target.requester,
      });
  }
}

/** As decide, throwing ForbiddenError (403, with the reason) when the answer is no. */
export function authorize(principal: Principal, action: Action, target: Target = {}): void {
  const decision = decide(principal, action, target);
  if (!decision.allowed) throw new ForbiddenError(decision.reason);
}

export function isAdminToken(principal: Principal): boolean {
  return principal.kind === "token" && principal.scopes.includes("admin");
}

/** The scope a token needs for `action` (its other limits aside). */
export function scopeOf(action: Action): Scope {
  return SCOPE_OF[action];
}

export function hasScope(principal: TokenPrincipal, scope: Scope): boolean {
  return principal.scopes.includes("admin") || principal.scopes.includes(scope);
}

export function mayActFor(token: TokenPrincipal, agentId: string): boolean {
  return token.agents === null || token.agents.includes(agentId);
}

function decideForToken(token: TokenPrincipal, action: Action, target: Target): Decision {
  const scope = SCOPE_OF[action];
  if (!hasScope(token, scope))
    return refuse(
      `this token lacks the \`${scope}\` scope (it has: ${token.scopes.join(", ") || "none"})`,
    );
  if (target.agentId !== undefined && !mayActFor(token, target.agentId))
    return refuse(`this token may not act for agent "${target.agentId}"`);
  if (token.scopes.includes("admin")) return ALLOWED;
  if (target.userId !== undefined) {
    const why = userRefusal(token, target.userId);
    if (why) return refuse(why);
  }
  if (target.roomId !== undefined) {
    const why = roomRefusal(token, target.roomId);
    if (why) return refuse(why);
  }
  const prefix = token.userPrefix;
  switch (action) {
    case "memory.share":
      if (prefix !== null)
        return refuse(agentWideRefusal(prefix, "what every user of the agent sees"));
      return ALLOWED;
    case "memory.read":
    case "memory.write":
      if (prefix !== null && target.spansUsers === true && target.userId === undefined)
        return refuse(
          `this token is limited to users whose id starts with "${prefix}": name one of them in \`userId\``,
        );
      return ALLOWED;
    case "task.answer":
      return taskTenantRefusal(token, target.requester ?? null, "answer or cancel");
    case "task.read":
      return taskTenantRefusal(token, target.requester ?? null, "read");
    case "turn.read":
      return turnReadRefusal(token, target);
    default:
      return ALLOWED;
  }
}

function decideForMember(member: MemberPrincipal, action: Action, target: Target): Decision {
  switch (action) {
    case "message.send":
      return ALLOWED;
    case "memory.share":
    case "agent.write":
    case "tools.write":
      return member.manager || member.owner
        ? ALLOWED
        : refuse(
            `only server managers (Manage Server) and the bot's owners may ${action === "memory.share" ? "share what every member sees" : "manage the agent"}`,
          );
    case "task.answer": {
      const requester = target.requester ? originOf(target.requester) : null;
      return requester?.kind === "member" && requester.userId === member.userId
        ? ALLOWED
        : refuse("only the person who started this task may answer it");
    }
    default:
      return refuse(`a ${member.platform} member may not ${action.replace(".", " ")} here`);
  }
}

/**
 * A turn in outline (sections' names and sizes, tool names, timing) for a reader of the agent; a
 * prefix token only its own users' turns. The prompt's text and the tools' arguments and results
 * hold the person's facts, their history and what recall found, so they also need `memories:read`
 * (as GET /memories does), and never go to a prefix token: the prompt also holds the character's
 * instructions and what every user shares.
 */
function turnReadRefusal(token: TokenPrincipal, target: Target): Decision {
  const prefix = token.userPrefix;
  if (prefix !== null && (target.turnUserId === undefined || !target.turnUserId.startsWith(prefix)))
    return refuse(`this turn is not one of the users whose id starts with "${prefix}"`);
  if (target.content !== true) return ALLOWED;
  if (!hasScope(token, "memories:read"))
    return refuse(
      "a turn's prompt and tool results hold what the agent remembers: reading them needs the `memories:read` scope",
    );
  if (prefix !== null)
    return refuse(
      `this token is limited to users whose id starts with "${prefix}": it may not read a turn's prompt or tool results`,
    );
  return ALLOWED;
}

/**
 * The task's own requester, or a token of the same tenant: the same user prefix, or, for tasks
 * of no prefix (an operator's, a member's, a schedule's), a token without one.
 */
function taskTenantRefusal(
  token: TokenPrincipal,
  requester: Principal | null,
  verb: string,
): Decision {
  const origin = requester ? originOf(requester) : null;
  if (origin?.kind === "token" && origin.id === token.id) return ALLOWED;
  const tenant = origin?.kind === "token" ? origin.userPrefix : null;
  if (token.userPrefix === tenant) return ALLOWED;
  return refuse(
    tenant === null
      ? `this task was not started by users whose id starts with "${token.userPrefix}"; this token may not ${verb} it`
      : `this task belongs to users whose id starts with "${tenant}"; this token may not ${verb} it`,
  );
}

function agentWideRefusal(prefix: string, what: string): string {
  return `this token is limited to users whose id starts with "${prefix}", so it may not write ${what}, which every user of the agent sees`;
}

/** The reserved namespace an id is in, compared without case (`Discord:1` is refused as well). */
export function reservedNamespaceOf(id: string): (typeof RESERVED_NAMESPACES)[number] | null {
  const lower = id.toLowerCase();
  return RESERVED_NAMESPACES.find((ns) => lower.startsWith(ns.prefix)) ?? null;
}

function reservedRefusal(kind: "user" | "room", id: string): string | null {
  const ns = reservedNamespaceOf(id);
  return ns
    ? `${kind} "${id}" is in the reserved "${ns.prefix}" namespace, which belongs to ${ns.owner}; only the admin token may name it over REST`
    : null;
}

function userRefusal(token: TokenPrincipal, userId: string): string | null {
  const reserved = reservedRefusal("user", userId);
  if (reserved) return reserved;
  const prefix = token.userPrefix;
  // Compared exactly, case included: `ACME:bob` is not a user of `acme:`.
  if (prefix !== null && !userId.startsWith(prefix))
    return `this token acts only as users whose id starts with "${prefix}"; "${userId}" does not`;
  return null;
}

/** `user:<userId>` is that user's private room, so it follows the user rule. */
function roomRefusal(token: TokenPrincipal, roomId: string): string | null {
  const reserved = reservedRefusal("room", roomId);
  if (reserved) return reserved;
  if (roomId.startsWith(USER_ROOM_PREFIX))
    return userRefusal(token, roomId.slice(USER_ROOM_PREFIX.length));
  const prefix = token.userPrefix;
  if (prefix !== null && !roomId.startsWith(prefix))
    return `room "${roomId}" is not this token's: it may use rooms whose id starts with "${prefix}" and the private rooms "${USER_ROOM_PREFIX}<userId>" of its users`;
  return null;
}
