// Turns an untrusted character file (ElizaOS v1 or legacy v0.x JSON, already parsed) into the one
// internal `Character` form, or throws a ValidationError listing every failing field by dotted
// path. Also the public view of a character, which names its secrets but never shows them.

import type { z } from "zod";
import type {
  Character,
  CharacterFormat,
  ExampleLine,
  KnowledgeItem,
} from "../runtime/character.ts";
import { ValidationError } from "../runtime/util/errors.ts";
import { isPlainObject } from "./limits.ts";
import { LEGACY_KEYS, characterV0Schema, type CharacterV0File } from "./schema-v0.ts";
import { characterV1Schema, type CharacterV1File, type ExampleLineFile } from "./schema-v1.ts";
import { splitSettings } from "./settings.ts";

/** A hostile file can fail in thousands of places; the first ones are enough to fix it. */
export const MAX_REPORTED_ISSUES = 100;

export interface CharacterIssue {
  /** Dotted path into the file, array indexes included (`messageExamples.0.1.content`); "" is the root. */
  path: string;
  message: string;
}

export type PublicCharacter = Omit<Character, "secrets"> & { secretNames: string[] };

export function parseCharacter(input: unknown): Character {
  if (!isPlainObject(input))
    throw invalidCharacter([{ path: "", message: "expected a JSON object" }]);
  const format = detectFormat(input);
  if (format === "v0") {
    const result = characterV0Schema.safeParse(input);
    if (!result.success) throw invalidCharacter(toIssues(result.error.issues));
    return fromV0(result.data);
  }
  const result = characterV1Schema.safeParse(input);
  if (!result.success) throw invalidCharacter(toIssues(result.error.issues));
  return fromV1(result.data, "v1");
}

/** What the API may show: everything but secret values. */
export function publicCharacter(character: Character): PublicCharacter {
  const { secrets, ...rest } = character;
  return { ...rest, secretNames: Object.keys(secrets).sort() };
}

function detectFormat(input: Record<string, unknown>): CharacterFormat {
  if (LEGACY_KEYS.some((key) => input[key] !== undefined)) return "v0";
  return usesLegacySpeakers(input.messageExamples) ? "v0" : "v1";
}

function usesLegacySpeakers(examples: unknown): boolean {
  if (!Array.isArray(examples)) return false;
  return examples.some(
    (conversation) =>
      Array.isArray(conversation) &&
      conversation.some((line) => isPlainObject(line) && line.user !== undefined),
  );
}

function fromV0(file: CharacterV0File): Character {
  const character = fromV1(file, "v0");
  return {
    ...character,
    lore: file.lore ?? [],
    clients: file.clients ?? [],
    ...(file.modelProvider !== undefined && { modelProvider: file.modelProvider }),
    ...(file.clientConfig !== undefined && { clientConfig: file.clientConfig }),
  };
}

function fromV1(file: CharacterV1File, format: CharacterFormat): Character {
  const { settings, extraSettings, secrets: settingsSecrets } = splitSettings(file.settings);
  return {
    format,
    ...(file.id !== undefined && { id: file.id }),
    name: file.name,
    ...(file.username !== undefined && { username: file.username }),
    ...(file.system !== undefined && { system: file.system }),
    bio: file.bio,
    lore: [],
    messageExamples: (file.messageExamples ?? []).map((conversation) =>
      conversation.map(toExampleLine),
    ),
    postExamples: file.postExamples ?? [],
    topics: file.topics ?? [],
    adjectives: file.adjectives ?? [],
    knowledge: (file.knowledge ?? []).map(toKnowledgeItem),
    plugins: file.plugins ?? [],
    style: {
      all: file.style?.all ?? [],
      chat: file.style?.chat ?? [],
      post: file.style?.post ?? [],
    },
    templates: file.templates ?? {},
    settings,
    extraSettings,
    // Top-level secrets win over the ElizaOS-style `settings.secrets`.
    secrets: { ...settingsSecrets, ...file.secrets },
    clients: [],
  };
}

function toExampleLine(line: ExampleLineFile): ExampleLine {
  const actions =
    line.content.actions ?? (line.content.action !== undefined ? [line.content.action] : undefined);
  return {
    // The schema guarantees one of the two; `name` wins when a file has both.
    speaker: line.name ?? line.user ?? "",
    text: line.content.text ?? "",
    ...(actions !== undefined && { actions }),
  };
}

function toKnowledgeItem(item: {
  text?: string;
  path?: string;
  directory?: string;
  shared?: boolean;
}): KnowledgeItem {
  const shared = item.shared ?? false;
  if (item.path !== undefined) return { kind: "path", path: item.path, shared };
  if (item.directory !== undefined) return { kind: "directory", directory: item.directory, shared };
  return { kind: "text", text: item.text ?? "" };
}

function toIssues(zodIssues: readonly z.core.$ZodIssue[]): CharacterIssue[] {
  return zodIssues.map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
}

function invalidCharacter(issues: CharacterIssue[]): ValidationError {
  const reported = issues.slice(0, MAX_REPORTED_ISSUES);
  if (issues.length > reported.length) {
    reported.push({
      path: "",
      message: `${issues.length - reported.length} more problems not listed`,
    });
  }
  return new ValidationError("invalid character file", { issues: reported });
}
