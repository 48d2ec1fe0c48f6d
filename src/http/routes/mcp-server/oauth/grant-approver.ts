// An OAuth grant on an agent's MCP server lasts only as long as the API token that approved it: a
// grant whose approver was revoked, has expired or no longer exists works no more, at the next
// request (within TOKEN_CACHE_MS on isolates that had the token cached, as for the token itself)
// and at the token endpoint, where refusing also deletes the grant with its tokens
// (authorization-server.ts). Grants ADMIN_TOKEN approved last until revoked themselves.
import type { TokenRecord } from "../../../../db/stores/token-store.ts";
import type { Env } from "../../../../env.ts";
import { ADMIN_TOKEN_ID } from "../../../../runtime/access/index.ts";
import { findTokenById } from "../../../known-tokens.ts";

/** Why a grant's approver no longer stands (null while it does). */
export const APPROVER_LAPSES = ["revoked", "expired", "unknown", "other_agent"] as const;
export type ApproverLapse = (typeof APPROVER_LAPSES)[number];

/** Pure: whether the approving token's record still lets its grant on `agentId` stand. */
export function approverLapse(
  record: TokenRecord | null,
  agentId: string,
  now: number,
): ApproverLapse | null {
  if (record === null) return "unknown";
  if (record.revokedAt !== null) return "revoked";
  if (record.expiresAt !== null && record.expiresAt <= now) return "expired";
  if (record.agents !== null && !record.agents.includes(agentId)) return "other_agent";
  return null;
}

/** The lapse of the grant's approver (`approvedBy`, a token id or ADMIN_TOKEN's), or null. */
export async function grantApproverLapse(
  env: Env,
  grant: { approvedBy?: unknown; agentId?: unknown },
  now = Date.now(),
): Promise<ApproverLapse | null> {
  const { approvedBy, agentId } = grant;
  if (typeof approvedBy !== "string" || typeof agentId !== "string") return "unknown";
  if (approvedBy === ADMIN_TOKEN_ID) return null;
  return approverLapse(await findTokenById(env, approvedBy, now), agentId, now);
}
