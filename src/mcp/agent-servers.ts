// An agent's runtime-added MCP servers (src/db/stores/agent-server-store.ts), read once per character
// object and shared by everything in the isolate that needs them: the room's tool preparer and the
// plugins' services. Characters are shared per isolate and agent version
// (src/objects/shared/character-source.ts), and adding or removing a server bumps the version, so a list is
// never used past the version it was read at (src/runtime/util/per-character.ts).
import type { Character } from "../runtime/character.ts";
import { readOncePer } from "../runtime/util/per-character.ts";
import type { McpServerEntry } from "../mcp-registry.ts";

const byCharacter = new WeakMap<Character, Promise<McpServerEntry[]>>();

export function agentServersOf(
  character: Character,
  read: () => Promise<McpServerEntry[]>,
): Promise<McpServerEntry[]> {
  return readOncePer(byCharacter, character, read);
}
