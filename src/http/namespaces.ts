// Who a REST token may speak as, in which rooms, and whose memories it may name. Platform
// namespaces are reserved: `discord:` users and rooms belong to the Discord surfaces, `agent:` ones
// to agent-to-agent rooms; over REST only the admin token names them. A token minted with a
// `userPrefix` acts only as users whose id starts with it, in rooms that are theirs. Every route
// that takes a user or room id asks here, so the rule lives in one place (docs/security.md).
import { z } from "@hono/zod-openapi";
import { ForbiddenError } from "../runtime/errors.ts";
import type { Principal } from "./app-env.ts";

/** Namespaces of user and room ids that REST callers (other than admin) may not name. */
export const RESERVED_NAMESPACES = [
  { prefix: "discord:", owner: "the Discord surfaces" },
  { prefix: "agent:", owner: "agent-to-agent rooms" },
] as const;

/** A user's private room over REST: the default room of POST /agents/:agentId/messages. */
export const USER_ROOM_PREFIX = "user:";
/** Rooms the task runner names itself (`task:<taskId>`). */
const TASK_ROOM_PREFIX = "task:";
export const MAX_USER_PREFIX_CHARS = 64;

export function defaultRoomOf(userId: string): string {
  return `${USER_ROOM_PREFIX}${userId}`;
}

/**
 * A token's user-id prefix: the external id charset, and not a namespace of its own (reserved,
 * or the `user:` and `task:` rooms, which would let it name other users' rooms).
 */
export const UserPrefix = z
  .string()
  // Bounded in the pattern itself, so /openapi.json tells clients (and generators) the length too.
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$/,
    `1-${MAX_USER_PREFIX_CHARS} letters, digits or . _ : @ -, starting with a letter or digit`,
  )
  .refine(
    (prefix) =>
      !startsWithAny(prefix, [
        ...RESERVED_NAMESPACES.map((ns) => ns.prefix),
        USER_ROOM_PREFIX,
        TASK_ROOM_PREFIX,
      ]),
    {
      message: `must not start with a reserved namespace (${RESERVED_NAMESPACES.map((ns) => ns.prefix).join(", ")}) or with ${USER_ROOM_PREFIX} or ${TASK_ROOM_PREFIX}`,
    },
  );

export function isAdmin(principal: Principal): boolean {
  return principal.scopes.includes("admin");
}

/** The reserved namespace an id is in, compared without case (`Discord:1` is refused as well). */
function reservedNamespaceOf(id: string): (typeof RESERVED_NAMESPACES)[number] | null {
  const lower = id.toLowerCase();
  return RESERVED_NAMESPACES.find((ns) => lower.startsWith(ns.prefix)) ?? null;
}

function startsWithAny(id: string, prefixes: readonly string[]): boolean {
  const lower = id.toLowerCase();
  return prefixes.some((prefix) => lower.startsWith(prefix));
}

function refuseReserved(kind: "user" | "room", id: string): void {
  const ns = reservedNamespaceOf(id);
  if (ns) {
    throw new ForbiddenError(
      `${kind} "${id}" is in the reserved "${ns.prefix}" namespace, which belongs to ${ns.owner}; only the admin token may name it over REST`,
    );
  }
}

/** The caller may act as (or name) this user. */
export function assertMayNameUser(principal: Principal, userId: string): void {
  if (isAdmin(principal)) return;
  refuseReserved("user", userId);
  const prefix = principal.userPrefix;
  if (prefix !== null && !userId.startsWith(prefix)) {
    throw new ForbiddenError(
      `this token acts only as users whose id starts with "${prefix}"; "${userId}" does not`,
    );
  }
}

/**
 * The caller may use (or name) this room. `user:<userId>` is that user's private room, so it
 * follows the user rule; a prefix-limited token may also use rooms whose id starts with its prefix.
 */
export function assertMayNameRoom(principal: Principal, roomId: string): void {
  if (isAdmin(principal)) return;
  refuseReserved("room", roomId);
  if (roomId.startsWith(USER_ROOM_PREFIX)) {
    assertMayNameUser(principal, roomId.slice(USER_ROOM_PREFIX.length));
    return;
  }
  const prefix = principal.userPrefix;
  if (prefix !== null && !roomId.startsWith(prefix)) {
    throw new ForbiddenError(
      `room "${roomId}" is not this token's: it may use rooms whose id starts with "${prefix}" and the private rooms "${USER_ROOM_PREFIX}<userId>" of its users`,
    );
  }
}

/**
 * A memory read or delete filtered by these ids. A prefix-limited token must name one of its
 * users: without a user filter the answer would span every user of the agent.
 */
export function assertMayFilterMemories(
  principal: Principal,
  filter: { userId?: string; roomId?: string },
): void {
  if (isAdmin(principal)) return;
  if (filter.roomId !== undefined) assertMayNameRoom(principal, filter.roomId);
  if (filter.userId !== undefined) {
    assertMayNameUser(principal, filter.userId);
  } else if (principal.userPrefix !== null) {
    throw new ForbiddenError(
      `this token is limited to users whose id starts with "${principal.userPrefix}": name one of them in \`userId\``,
    );
  }
}

/**
 * A memory written through POST /memories. A prefix-limited token writes only memories tied to
 * its users or rooms: lore and shared facts reach every user of the agent, so they are refused.
 */
export function assertMayWriteMemory(
  principal: Principal,
  memory: { type: string; userId?: string; roomId?: string; shared?: boolean },
): void {
  if (isAdmin(principal)) return;
  if (memory.userId !== undefined) assertMayNameUser(principal, memory.userId);
  if (memory.roomId !== undefined) assertMayNameRoom(principal, memory.roomId);
  if (principal.userPrefix === null) return;
  if (memory.type === "lore" || memory.shared === true)
    assertMayWriteAgentWide(
      principal,
      `a ${memory.shared === true ? "shared fact" : "lore memory"}`,
    );
  if (memory.userId === undefined && memory.roomId === undefined)
    assertMayWriteAgentWide(principal, "a memory with neither userId nor roomId");
}

/** Something every user of the agent sees (knowledge, lore, shared facts): not for a prefix-limited token. */
export function assertMayWriteAgentWide(principal: Principal, what: string): void {
  if (isAdmin(principal) || principal.userPrefix === null) return;
  throw new ForbiddenError(
    `this token is limited to users whose id starts with "${principal.userPrefix}", so it may not write ${what}, which every user of the agent sees`,
  );
}
