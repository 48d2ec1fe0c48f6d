// `npm run deploy [-- --var NAME=value] [--discord] [--telegram] [--slack] [--vectorize]`: the one
// deploy command. It runs `wrangler deploy` (which creates the D1 database and R2 bucket on a first
// deploy) with the secrets the worker lacks in the same upload (`--secrets-file`, so a new worker
// never serves a moment without them), opens the worker's /health (its first request applies the
// migrations and seeds the shipped characters), and registers the Discord commands when Discord is
// configured. --var sets plain variables (wrangler.toml has no [vars] and keeps those set earlier);
// --discord sets up the bot from its token alone; --telegram (or TELEGRAM_BOT_TOKEN in the shell)
// the Telegram bot and its webhook (deploy-telegram.ts); --slack the Slack app from its token and
// Signing Secret (deploy-slack.ts); --vectorize moves memory vectors to Vectorize;
// --memory-shards N declares memory databases MEMORY_DB_1..N, which the deploy creates.
// Running it again changes nothing that exists.
// The admin token never travels on a command line (`ps` and shell history keep those) and is
// printed only to a terminal (CI logs keep everything else): see docs/deploying.md.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ApplicationFlags, PermissionFlagsBits } from "discord-api-types/v10";
import { z } from "zod";
import { variableIssues } from "../src/config.ts";
import {
  DEPLOYMENT_VARIABLES,
  MIN_ADMIN_TOKEN_CHARS,
  SECRET_NAMES as ALL_SECRETS,
  SHELL_SECRETS,
} from "../src/settings.ts";
import { type SlackSetup, slackReport, slackSetup } from "./deploy-slack.ts";
import { setTelegramWebhook, telegramSetup } from "./deploy-telegram.ts";

const HELP = `Usage: npm run deploy [-- options]
  --var NAME=value  set a variable on the worker; repeat it for more. Later deploys keep it;
                    NAME= unsets it. For example, another OpenAI-compatible endpoint:
                      --var OPENAI_BASE_URL=https://api.groq.com/openai/v1 --var MODEL=<model>
                    (its key: OPENAI_API_KEY in this shell). The variables: docs/configuration.md
  --discord         set up the Discord bot from its token (DISCORD_BOT_TOKEN in this shell, or
                    asked for): secrets, commands, interactions endpoint, default agent, invite URL.
                    @mentions, replies and DMs also need the Message Content intent (Bot page) and
                    --var DISCORD_GATEWAY=true (docs/discord.md)
  --telegram        set up the Telegram bot from its token (TELEGRAM_BOT_TOKEN in this shell, or
                    asked for): secrets, webhook, default agent. A TELEGRAM_BOT_TOKEN in this shell
                    does the same without the option
  --slack           set up the Slack app from its bot token and Signing Secret (SLACK_BOT_TOKEN and
                    SLACK_SIGNING_SECRET in this shell, or asked for): secrets, default agent, and
                    the request URLs to paste into the app. The app comes first, from the
                    manifest in docs/slack.md with this worker's address
  --agent ID        with --discord, --telegram or --slack: the agent the bot talks as until one is
                    picked there (default: the one already chosen, else the first agent)
  --vectorize       create the Vectorize index (the embedder's dimension, metadata indexes), bind it,
                    deploy again and re-embed existing memories into it
  --memory-shards N declare N memory databases (MEMORY_DB_1..N) in wrangler.toml, which this deploy
                    creates; new agents go to the emptiest. Never fewer than declared: agents
                    may live there (move them first: docs/scaling.md)
  --url URL         where the worker answers, when it is not the workers.dev address wrangler prints
The Telegram webhook's secret is TELEGRAM_WEBHOOK_SECRET from this shell, else a new random one.
Secrets (OPENAI_API_KEY, DISCORD_BOT_TOKEN, INSTAGRAM_ACCESS_TOKEN, ...) are read from this shell's
environment when the worker lacks them; never from the command line. The admin token comes from
ADMIN_TOKEN in the environment, or is made (on a terminal) or asked for when it is needed.`;

/** Said when someone passes the admin token as an option; never repeats what they passed. */
const TOKEN_OPTION_REFUSED =
  "--token is not accepted: a command line stays in `ps` and in shell history. " +
  "Put the admin token in ADMIN_TOKEN instead " +
  "(`read -rs ADMIN_TOKEN && export ADMIN_TOKEN` types it unseen), " +
  "or run on a terminal without it and you will be asked for it when it is needed.";

