// What `npm run discord:register` changes: the registered commands compared with COMMANDS by the
// fields we set. Registration itself is one bulk overwrite (PUT), which Discord applies atomically
// and which is idempotent; this diff only says what it did.
import type { CommandDefinition } from "./commands.ts";

export interface CommandChanges {
  added: string[];
  updated: string[];
  removed: string[];
  unchanged: string[];
}

export function diffCommands(
  registered: readonly Record<string, unknown>[],
  wanted: readonly CommandDefinition[],
): CommandChanges {
  const byName = new Map(registered.map((command) => [String(command.name), command]));
  const changes: CommandChanges = { added: [], updated: [], removed: [], unchanged: [] };
  for (const command of wanted) {
    const current = byName.get(command.name);
    if (!current) changes.added.push(command.name);
    else if (comparable(current) !== comparable(command as unknown as Record<string, unknown>))
      changes.updated.push(command.name);
    else changes.unchanged.push(command.name);
  }
  for (const name of byName.keys())
    if (!wanted.some((command) => command.name === name)) changes.removed.push(name);
  return changes;
}

/** The fields we define, with Discord's defaults filled in, as stable JSON. */
function comparable(command: Record<string, unknown>): string {
  return JSON.stringify({
    name: command.name,
    description: command.description,
    options: comparableOptions(command.options),
    default_member_permissions: command.default_member_permissions ?? null,
    contexts: command.contexts ?? null,
  });
}

/** Options, a subcommand's own options included. */
function comparableOptions(options: unknown): unknown[] {
  return ((options as Record<string, unknown>[] | undefined) ?? []).map((option) => ({
    type: option.type,
    name: option.name,
    description: option.description,
    required: option.required ?? false,
    autocomplete: option.autocomplete ?? false,
    max_length: option.max_length ?? null,
    min_value: option.min_value ?? null,
    max_value: option.max_value ?? null,
    // Discord adds its own fields to a choice (name_localizations): compare ours only.
    choices:
      (option.choices as Array<Record<string, unknown>> | undefined)?.map((choice) => ({
        name: choice.name,
        value: choice.value,
      })) ?? null,
    options: comparableOptions(option.options),
  }));
}
