// `npm run skills -- <list|show|add|remove|proposals|approve|deny>`: an agent's skills and the
// changes it proposed, over the HTTP API (docs/skills.md), against the local dev server (token
// from .dev.vars) or a deployed worker (--url, --token), like `npm run memory`. Skills are read
// from and written as Agent Skills files (front matter + markdown). Exit code 0 on success.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Api, CliError, createApi, formatTable, resolveToken } from "./memory.ts";
import { formatSkillFile, parseSkillFile, SkillFileError } from "./skill-file.ts";

export const HELP = `Usage: npm run skills -- <command> --agent <id> [options]

Commands:
  list                 the agent's skills: name, where it comes from, description
  show <name>          one skill as a SKILL.md file (front matter, then the body)
  add <file|folder>    adds a skill from a markdown file with name and description in its front
                       matter (a folder: its SKILL.md); the same name again replaces it
  remove <name>        deletes a skill added through the API or saved by the agent
  proposals [--status pending|approved|denied|expired]   what the agent asked to change
  approve <id>         approves a proposal (a skill is saved, a catalog MCP server added)
  deny <id>            denies it

Options:
  --agent A    the agent (required)
  --url URL    the worker (default: $EDGE_AGENTS_URL, else http://localhost:8787)
  --token T    API token (default: $EDGE_AGENTS_TOKEN, else ADMIN_TOKEN from .dev.vars for a local URL)
  --json       print the API's JSON
  --help       this text`;

const COMMANDS = ["list", "show", "add", "remove", "proposals", "approve", "deny"] as const;
type Command = (typeof COMMANDS)[number];
const TAKES_ARGUMENT: readonly Command[] = ["show", "add", "remove", "approve", "deny"];
const STATUSES = ["pending", "approved", "denied", "expired"];

export interface SkillsCliOptions {
  command: Command;
  agent: string;
  /** The skill name, file or proposal id the command acts on. */
  target: string;
  status?: string;
  json: boolean;
  url: string;
  token?: string;
}

export type ParsedSkillsCli =
  | { help: true; asked: boolean }
  | { help: false; options: SkillsCliOptions };

