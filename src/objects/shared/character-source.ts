// An agent's character for the objects that serve its turns: read from D1 only when the agent's
// version changed (editing an agent bumps it), kept per isolate. A turn starts on the character
// last read and checks the version alongside its other reads (src/objects/conversation/turn-queue.ts); a missing agent is
// a not-found error, not an empty character.
import type { AgentStore } from "../../db/stores/agent-store.ts";
import type { Character } from "../../runtime/character.ts";
import { AppError, NotFoundError } from "../../runtime/util/errors.ts";

export interface KnownCharacter {
  version: number;
  character: Character;
}

export interface CharacterSource {
  /** The agent's current version; null when there is no such agent. */
  version(agentId: string): Promise<number | null>;
  /** The character as of `version` (from `version()`), read from D1 only when it changed. */
  character(agentId: string, version: number | null): Promise<Character>;
  /** The character this object last read, if any, with its version (no D1 read). */
  known(agentId: string): KnownCharacter | null;
}

/** A turn started on a character that is no longer current: it starts again on the new one. */
export class CharacterChangedError extends AppError {
  constructor(agentId: string) {
    super("conflict", 409, `agent "${agentId}" changed while its turn started`);
  }
}

/** Agents whose characters an isolate keeps; the least recently read go first. */
const MAX_KNOWN = 200;

/**
 * Shared by every object of the isolate (rooms of one agent, a new room included): a character
 * is only ever used after its version was checked, so sharing it cannot serve a stale one.
 */
const knownCharacters = new Map<string, KnownCharacter>();

export function createCharacterSource(
  agents: Pick<AgentStore, "get" | "version">,
): CharacterSource {
  return {
    version: (agentId) => agents.version(agentId),
    async character(agentId, version) {
      if (version === null) throw new NotFoundError(`no agent with id "${agentId}"`);
      const cached = knownCharacters.get(agentId);
      if (cached?.version === version) return cached.character;
      const record = await agents.get(agentId);
      if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
      knownCharacters.delete(agentId);
      knownCharacters.set(agentId, { version: record.updatedAt, character: record.character });
      if (knownCharacters.size > MAX_KNOWN) {
        const oldest = knownCharacters.keys().next().value;
        if (oldest !== undefined) knownCharacters.delete(oldest);
      }
      return record.character;
    },
    known: (agentId) => knownCharacters.get(agentId) ?? null,
  };
}
