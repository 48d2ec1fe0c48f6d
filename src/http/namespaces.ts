// Who a REST token may speak as, in which rooms, and whose memories it may name: the routes'
// words for the one check in src/runtime/access/ (which holds the rules: reserved platform
// namespaces, user prefixes, what every user of an agent sees). Also the user-prefix format a
// token is minted with (docs/security.md).
import { z } from "@hono/zod-openapi";
import {
  authorize,
  decide,
  RESERVED_NAMESPACES,
  USER_ROOM_PREFIX,
  type Action,
} from "../runtime/access/index.ts";
import { ForbiddenError } from "../runtime/util/errors.ts";
import type { Memory } from "../runtime/ports/memory.ts";
import type { Principal } from "./app-env.ts";

export { RESERVED_NAMESPACES, USER_ROOM_PREFIX };

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
      !startsWithAny(prefix, [...RESERVED_NAMESPACES.map((ns) => ns.prefix), USER_ROOM_PREFIX]),
    {
      message: `must not start with a reserved namespace (${RESERVED_NAMESPACES.map((ns) => ns.prefix).join(", ")}) or with ${USER_ROOM_PREFIX}`,
    },
  );

function startsWithAny(id: string, prefixes: readonly string[]): boolean {
  const lower = id.toLowerCase();
  return prefixes.some((prefix) => lower.startsWith(prefix));
}

/** The caller may act as (or name) this user, for the route's action. */
export function assertMayNameUser(
  principal: Principal,
  userId: string,
  action: Action = "message.send",
): void {
  authorize(principal, action, { userId });
}

/**
 * The caller may use (or name) this room. `user:<userId>` is that user's private room, so it
 * follows the user rule; a prefix-limited token may also use rooms whose id starts with its prefix.
 */
export function assertMayNameRoom(
  principal: Principal,
  roomId: string,
  action: Action = "message.send",
): void {
  authorize(principal, action, { roomId });
}

/**
 * A memory read or delete filtered by these ids. A prefix-limited token must name one of its
 * users: without a user filter the answer would span every user of the agent.
 */
export function assertMayFilterMemories(
  principal: Principal,
  filter: { userId?: string; roomId?: string },
  action: Extract<Action, "memory.read" | "memory.write"> = "memory.read",
): void {
  authorize(principal, action, { ...filter, spansUsers: true });
}

/**
 * A memory written through POST /memories. A prefix-limited token writes only memories tied to
 * its users or rooms: lore and shared facts reach every user of the agent, so they are refused.
 */
export function assertMayWriteMemory(
  principal: Principal,
  memory: { type: string; userId?: string; roomId?: string; shared?: boolean },
): void {
  authorize(principal, "memory.write", { userId: memory.userId, roomId: memory.roomId });
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
  const decision = decide(principal, "memory.share");
  if (!decision.allowed)
    throw new ForbiddenError(
      principal.userPrefix !== null
        ? `this token is limited to users whose id starts with "${principal.userPrefix}", so it may not write ${what}, which every user of the agent sees`
        : decision.reason,
    );
}

/**
 * Whether a memory a turn used may be shown to the caller reading the room's history (the stream
 * showed it to the turn's own caller). What every user of the agent sees (knowledge, lore, shared
 * facts) may be; else the memory's user and room must be ones the caller may name.
 */
export function mayBeShownMemory(
  principal: Principal,
  memory: Pick<Memory, "userId" | "roomId" | "metadata">,
): boolean {
  const target =
    memory.metadata.shared === true
      ? {}
      : { userId: memory.userId ?? undefined, roomId: memory.roomId ?? undefined };
  return decide(principal, "memory.read", target).allowed;
}
