// Remembers, per isolate and for a short time, which agent ids exist, so a chat message does not
// cost a D1 round trip in the worker just to answer 404 for unknown agents. Only presence is cached:
// the room re-reads the agent's version itself on every turn, so a deleted or edited agent is
// never served stale; at worst a just-deleted agent gets its 404 from the room instead.
import type { Env } from "../env.ts";
import { NotFoundError } from "../runtime/util/errors.ts";
import { stores } from "../db/stores/index.ts";

const KNOWN_AGENT_TTL_MS = 30_000;
const MAX_KNOWN_AGENTS = 1_000;
const known = new Map<string, number>();

export async function assertAgentExists(
  env: Env,
  agentId: string,
  now = Date.now(),
): Promise<void> {
  const expires = known.get(agentId);
  if (expires !== undefined && expires > now) return;
  if ((await stores(env).agents.version(agentId)) === null) {
    known.delete(agentId);
    throw new NotFoundError(`no agent with id "${agentId}"`);
  }
  if (known.size >= MAX_KNOWN_AGENTS) {
    // Maps iterate in insertion order: drop the oldest entry.
    const oldest = known.keys().next().value;
    if (oldest !== undefined) known.delete(oldest);
  }
  known.delete(agentId);
  known.set(agentId, now + KNOWN_AGENT_TTL_MS);
}

export function forgetAgent(agentId: string): void {
  known.delete(agentId);
}