export const VECTORIZE_INDEX = "edge-agents-memories";
/** Metadata the vector index filters on (src/db/memory/vectorize-index.ts), indexed before any vector. */
export const METADATA_INDEXES = ["agentId", "type", "roomId", "userId", "memoryId"];
/** Secrets copied from this shell to the worker when they are set here and not there. */
const OPTIONAL_SECRETS = SHELL_SECRETS;
/** Every secret the worker reads: refused as --var, which would show it on a command line. */
const SECRET_NAMES = new Set<string>(ALL_SECRETS);
const DISCORD_API = "https://discord.com/api/v10";
/**
 * What the bot asks for when invited: to see and answer in channels and threads, and to read the
 * history a reply refers to. Slash commands and their replies need no permission.
 */
const BOT_PERMISSIONS =
  PermissionFlagsBits.ViewChannel |
  PermissionFlagsBits.SendMessages |
  PermissionFlagsBits.SendMessagesInThreads |
  // autoThread opens a thread from a mention (docs/discord.md).
  PermissionFlagsBits.CreatePublicThreads |
  PermissionFlagsBits.ReadMessageHistory;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs wrangler (node_modules/.bin under npm), echoing what it prints; `input` goes to stdin. With
 * `keepStderr` its errors are kept for the caller to read rather than shown.
 */
function wrangler(
  args: string[],
  options: { input?: string; quiet?: boolean; keepStderr?: boolean } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("wrangler", args, {
      stdio: ["pipe", "pipe", options.keepStderr ? "pipe" : "inherit"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!options.quiet) process.stdout.write(chunk);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin?.end(options.input ?? "");
  });
}

async function must(
  args: string[],
  options: { input?: string; quiet?: boolean } = {},
): Promise<string> {
  const run = await wrangler(args, options);
  if (run.code !== 0)
    throw new Error(
      `wrangler ${args.slice(0, 3).join(" ")} failed (exit ${run.code}); see its output above`,
    );
  return run.stdout;
}

/**
 * The secrets the worker holds, or "no worker" on a first deploy (wrangler says the Worker is not
 * found). Any other failure stops the deploy before it changes anything: guessing "none" there
 * would overwrite the live admin token.
 */
async function remoteSecrets(): Promise<Set<string> | "no worker"> {
  const run = await wrangler(["secret", "list", "--format", "json"], {
    quiet: true,
    keepStderr: true,
  });
  if (run.code === 0) {
    const listed = JSON.parse(run.stdout.slice(run.stdout.indexOf("["))) as Array<{
      name: string;
    }>;
    return new Set(listed.map((secret) => secret.name));
  }
  if (/not found/i.test(run.stderr) && /new Worker/i.test(run.stderr)) return "no worker";
  process.stderr.write(run.stderr);
  throw new Error(
    `wrangler secret list failed (exit ${run.code}); see its output above. Nothing was deployed.`,
  );
}

/**
 * `wrangler deploy`, with the secrets in the same upload (a file only this user can read, removed
 * after) and the variables as `--var`: wrangler.toml's keep_vars keeps those of earlier deploys.
 */
async function deploy(secrets: Record<string, string>, vars: Record<string, string>) {
  const args = [
    "deploy",
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  if (Object.keys(secrets).length === 0) return must(args);
  const dir = mkdtempSync(join(tmpdir(), "edge-agents-secrets-"));
  const file = join(dir, "secrets.json");
  try {
    writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
    return await must([...args, "--secrets-file", file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

class Refused extends Error {}

/**
 * GET a JSON path on the worker, a few times: a new worker takes a moment to answer everywhere. A
 * degraded /health (503 with its report: a failed migration, a stopped Gateway) is an answer too.
 */
async function workerJson(
  base: string,
  path: string,
  init: RequestInit = {},
): Promise<Record<string, unknown>> {
  let last = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const response = await fetch(new URL(path, base), init);
      if (response.ok) return (await response.json()) as Record<string, unknown>;
      if (response.status === 503) {
        const report = (await response.json().catch(() => null)) as Record<string, unknown> | null;
        if (report?.status === "degraded") return report;
      }
      // A refusal (a wrong token, say) is not a worker still starting: no point asking again.
      if (response.status < 500)
        throw new Refused(`${base}${path} answered HTTP ${response.status}`);
      last = `HTTP ${response.status}`;
    } catch (error) {
      if (error instanceof Refused) throw error;
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000 * (attempt + 1)));
  }
  throw new Error(`${base}${path} did not answer (${last})`);
}

/** Reads a line from the terminal without echoing it (raw mode), for the admin token. */
function askHidden(question: string): Promise<string> {
  const input = process.stdin;
  return new Promise((resolve, reject) => {
    let value = "";
    const finish = (error?: Error) => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      process.stdout.write("\n");
      if (error) reject(error);
      else resolve(value.trim());
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === "\r" || char === "\n" || char === "\u0004") return finish();
        if (char === "\u0003") return finish(new Error("cancelled"));
        if (char === "\u007f" || char === "\b") value = value.slice(0, -1);
        else value += char;
      }
    };
    // Raw mode before the question: nothing typed after it appears is echoed.
    input.setRawMode(true);
    process.stdout.write(question);
    input.setEncoding("utf8");
    input.on("data", onData);
    input.resume();
  });
}

