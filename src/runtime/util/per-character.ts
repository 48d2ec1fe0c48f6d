// A read made once per character object and shared by everything in the isolate that needs it.
// Characters are shared per isolate and agent version (src/objects/shared/character-source.ts), and changing
// what such a read depends on (an agent's MCP servers, its skills) bumps the version, so a result
// is never used past the version it was read at. A failed read is dropped, to be made again.
import type { Character } from "../character.ts";

export function readOncePer<T>(
  shared: WeakMap<Character, Promise<T>>,
  character: Character,
  read: () => Promise<T>,
): Promise<T> {
  let reading = shared.get(character);
  if (!reading) {
    reading = read();
    shared.set(character, reading);
    reading.catch(() => {
      if (shared.get(character) === reading) shared.delete(character);
    });
  }
  return reading;
}
