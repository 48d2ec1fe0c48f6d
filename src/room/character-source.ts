// An agent's character for an object that serves many turns: the agent's version is one small D1
// read per turn, and the character itself is read again only when that version changed (editing
// an agent bumps it). A missing agent is a not-found error, not an empty character.
import type { AgentStore } from "../memory/agent-store.ts";
import type { Character } from "../runtime/character.ts";
import { NotFoundError } from "../runtime/errors.ts";

export interface CharacterSource {
  /** The agent's current version; null when there is no such agent. */
  version(agentId: string): Promise<number | null>;
  /** The character as of `version` (from `version()`), read from D1 only when it changed. */
  character(agentId: string, version: number | null): Promise<Character>;
}

export function createCharacterSource(
  agents: Pick<AgentStore, "get" | "version">,
): CharacterSource {
  let cached: { version: number; character: Character } | null = null;
  return {
    version: (agentId) => agents.version(agentId),
    async character(agentId, version) {
      if (version === null) throw new NotFoundError(`no agent with id "${agentId}"`);
      if (cached?.version === version) return cached.character;
      const record = await agents.get(agentId);
      if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
      cached = { version: record.updatedAt, character: record.character };
      return record.character;
    },
  };
}