const onTerminal = (): boolean => Boolean(process.stdin.isTTY && process.stdout.isTTY);

/** ADMIN_TOKEN from this shell, checked as the worker checks it (src/config.ts). */
function adminTokenFromEnv(): string | undefined {
  const token = process.env.ADMIN_TOKEN?.trim();
  if (!token) return undefined;
  if (token.length < MIN_ADMIN_TOKEN_CHARS)
    throw new Error(
      `ADMIN_TOKEN in this shell is shorter than ${MIN_ADMIN_TOKEN_CHARS} characters: ` +
        "the worker would refuse it",
    );
  return token;
}

/** The secrets this deploy uploads, and what it tells the operator once the upload succeeded. */
interface SecretPlan {
  secrets: Record<string, string>;
  /** The admin token the worker holds after the deploy, when this run knows it. */
  adminToken?: string;
  /** A token made here, shown once after the deploy (only ever on a terminal). */
  madeToken?: string;
  said: string[];
}

/**
 * The secrets the worker lacks: the admin token (the shell's ADMIN_TOKEN, else a random one shown
 * once and only on a terminal: off a terminal a printed token would stay in a log, so none is made
 * and the operator is told how to set one), SECRETS_KEY (random), the optional ones set in this
 * shell. `always` (the Discord secrets under --discord) are uploaded even when the worker has them:
 * the operator asked for them.
 */
function planSecrets(
  present: Set<string>,
  fromEnv: string | undefined,
  always: Record<string, string>,
): SecretPlan {
  const plan: SecretPlan = { secrets: {}, said: [] };
  if (!present.has("ADMIN_TOKEN")) {
    if (fromEnv) {
      plan.secrets.ADMIN_TOKEN = plan.adminToken = fromEnv;
      plan.said.push("Set ADMIN_TOKEN from this shell.");
    } else if (process.stdout.isTTY) {
      // Hex: a token starting with "-" would read as an option on command lines.
      plan.secrets.ADMIN_TOKEN = plan.adminToken = plan.madeToken = randomBytes(24).toString("hex");
    }
  }
  if (!present.has("SECRETS_KEY")) {
    plan.secrets.SECRETS_KEY = randomBytes(32).toString("base64url");
    plan.said.push("Set SECRETS_KEY (random; it encrypts stored secrets and OAuth tokens).");
  }
  for (const name of OPTIONAL_SECRETS) {
    const value = process.env[name]?.trim();
    if (value && !present.has(name) && !(name in always)) {
      plan.secrets[name] = value;
      plan.said.push(`Set ${name} from this shell.`);
    }
  }
  for (const [name, value] of Object.entries(always)) {
    plan.secrets[name] = value;
    plan.said.push(`Set ${name}${present.has(name) ? " (replaced)" : ""}.`);
  }
  return plan;
}

const NO_ADMIN_TOKEN = [
  "",
  "  ADMIN_TOKEN is not set on the worker, and none was made: this output is not a terminal,",
  "  so a new token would be kept in a log. Until one is set the API refuses every request.",
  "  Set it without it touching a log or a command line, either on a terminal:",
  "    openssl rand -hex 24                  (keep it somewhere safe)",
  "    npx wrangler secret put ADMIN_TOKEN   (paste it when asked)",
  "  or run the deploy again with ADMIN_TOKEN in its environment (a CI secret, say).",
  "",
].join("\n");

