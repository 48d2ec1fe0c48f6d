// The names people see in Slack (users.info's display name, else real name, else handle), kept per
// isolate for an hour so a busy thread costs one lookup per person, not one per message. A failed
// lookup (users:read missing, a deleted user) falls back to the id: a turn never waits on a name.
import { errorField, log } from "../../log.ts";
import type { SlackWebApi } from "./web-api.ts";

export const MEMBER_NAME_TTL_MS = 60 * 60 * 1000;
/** Enough for a large workspace's active members; the oldest entry goes first beyond it. */
const MAX_CACHED = 2_000;

const names = new Map<string, { name: string; at: number }>();

export async function memberName(
  api: SlackWebApi,
  userId: string,
  now: number = Date.now(),
): Promise<string> {
  const hit = names.get(userId);
  if (hit && now - hit.at < MEMBER_NAME_TTL_MS) return hit.name;
  try {
    const user = await api.usersInfo(userId);
    const name = user.real_name?.trim() || user.name || userId;
    names.delete(userId);
    names.set(userId, { name, at: now });
    if (names.size > MAX_CACHED) names.delete(names.keys().next().value!);
    return name;
  } catch (error) {
    log.warn("slack_member_name_failed", { error: errorField(error) });
    return userId;
  }
}

/** Forgets every name (tests start a fresh isolate with it). */
export function forgetMemberNames(): void {
  names.clear();
}