export function parseSkillsCli(
  argv: string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedSkillsCli {
  const { values, positionals } = (() => {
    try {
      return parseArgs({
        args: argv,
        allowPositionals: true,
        strict: true,
        options: {
          agent: { type: "string" },
          status: { type: "string" },
          url: { type: "string" },
          token: { type: "string" },
          json: { type: "boolean" },
          help: { type: "boolean" },
        },
      });
    } catch (error) {
      throw new CliError(`${error instanceof Error ? error.message : String(error)} (see --help)`);
    }
  })();
  if (values.help || positionals.length === 0) return { help: true, asked: values.help === true };
  const [name, ...rest] = positionals;
  const command = COMMANDS.find((c) => c === name);
  if (!command)
    throw new CliError(`unknown command "${name}": use one of ${COMMANDS.join(", ")} (see --help)`);
  const takes = TAKES_ARGUMENT.includes(command);
  if (takes && rest.length !== 1)
    throw new CliError(`${command} takes one ${command === "add" ? "file" : "name or id"}`);
  if (!takes && rest.length > 0)
    throw new CliError(`${command} takes no arguments besides options, got "${rest.join(" ")}"`);
  if (values.status !== undefined && command !== "proposals")
    throw new CliError(`--status applies to proposals only`);
  if (values.status !== undefined && !STATUSES.includes(values.status))
    throw new CliError(`--status is one of ${STATUSES.join(", ")}, got "${values.status}"`);
  if (!values.agent) throw new CliError("--agent is required (see --help)");
  const url = (values.url ?? env.EDGE_AGENTS_URL ?? "http://localhost:8787").replace(/\/+$/, "");
  if (!/^https?:\/\/[^/\s]+/.test(url))
    throw new CliError(`--url must be an http(s) URL, got "${url}"`);
  return {
    help: false,
    options: {
      command,
      agent: values.agent,
      target: rest[0] ?? "",
      ...(values.status !== undefined ? { status: values.status } : {}),
      json: values.json ?? false,
      url,
      token: values.token ?? env.EDGE_AGENTS_TOKEN,
    },
  };
}

interface SkillView {
  name: string;
  description: string;
  source: string;
  body: string;
}

interface ProposalView {
  id: string;
  kind: "skill" | "tool";
  status: string;
  change: {
    skill?: { name: string; description: string };
    server?: string;
    reason?: string;
  };
  origin: { surface: string; roomId: string };
  createdAt: number;
  decidedBy: string | null;
}

const when = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");
const width = () => process.stdout.columns ?? (Number(process.env.COLUMNS) || 120);
const print = (headers: string[], rows: string[][]) =>
  console.log(rows.length === 0 ? "(none)" : formatTable(headers, rows, width()));
const out = (value: unknown) => {
  console.log(JSON.stringify(value, null, 2));
  return 0;
};

/** The proposal's change in a line: what approving it would do. */
function changeText(proposal: ProposalView): string {
  const { skill, server, reason } = proposal.change;
  return proposal.kind === "skill"
    ? `save skill ${skill?.name ?? "?"}: ${skill?.description ?? ""}`
    : `add MCP server ${server ?? "?"}: ${reason ?? ""}`;
}

function readSkill(path: string) {
  const folder = statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  const file = folder ? join(path, "SKILL.md") : path;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new CliError(
      `cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  try {
    return parseSkillFile(text, file);
  } catch (error) {
    if (error instanceof SkillFileError) throw new CliError(`${error.message}. Nothing was sent.`);
    throw error;
  }
}

export async function runSkillsCli(options: SkillsCliOptions): Promise<number> {
  const api: Api = createApi(options.url, resolveToken(options));
  const base = `/agents/${encodeURIComponent(options.agent)}`;
  const target = encodeURIComponent(options.target);
  switch (options.command) {
    case "list": {
      const body = await api<{ skills: SkillView[] }>("GET", `${base}/skills`);
      if (options.json) return out(body);
      print(
        ["name", "source", "description"],
        body.skills.map((s) => [s.name, s.source, s.description]),
      );
      return 0;
    }
    case "show": {
      const skill = await api<SkillView>("GET", `${base}/skills/${target}`);
      if (options.json) return out(skill);
      process.stdout.write(formatSkillFile(skill));
      return 0;
    }
    case "add": {
      const skill = readSkill(options.target);
      const saved = await api<SkillView>("POST", `${base}/skills`, skill);
      if (options.json) return out(saved);
      console.log(`saved the skill ${saved.name} of ${options.agent}`);
      return 0;
    }
    case "remove": {
      await api("DELETE", `${base}/skills/${target}`);
      if (options.json) return out({ deleted: options.target });
      console.log(`deleted the skill ${options.target} of ${options.agent}`);
      return 0;
    }
    case "proposals": {
      const query = options.status ? `?status=${options.status}` : "";
      const body = await api<{ proposals: ProposalView[] }>("GET", `${base}/proposals${query}`);
      if (options.json) return out(body);
      print(
        ["id", "created", "status", "from", "change"],
        body.proposals.map((p) => [
          p.id,
          when(p.createdAt),
          p.decidedBy ? `${p.status} (${p.decidedBy})` : p.status,
          `${p.origin.surface} ${p.origin.roomId}`,
          changeText(p),
        ]),
      );
      return 0;
    }
    case "approve":
    case "deny": {
      const body = await api<{ proposal: ProposalView; applied: string | null; authUrl?: string }>(
        "POST",
        `${base}/proposals/${target}`,
        { approve: options.command === "approve" },
      );
      if (options.json) return out(body);
      console.log(
        `${body.proposal.status}: ${changeText(body.proposal)}${body.applied ? ` (${body.applied})` : ""}`,
      );
      if (body.authUrl) console.log(`the server asks for consent: open ${body.authUrl}`);
      return 0;
    }
  }
}

if (import.meta.main) {
  try {
    const parsed = parseSkillsCli(process.argv.slice(2), process.env);
    if (!parsed.help) process.exitCode = await runSkillsCli(parsed.options);
    else if (parsed.asked) console.log(HELP);
    else {
      console.error(HELP);
      process.exitCode = 1;
    }
  } catch (error) {
    console.error(error instanceof CliError ? `error: ${error.message}` : error);
    process.exitCode = 1;
  }
}