/** The admin token for the deploy's own API calls: ADMIN_TOKEN, else asked for on a terminal. */
async function adminTokenForApi(
  fromEnv: string | undefined,
  purpose: string,
): Promise<string | undefined> {
  if (fromEnv || !onTerminal()) return fromEnv;
  const typed = await askHidden(`Admin token, to ${purpose} (not shown; Enter skips): `);
  return typed || undefined;
}

/** --var NAME=value options, checked as the worker checks them; secrets are refused. */
function parseVars(options: string[]): Record<string, string> {
  const known = new Set<string>(DEPLOYMENT_VARIABLES);
  const vars: Record<string, string> = {};
  for (const option of options) {
    const at = option.indexOf("=");
    const name = at < 0 ? option : option.slice(0, at);
    if (at < 0) throw new Error(`--var ${name}: write it NAME=value (NAME= unsets it)`);
    if (SECRET_NAMES.has(name))
      throw new Error(
        `--var ${name}: that is a secret, and a command line stays in \`ps\` and shell history. ` +
          `Set ${name} in this shell's environment and deploy again (it is uploaded as a secret ` +
          `when the worker lacks it), or \`npx wrangler secret put ${name}\` to replace it.`,
      );
    if (!known.has(name))
      throw new Error(
        `--var ${name}: not a variable the worker reads. It reads: ${DEPLOYMENT_VARIABLES.join(", ")}`,
      );
    vars[name] = option.slice(at + 1).trim();
  }
  const issues = variableIssues(vars);
  if (vars.DISCORD_APPLICATION_ID && !/^\d{17,20}$/.test(vars.DISCORD_APPLICATION_ID))
    issues.push("DISCORD_APPLICATION_ID must be the application id (digits)");
  for (const name of ["DISCORD_API_BASE", "BRAVE_SEARCH_BASE"])
    if (vars[name] && !URL.canParse(vars[name])) issues.push(`${name} must be a URL`);
  if (issues.length > 0) throw new Error(`--var: ${issues.join("; ")}`);
  return vars;
}

async function vectorize(base: string, adminToken: string | undefined): Promise<void> {
  const health = await workerJson(base, "/health");
  const dimensions = (health.embedding as { dimensions: number }).dimensions;
  const existing = await wrangler(["vectorize", "get", VECTORIZE_INDEX, "--json"], { quiet: true });
  if (existing.code === 0) {
    const config = JSON.parse(existing.stdout.slice(existing.stdout.indexOf("{"))) as {
      config?: { dimensions?: number };
    };
    const held = config.config?.dimensions;
    // Never two dimensions in one index.
    if (held !== dimensions)
      throw new Error(
        `the Vectorize index ${VECTORIZE_INDEX} holds ${held} dimensions, the embedder gives ${dimensions}: delete it or change EMBEDDING_MODEL`,
      );
    console.log(`Vectorize index ${VECTORIZE_INDEX} exists (${held} dimensions).`);
  } else {
    await must([
      "vectorize",
      "create",
      VECTORIZE_INDEX,
      `--dimensions=${dimensions}`,
      "--metric=cosine",
    ]);
  }
  const listed = await wrangler(["vectorize", "list-metadata-index", VECTORIZE_INDEX, "--json"], {
    quiet: true,
  });
  const indexed = new Set(
    listed.code === 0
      ? (
          JSON.parse(listed.stdout.slice(listed.stdout.indexOf("["))) as Array<{
            propertyName: string;
          }>
        ).map((m) => m.propertyName)
      : [],
  );
  for (const property of METADATA_INDEXES.filter((name) => !indexed.has(name))) {
    await must([
      "vectorize",
      "create-metadata-index",
      VECTORIZE_INDEX,
      `--propertyName=${property}`,
      "--type=string",
    ]);
  }
  const toml = readFileSync("wrangler.toml", "utf8");
  if (!/^\s*binding\s*=\s*"VECTORS"/m.test(toml)) {
    writeFileSync(
      "wrangler.toml",
      `${toml.trimEnd()}\n\n# Memory vectors (added by npm run deploy -- --vectorize).\n[[vectorize]]\nbinding = "VECTORS"\nindex_name = "${VECTORIZE_INDEX}"\n`,
    );
    console.log("Bound the index as VECTORS in wrangler.toml; deploying again.");
    await must(["deploy"]);
  }
  if (!adminToken) {
    console.log(
      "Memories not re-embedded (no admin token): run `npm run deploy -- --vectorize` again " +
        "with ADMIN_TOKEN set, or on a terminal.",
    );
    return;
  }
  const headers = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const { agents } = (await workerJson(base, "/agents?limit=100", { headers })) as {
    agents: Array<{ id: string }>;
  };
  for (const agent of agents) {
    let embedded = 0;
    for (let round = 0; round < 1_000; round++) {
      const step = (await workerJson(base, "/memories/embed", {
        method: "POST",
        headers,
        body: JSON.stringify({ agentId: agent.id }),
      })) as { embedded: number; pending: boolean };
      embedded += step.embedded;
      if (!step.pending) break;
    }
    console.log(`Re-embedded ${embedded} memories of ${agent.id}.`);
  }
}

