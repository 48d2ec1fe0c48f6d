// Who speaks, in which room, and which turn a request is, for the OpenAI-compatible route. OpenAI
// clients send the whole conversation every time and no id for it, so the room is derived from
// what stays put in it (its first user message), with the token and user, so two chats of one
// person do not merge. The SDKs send no Idempotency-Key but retry on timeouts and 5xx: the
// request itself is hashed into the room's idempotency key, which replays for a short while.
import type { Principal } from "../../app-env.ts";
import { stableStringify } from "../../../runtime/util/stable-json.ts";
import { sha256Hex } from "../../../runtime/util/hashing.ts";
import type { ChatCompletionRequest } from "./chat-request.ts";

/**
 * How long after a turn replied the same request (an SDK's retry) still gets that reply. Later,
 * the same messages are a new turn (a client's "regenerate"). A turn still running is always the
 * same turn; one that failed is tried again.
 */
export const REPLAY_WINDOW_MS = 2 * 60 * 1000;

/** Hex digits of the hash in a derived room id: 128 bits. */
const ROOM_HASH_CHARS = 32;

/**
 * Who speaks when the request names no `user`: one person per token, inside the token's user
 * prefix (so the token's own rules allow it).
 */
export function defaultUserOf(principal: Principal): string {
  return `${principal.userPrefix ?? ""}openai-${principal.id}`;
}

/**
 * One room per client-side conversation: a hash of the token, the user and the conversation's
 * first user message, inside the token's user prefix. Two chats that open with the same words
 * share a room; a client that knows its conversation id sends it as `metadata.room_id`.
 */
export async function derivedRoomOf(
  principal: Principal,
  userId: string,
  opening: string,
): Promise<string> {
  const hash = await sha256Hex(stableStringify(["room", principal.id, userId, opening]));
  return `${principal.userPrefix ?? ""}chat-${hash.slice(0, ROOM_HASH_CHARS)}`;
}

/**
 * What makes two requests the same: token, agent, room, user and the messages as sent (unknown
 * fields were dropped by the schema). The fingerprint of an Idempotency-Key, and, without one,
 * the key itself.
 */
export async function requestFingerprint(
  principal: Principal,
  body: ChatCompletionRequest,
  roomId: string,
  userId: string,
): Promise<string> {
  return sha256Hex(
    stableStringify(["chat", principal.id, body.model, roomId, userId, body.messages]),
  );
}

/** The room's idempotency key for a request that sent none. */
export function derivedKeyOf(fingerprint: string): string {
  return `openai:${fingerprint}`;
}
