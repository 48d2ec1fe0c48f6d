// A skill as a file, in the Agent Skills shape: YAML front matter with `name` and `description`,
// then the markdown body (a folder holding SKILL.md is read the same). Only those two keys are
// read, each a one-line scalar, plain or quoted; other keys (license, metadata, ...) are ignored,
// so skills written for other runtimes load as they are. `npm run skills -- add` and `show` use it.

export class SkillFileError extends Error {}

export interface SkillFile {
  name: string;
  description: string;
  body: string;
}

const FENCE = /^---\s*$/;

export function parseSkillFile(text: string, where: string): SkillFile {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (!FENCE.test(lines[0] ?? ""))
    throw new SkillFileError(
      `${where} has no front matter: start it with ---, then name: and description: lines, then ---`,
    );
  const end = lines.findIndex((line, index) => index > 0 && FENCE.test(line));
  if (end < 0) throw new SkillFileError(`${where}: the front matter has no closing ---`);
  const fields = new Map<string, string>();
  for (const line of lines.slice(1, end)) {
    // Top-level `key: value` only; nested or continued lines belong to keys not read here.
    const match = /^([A-Za-z][\w-]*):\s*(.*)$/.exec(line);
    if (match) fields.set(match[1]!, unquote(match[2]!.trim()));
  }
  const name = fields.get("name");
  const description = fields.get("description");
  const missing = [!name && "name", !description && "description"].filter(Boolean);
  if (missing.length > 0)
    throw new SkillFileError(`${where}: the front matter lacks ${missing.join(" and ")}`);
  const body = lines
    .slice(end + 1)
    .join("\n")
    .trim();
  if (!body) throw new SkillFileError(`${where} has no body after its front matter`);
  return { name: name!, description: description!, body };
}

export function formatSkillFile(skill: SkillFile): string {
  return `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description)}\n---\n\n${skill.body}\n`;
}

function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(value);
      if (typeof parsed === "string") return parsed;
    } catch {
      // Not JSON-style escapes: keep the text between the quotes.
    }
    return value.slice(1, -1);
  }
  // YAML single quotes: '' is a quote.
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'"))
    return value.slice(1, -1).replaceAll("''", "'");
  return value;
}