// ---- Discord -----------------------------------------------------------------------------------

const DiscordApplication = z.object({
  id: z.string().regex(/^\d{17,20}$/),
  name: z.string(),
  verify_key: z.string().regex(/^[0-9a-f]{64}$/i),
  interactions_endpoint_url: z.string().nullish(),
  flags: z.number().int().nullish(),
});
type DiscordApplication = z.infer<typeof DiscordApplication>;

const discordBase = (): string =>
  (process.env.DISCORD_API_BASE?.trim() || DISCORD_API).replace(/\/+$/, "");

/** Discord's one-line reason from an error answer, never the whole body. */
async function discordSays(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { message?: unknown };
    if (typeof body.message === "string") return `: ${body.message.slice(0, 200)}`;
  } catch {}
  return "";
}

async function discordBotToken(): Promise<string> {
  const fromEnv = process.env.DISCORD_BOT_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  if (!onTerminal())
    throw new Error(
      "--discord needs the bot token: set DISCORD_BOT_TOKEN in this shell (developer portal, " +
        "your application's Bot page, Reset Token), or run on a terminal to be asked for it",
    );
  const typed = await askHidden(
    "Discord bot token (developer portal, your application's Bot page, Reset Token; not shown): ",
  );
  if (!typed) throw new Error("--discord needs the bot token");
  return typed;
}

/** The application the bot token belongs to: its id and public key come with it. */
async function discordApplication(token: string): Promise<DiscordApplication> {
  const response = await fetch(`${discordBase()}/applications/@me`, {
    headers: { authorization: `Bot ${token}` },
  });
  if (response.status === 401)
    throw new Error(
      "Discord refused the bot token (HTTP 401): copy it again from your application's Bot page " +
        "(Reset Token)",
    );
  if (!response.ok)
    throw new Error(
      `Discord did not say which application the bot token belongs to (HTTP ${response.status}${await discordSays(response)})`,
    );
  const parsed = DiscordApplication.safeParse(await response.json());
  if (!parsed.success)
    throw new Error("Discord's description of the application is not in the shape expected");
  const app = parsed.data;
  const mine = process.env.DISCORD_APPLICATION_ID?.trim();
  if (mine && mine !== app.id)
    throw new Error(
      `DISCORD_APPLICATION_ID in this shell (${mine}) is not the bot token's application (${app.id}): ` +
        "unset it, or use that application's bot token",
    );
  const key = process.env.DISCORD_PUBLIC_KEY?.trim();
  if (key && key.toLowerCase() !== app.verify_key.toLowerCase())
    throw new Error(
      "DISCORD_PUBLIC_KEY in this shell is not the bot token's application's public key: unset it",
    );
  return app;
}

function registerCommands(env: Record<string, string>): Promise<void> {
  console.log("Registering the Discord commands (global)...");
  return new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [new URL("./discord-register.ts", import.meta.url).pathname],
      { stdio: "inherit", env: { ...process.env, ...env } },
    );
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`discord:register failed (exit ${code})`)),
    );
  });
}

/**
 * Points the application's Interactions Endpoint URL at the worker. Discord checks it first with a
 * signed PING, which the worker answers with the public key this deploy uploaded.
 */
