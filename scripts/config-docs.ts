// Writes what is generated from the settings declared in src/settings.ts: `.dev.vars.example` and
// the variables table of docs/configuration.md (between its `settings` markers). `npm run
// config:docs` rewrites both; test/node/config-docs.spec.ts fails when either is out of date.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Setting, SETTINGS, type SettingKind } from "../src/settings.ts";

const ROOT = resolve(import.meta.dirname, "..");
export const DEV_VARS_EXAMPLE = resolve(ROOT, ".dev.vars.example");
export const CONFIGURATION_DOC = resolve(ROOT, "docs/configuration.md");
const BEGIN = "<!-- settings:begin (generated from src/settings.ts by npm run config:docs) -->";
const END = "<!-- settings:end -->";

const all = Object.entries(SETTINGS as Record<string, Setting>);

export function devVarsExample(): string {
  const lines = [
    '# Secrets the worker needs. The "Deploy to Cloudflare" button asks for each uncommented one (see',
    '# package.json "cloudflare.bindings" for what to enter); `npm run deploy` generates them instead,',
    "# and `npm run dev` writes a local .dev.vars with its own. Never commit real values.",
    "# Generated from src/settings.ts by `npm run config:docs`.",
  ];
  for (const [name, { example }] of all) {
    if (!example) continue;
    for (const line of example.note?.split("\n") ?? []) lines.push(`# ${line}`);
    lines.push(`${example.uncommented ? "" : "# "}${name}=${example.value ?? ""}`);
  }
  return `${lines.join("\n")}\n`;
}

const KIND_WORDS: Record<SettingKind, string> = {
  var: "variable",
  "dev-var": "variable, development only",
  secret: "secret",
  "generated-secret": "secret, made by `npm run deploy` and `npm run dev`",
};

const cell = (text: string) => text.replaceAll("|", "\\|");

export function variablesTable(): string {
  const rows = all.map(
    ([name, setting]) =>
      `| \`${name}\` | ${KIND_WORDS[setting.kind]} | ${cell(setting.default ?? "")} | ${cell(setting.doc)} |`,
  );
  return [
    BEGIN,
    "| name | kind | default | meaning |",
    "|---|---|---|---|",
    ...rows,
    // Not one variable but a family, named by the characters that use them.
    "| `MCP_*` | secret | | bearer tokens for MCP servers, named by a server's `auth.secret`; sent only to origins `mcp-servers.json` declares for them ([mcp.md](mcp.md#servers)) |",
    END,
  ].join("\n");
}

/** docs/configuration.md with its variables table replaced by the generated one. */
export function configurationDoc(current: string): string {
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  if (start < 0 || end < start)
    throw new Error(`${CONFIGURATION_DOC}: the settings markers are missing`);
  return current.slice(0, start) + variablesTable() + current.slice(end + END.length);
}

if (import.meta.main) {
  writeFileSync(DEV_VARS_EXAMPLE, devVarsExample());
  writeFileSync(CONFIGURATION_DOC, configurationDoc(readFileSync(CONFIGURATION_DOC, "utf8")));
  console.log("Wrote .dev.vars.example and the variables of docs/configuration.md.");
}
