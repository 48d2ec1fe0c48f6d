// Which plugins an agent runs and with what settings: those its character lists in `plugins` and
// those on by default, minus any whose `settings.plugins.<name>.enabled` is false; each with its
// `settings.plugins.<name>` checked by the plugin's schema. Names no plugin has (an ElizaOS file's
// `@elizaos/plugin-...`) are kept and reported, never an error, so character files stay portable.
import type { z } from "zod";
import type { CharacterIssue } from "../characters/parse-character.ts";
import type { Character } from "../runtime/character.ts";
import type { Plugin, PluginDeployment } from "./plugin-api.ts";

export interface ActivePlugin {
  plugin: Plugin;
  /** Parsed by the plugin's schema (undefined for a plugin without settings). */
  settings: unknown;
}

export interface PluginReport {
  /** Plugins this agent runs, in registry order. */
  enabled: string[];
  /** Names in the character's `plugins` that no plugin of this deployment has. */
  unknown: string[];
  /** Every bad path under `settings.plugins`; empty when they are all valid. */
  issues: CharacterIssue[];
}

export function resolvePlugins(
  character: Character,
  plugins: readonly Plugin[],
  deployment: PluginDeployment,
): { active: ActivePlugin[]; report: PluginReport } {
  const issues: CharacterIssue[] = [];
  const raw = character.extraSettings.plugins;
  const all = isRecord(raw) ? raw : {};
  if (raw !== undefined && !isRecord(raw))
    issues.push({ path: "settings.plugins", message: "expected an object of plugin settings" });
  const listed = new Set(character.plugins);
  const active: ActivePlugin[] = [];
  for (const plugin of plugins) {
    const path = `settings.plugins.${plugin.name}`;
    const own = all[plugin.name];
    let enabled: unknown;
    let rest: Record<string, unknown> = {};
    if (own !== undefined && !isRecord(own)) {
      issues.push({ path, message: "expected an object" });
    } else if (own) {
      ({ enabled, ...rest } = own);
      if (enabled !== undefined && typeof enabled !== "boolean")
        issues.push({ path: `${path}.enabled`, message: "expected true or false" });
    }
    const settings = parseSettings(plugin, rest, path, issues);
    const on =
      enabled !== false && (listed.has(plugin.name) || plugin.enabledByDefault(deployment));
    if (on && settings.ok) active.push({ plugin, settings: settings.value });
  }
  const known = new Set(plugins.map((plugin) => plugin.name));
  return {
    active,
    report: {
      enabled: active.map((entry) => entry.plugin.name),
      unknown: character.plugins.filter((name) => !known.has(name)),
      issues,
    },
  };
}

function parseSettings(
  plugin: Plugin,
  rest: Record<string, unknown>,
  path: string,
  issues: CharacterIssue[],
): { ok: true; value: unknown } | { ok: false } {
  if (!plugin.settings) {
    const extra = Object.keys(rest);
    for (const key of extra)
      issues.push({
        path: `${path}.${key}`,
        message: `the ${plugin.name} plugin has no such setting`,
      });
    return extra.length === 0 ? { ok: true, value: undefined } : { ok: false };
  }
  const parsed = (plugin.settings as z.ZodType).safeParse(rest);
  if (parsed.success) return { ok: true, value: parsed.data };
  for (const issue of parsed.error.issues) {
    const at = [path, ...issue.path.map(String)].join(".");
    // One issue per unknown key, so each bad path is named.
    if (issue.code === "unrecognized_keys")
      for (const key of issue.keys)
        issues.push({
          path: `${at}.${key}`,
          message: `the ${plugin.name} plugin has no such setting`,
        });
    else issues.push({ path: at, message: issue.message });
  }
  return { ok: false };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