async function setInteractionsEndpoint(
  app: DiscordApplication,
  token: string,
  base: string,
): Promise<string> {
  const url = `${base.replace(/\/+$/, "")}/discord/interactions`;
  if (app.interactions_endpoint_url === url) return `Interactions endpoint: ${url} (already set).`;
  const response = await fetch(`${discordBase()}/applications/@me`, {
    method: "PATCH",
    headers: { authorization: `Bot ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ interactions_endpoint_url: url }),
  });
  if (response.ok) return `Interactions endpoint: ${url} (set; Discord checked it).`;
  return [
    `Interactions endpoint: Discord did not take ${url} (HTTP ${response.status}${await discordSays(response)}).`,
    "  Paste it yourself: developer portal, General Information, Interactions Endpoint URL.",
  ].join("\n");
}

/**
 * Chooses the agent a client's chats talk to (Discord: until a channel picks another with /agent);
 * keeps one chosen before.
 */
async function bindDefaultAgent(
  base: string,
  adminToken: string,
  wanted: string | undefined,
  client: "discord" | "telegram" | "slack" = "discord",
): Promise<string> {
  const path = `/clients/${client}/config`;
  const headers = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const config = (await workerJson(base, path, { headers })) as {
    defaultAgentId: string | null;
  };
  if (!wanted && config.defaultAgentId)
    return `Default agent: ${config.defaultAgentId} (chosen before; --agent <id> changes it).`;
  let agentId = wanted;
  if (!agentId) {
    const { agents } = (await workerJson(base, "/agents?limit=100", { headers })) as {
      agents: Array<{ id: string }>;
    };
    agentId = agents[0]?.id;
    if (!agentId)
      return "Default agent: none (the worker has no agent yet): create one, then run again with --agent <id>.";
  }
  if (agentId === config.defaultAgentId) return `Default agent: ${agentId}.`;
  const response = await fetch(new URL(path, base), {
    method: "POST",
    headers,
    body: JSON.stringify({ ...config, defaultAgentId: agentId }),
  });
  if (response.status === 404) throw new Error(`--agent ${agentId}: the worker has no such agent`);
  if (!response.ok) throw new Error(`setting the default agent failed (HTTP ${response.status})`);
  return `Default agent: ${agentId}${wanted ? "" : " (the first agent; --agent <id> picks another)"}.`;
}

/** Either flag says the Message Content intent is on (the limited one: under 100 servers). */
const MESSAGE_CONTENT_INTENT =
  ApplicationFlags.GatewayMessageContent | ApplicationFlags.GatewayMessageContentLimited;

/**
 * Slash commands need only the token; @mentions, replies and DMs come over the Gateway, which needs
 * the Message Content intent switched on in the portal and DISCORD_GATEWAY=true. Says which of the
 * two is missing. Without the intent Discord closes with 4014, and a Gateway stopped that way waits
 * for a new token (src/clients/discord/gateway/discord-gateway.ts).
 */
function gatewayHint(
  app: DiscordApplication,
  gateway: { state?: unknown; stoppedReason?: unknown } | undefined,
): string {
  const intent = ((app.flags ?? 0) & MESSAGE_CONTENT_INTENT) !== 0;
  const portal = "developer portal, Bot, Privileged Gateway Intents";
  const guide = "docs/discord.md#conversations-over-the-gateway";
  if (gateway) {
    const state = String(gateway.state ?? "on");
    const reason = typeof gateway.stoppedReason === "string" ? ` (${gateway.stoppedReason})` : "";
    if (!intent)
      return [
        `Gateway: ${state}${reason}, but the Message Content intent is off, so Discord refuses it (4014).`,
        `  Switch it on (${portal}); a Gateway stopped by that starts again with a new token:`,
        "  Reset Token on the Bot page, then npm run deploy -- --discord",
      ].join("\n");
    if (state === "stopped") return `Gateway: stopped${reason} (${guide}).`;
    return `Gateway: ${state} (@mentions, replies, DMs).`;
  }
  return [
    `Slash commands work now. For @mentions, replies and DMs too (${guide}):`,
    intent
      ? "  npm run deploy -- --var DISCORD_GATEWAY=true   (the Message Content intent is on)"
      : `  switch on the Message Content intent (${portal}), then\n  npm run deploy -- --var DISCORD_GATEWAY=true`,
  ].join("\n");
}

const inviteUrl = (appId: string): string =>
  `https://discord.com/oauth2/authorize?client_id=${appId}&scope=bot+applications.commands&permissions=${BOT_PERMISSIONS}`;

/** The memory databases wrangler.toml declares, by number (src/db/shards.ts). */
export function declaredMemoryDatabases(toml: string): number[] {
  return [...toml.matchAll(/^\s*binding\s*=\s*"MEMORY_DB_(\d+)"/gm)].map((m) => Number(m[1]));
}

/** wrangler.toml with MEMORY_DB_1..count declared (those missing appended; wrangler creates them). */
export function withMemoryDatabases(
  toml: string,
  count: number,
): { toml: string; added: number[] } {
  const declared = new Set(declaredMemoryDatabases(toml));
  const added: number[] = [];
  let out = toml.trimEnd();
  for (let n = 1; n <= count; n++) {
    if (declared.has(n)) continue;
    added.push(n);
    out += `\n\n# A memory database (added by npm run deploy -- --memory-shards; docs/scaling.md).\n[[d1_databases]]\nbinding = "MEMORY_DB_${n}"\ndatabase_name = "edge-agents-memory-${n}"\n`;
  }
  return { toml: added.length > 0 ? `${out.trimEnd()}\n` : toml, added };
}

function declareMemoryDatabases(option: string): void {
  const count = Number(option);
  if (!Number.isInteger(count) || count < 0 || count > 999)
    throw new Error("--memory-shards takes a number of memory databases, 0 to 999");
  const toml = readFileSync("wrangler.toml", "utf8");
  const declared = declaredMemoryDatabases(toml);
  const highest = Math.max(0, ...declared);
  if (count < highest)
    throw new Error(
      `wrangler.toml declares MEMORY_DB_${highest}; agents may live there, so --memory-shards ${count} would unbind it. ` +
        "Move its agents first (npm run memory -- move), then remove the binding by hand (docs/scaling.md).",
    );
  const { toml: next, added } = withMemoryDatabases(toml, count);
  if (added.length === 0) return;
  writeFileSync("wrangler.toml", next);
  console.log(
    `Declared ${added.map((n) => `MEMORY_DB_${n}`).join(", ")} in wrangler.toml; this deploy creates them.`,
  );
}

// ---- the deploy --------------------------------------------------------------------------------

async function main(): Promise<void> {
  // Before parsing, so the refusal says what to do instead of "unknown option".
  if (process.argv.some((arg) => arg === "--token" || arg.startsWith("--token=")))
    throw new Error(TOKEN_OPTION_REFUSED);
  const { values } = parseArgs({
    options: {
      var: { type: "string", multiple: true },
      discord: { type: "boolean" },
      telegram: { type: "boolean" },
      slack: { type: "boolean" },
      agent: { type: "string" },
      vectorize: { type: "boolean" },
      "memory-shards": { type: "string" },
      url: { type: "string" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (!existsSync("wrangler.toml"))
    throw new Error("run it from the project's folder (where wrangler.toml is)");
  const telegramAsked = Boolean(values.telegram || process.env.TELEGRAM_BOT_TOKEN?.trim());
  if (values.agent !== undefined && !values.discord && !values.slack && !telegramAsked)
    throw new Error(
      "--agent goes with --discord, --telegram or --slack (it picks the bot's default agent)",
    );
  const envToken = adminTokenFromEnv();
  const vars = parseVars(values.var ?? []);
  if (values["memory-shards"] !== undefined) declareMemoryDatabases(values["memory-shards"]);

  // Discord first: a wrong token stops the deploy before it changes anything.
  const discord = values.discord ? await discordSetup() : undefined;
  if (discord) vars.DISCORD_APPLICATION_ID = discord.app.id;
  const telegram = await telegramSetup(telegramAsked, onTerminal() ? askHidden : undefined);
  const slack = values.slack ? await slackSetup(onTerminal() ? askHidden : undefined) : undefined;

  const listed = await remoteSecrets();
  const present = listed === "no worker" ? new Set<string>() : listed;
  const plan = planSecrets(present, envToken, {
    ...(discord
      ? { DISCORD_BOT_TOKEN: discord.token, DISCORD_PUBLIC_KEY: discord.app.verify_key }
      : {}),
    ...(telegram
      ? { TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_WEBHOOK_SECRET: telegram.secret }
      : {}),
    ...(slack ? { SLACK_BOT_TOKEN: slack.token, SLACK_SIGNING_SECRET: slack.signingSecret } : {}),
  });
  const deployed = await deploy(plan.secrets, vars);
  const base = values.url ?? /https:\/\/[a-z0-9.-]+\.workers\.dev/i.exec(deployed)?.[0];
  for (const line of plan.said) console.log(line);
  for (const name of Object.keys(vars))
    console.log(`Set ${name}${vars[name] ? "" : " (unset)"}; later deploys keep it.`);
  if (plan.madeToken)
    console.log(
      `\n  Your admin token (shown once; keep it somewhere safe):\n\n    ${plan.madeToken}\n`,
    );
  const tokenSet = present.has("ADMIN_TOKEN") || plan.adminToken !== undefined;
  if (!tokenSet) console.error(NO_ADMIN_TOKEN);

  let health: WorkerHealth | undefined;
  if (base) {
    // The first request applies pending migrations and, on a new deployment, seeds the characters.
    health = (await workerJson(base, "/health")) as WorkerHealth;
    console.log(
      `Worker at ${base}: ${health.status === "degraded" ? "degraded, " : ""}schema ${health.schema?.version ?? "unknown"}, model backend ${health.model?.backend ?? "unknown"}.`,
    );
    if (health.schema?.error)
      console.log(`  A migration failed: ${JSON.stringify(health.schema.error)}`);
  } else {
    console.log(
      "Could not tell the worker's address from wrangler's output; pass --url to check it.",
    );
  }

  if (discord) {
    await registerCommands({
      DISCORD_APPLICATION_ID: discord.app.id,
      DISCORD_BOT_TOKEN: discord.token,
    });
    const lines = [`Discord: ${discord.app.name} (application ${discord.app.id})`];
    if (base) {
      lines.push(await setInteractionsEndpoint(discord.app, discord.token, base));
      const token =
        plan.adminToken ?? (await adminTokenForApi(envToken, "choose the default agent"));
      lines.push(
        token
          ? await bindDefaultAgent(base, token, values.agent)
          : "Default agent: not chosen (no admin token): run again with ADMIN_TOKEN set, or `/agent` in a channel.",
      );
    } else {
      lines.push("Interactions endpoint and default agent: not set (pass --url).");
    }
    lines.push(`Invite the bot to a server: ${inviteUrl(discord.app.id)}`);
    lines.push(gatewayHint(discord.app, health ? health.gateway : undefined));
    console.log(lines.join("\n"));
  } else if (process.env.DISCORD_APPLICATION_ID && process.env.DISCORD_BOT_TOKEN) {
    await registerCommands({});
  }

  if (telegram) {
    const lines = [`Telegram: @${telegram.username}`];
    if (base) {
      lines.push(await setTelegramWebhook(telegram, base));
      const token =
        plan.adminToken ?? (await adminTokenForApi(envToken, "choose the Telegram agent"));
      lines.push(
        token
          ? (await bindDefaultAgent(base, token, values.agent, "telegram")).replace(
              /^Default agent/,
              "Telegram's agent",
            )
          : "Telegram's agent: not chosen (no admin token): POST /clients/telegram/config (docs/telegram.md).",
      );
    } else {
      lines.push("Telegram webhook: not set (pass --url).");
    }
    console.log(lines.join("\n"));
  }

  if (slack)
    await reportSlack(
      slack,
      base,
      values.agent,
      () => plan.adminToken ?? adminTokenForApi(envToken, "choose the Slack agent"),
    );

  if (values.vectorize) {
    if (!base) throw new Error("--vectorize needs the worker's address: pass --url");
    await vectorize(
      base,
      plan.adminToken ?? (await adminTokenForApi(envToken, "re-embed memories")),
    );
  }
  console.log(tokenSet ? "Deployed." : "Deployed; ADMIN_TOKEN is still to set (see above).");
}

/** What the deploy reads from /health; `gateway` is there only when DISCORD_GATEWAY is on. */
interface WorkerHealth {
  status?: string;
  schema?: { version: string | null; error: unknown } | null;
  model?: { backend: string };
  gateway?: { state?: unknown; stoppedReason?: unknown };
}

/** After the deploy: who the Slack bot is, the URLs to paste into the app, the agent it talks as. */
async function reportSlack(
  slack: SlackSetup,
  base: string | undefined,
  wanted: string | undefined,
  adminToken: () => Promise<string | undefined> | string | undefined,
): Promise<void> {
  const lines = [`Slack: @${slack.user} in ${slack.team} (${slack.teamId})`];
  if (base) {
    lines.push(...(await slackReport(slack, base)));
    const token = await adminToken();
    lines.push(
      token
        ? (await bindDefaultAgent(base, token, wanted, "slack")).replace(
            /^Default agent/,
            "Slack's agent",
          )
        : "Slack's agent: not chosen (no admin token): POST /clients/slack/config (docs/slack.md).",
    );
  } else {
    lines.push("Slack request URLs and agent: not known (pass --url).");
  }
  console.log(lines.join("\n"));
}

async function discordSetup(): Promise<{ token: string; app: DiscordApplication }> {
  const token = await discordBotToken();
  return { token, app: await discordApplication(token) };
}

main().catch((error: unknown) => {
  console.error(`deploy: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
