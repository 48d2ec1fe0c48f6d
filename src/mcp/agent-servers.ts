// An agent's runtime-added MCP servers (src/memory/agent-server-store.ts), read once per character
// object and shared by everything in the isolate that needs them: the room's tool preparer and the
// plugins' services. Characters are shared per isolate and agent version
// (src/room/character-source.ts), and adding or removing a server bumps the version, so a list is
// never used past the version it was read at. A failed read is dropped, to be made again.
import type { Character } from "../runtime/character.ts";
import type { McpServerEntry } from "./registry.ts";

const byCharacter = new WeakMap<Character, Promise<McpServerEntry[]>>();

export function agentServersOf(
  character: Character,
  read: () => Promise<McpServerEntry[]>,
): Promise<McpServerEntry[]> {
  let reading = byCharacter.get(character);
  if (!reading) {
    reading = read();
    byCharacter.set(character, reading);
    reading.catch(() => {
      if (byCharacter.get(character) === reading) byCharacter.delete(character);
    });
  }
  return reading;
}
