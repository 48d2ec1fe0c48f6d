// The character section of the system prompt: who the agent is, its background, style and a few
// example exchanges. Selection is deterministic (first N) so the prompt prefix stays stable from
// turn to turn, which is what model APIs' prompt caching rewards.
import type { Character, ExampleLine } from "../character.ts";
import type { Provider } from "./compose-state.ts";

const MAX_LORE_LINES = 8;
const MAX_EXAMPLES = 3;

export const characterProvider: Provider = {
  name: "character",
  position: 0,
  slot: "system",
  async get({ character }) {
    return { text: renderCharacter(character) };
  },
};

export function renderCharacter(character: Character): string {
  const name = character.name;
  const parts: string[] = [];
  parts.push(
    character.system?.trim() ||
      `You are ${name}${character.username ? ` (@${character.username})` : ""}. Stay in character.`,
  );
  if (character.bio.length > 0) parts.push(section(`About ${name}`, character.bio));
  if (character.lore.length > 0)
    parts.push(section("Background", character.lore.slice(0, MAX_LORE_LINES)));
  if (character.topics.length > 0)
    parts.push(`# Topics ${name} knows well\n${character.topics.join(", ")}`);
  if (character.adjectives.length > 0)
    parts.push(`# Personality\n${character.adjectives.join(", ")}`);
  const style = [...character.style.all, ...character.style.chat];
  if (style.length > 0) parts.push(section("How to write", style));
  const examples = character.messageExamples
    .slice(0, MAX_EXAMPLES)
    .filter((example) => example.length > 0);
  if (examples.length > 0) {
    const rendered = examples
      .map((example) => example.map((line) => renderLine(line, name)).join("\n"))
      .join("\n\n");
    parts.push(`# Example conversations (for tone only; never repeat them)\n${rendered}`);
  }
  return parts.join("\n\n");
}

function section(title: string, lines: string[]): string {
  return `# ${title}\n${lines.map((line) => `- ${line}`).join("\n")}`;
}

function renderLine(line: ExampleLine, name: string): string {
  // ElizaOS examples name people `{{user1}}`, `{{name1}}` and the agent `{{agentName}}` or its name.
  const speaker = line.speaker
    .replace(/\{\{(agentName|name)\}\}/g, name)
    .replace(/\{\{(user|name)(\d+)\}\}/g, (_, _kind: string, n: string) => `User${n}`);
  return `${speaker}: ${line.text}`;
}
