// `npm run deploy` against a stub `wrangler` first on PATH that records every call (what it read on
// stdin, and the secrets file a deploy uploads) and plays a Cloudflare account's state, and one
// loopback server standing in for the worker after deploying and for Discord's, Telegram's and
// Slack's APIs. A fresh account gets exactly the calls it needs, with its secrets in the first
// upload; a second run overwrites nothing; --var passes checked variables; --discord, --telegram and
// --slack set each bot up from its secrets; --vectorize creates the index once, with the embedder's
// size.
// The admin token never rides on a command line and is printed only to a terminal: runs "on a
// terminal" go through util-linux `script`, which gives the deploy a pseudo-terminal.
import { execFile, execFileSync, spawn } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

const run = promisify(execFile);
const SCRIPT = resolve("scripts/deploy.ts");

interface StubState {
  /** false: the worker does not exist yet (`secret list` says so, as wrangler does). */
  exists: boolean;
  /** `secret list` fails for another reason (a login that expired, say). */
  listFails?: boolean;
  secrets: string[];
  vars: Record<string, string>;
  vectorize: { dimensions: number; metadata: string[] } | null;
}
interface Call {
  args: string[];
  stdin: string;
  /** What a deploy's --secrets-file held, its mode, and its path. */
  secrets?: Record<string, string>;
  secretsMode?: string;
  secretsPath?: string;
}

// The stub: plays wrangler's answers from a state file and keeps that state up to date.
const STUB = `#!/usr/bin/env node
const fs = require("node:fs");
const args = process.argv.slice(2);
const state = JSON.parse(fs.readFileSync(process.env.STUB_STATE, "utf8"));
let stdin = "";
try { stdin = fs.readFileSync(0, "utf8"); } catch {}
const call = { args, stdin };
process.on("exit", () => fs.appendFileSync(process.env.STUB_LOG, JSON.stringify(call) + "\\n"));
const save = () => fs.writeFileSync(process.env.STUB_STATE, JSON.stringify(state));
const [a, b] = args;
if (a === "deploy") {
  const at = args.indexOf("--secrets-file");
  if (at >= 0) {
    const path = args[at + 1];
    call.secretsPath = path;
    call.secrets = JSON.parse(fs.readFileSync(path, "utf8"));
    call.secretsMode = (fs.statSync(path).mode & 0o777).toString(8);
    for (const name of Object.keys(call.secrets)) if (!state.secrets.includes(name)) state.secrets.push(name);
  }
  args.forEach((arg, i) => { if (arg === "--var") { const [k, ...v] = args[i + 1].split(":"); state.vars[k] = v.join(":"); } });
  state.exists = true;
  save();
  console.log("Uploaded edge-agents\\nDeployed edge-agents triggers\\n  " + process.env.STUB_URL);
}
else if (a === "secret" && b === "list") {
  if (state.listFails) { console.error("✘ [ERROR] A request to the Cloudflare API failed. Authentication error [code: 10000]"); process.exit(1); }
  if (!state.exists) { console.error('✘ [ERROR] Worker "edge-agents" not found.\\n\\nIf this is a new Worker, run \\u0060wrangler deploy\\u0060 first to create it.'); process.exit(1); }
  console.log(JSON.stringify(state.secrets.map((name) => ({ name, type: "secret_text" }))));
}
else if (a === "vectorize" && b === "get") { if (!state.vectorize) { console.error("not found"); process.exit(1); } console.log(JSON.stringify({ name: args[2], config: { dimensions: state.vectorize.dimensions, metric: "cosine" } })); }
else if (a === "vectorize" && b === "create") { state.vectorize = { dimensions: Number(args.find((x) => x.startsWith("--dimensions=")).split("=")[1]), metadata: [] }; save(); }
else if (a === "vectorize" && b === "list-metadata-index") console.log(JSON.stringify((state.vectorize?.metadata ?? []).map((propertyName) => ({ propertyName, indexType: "String" }))));
else if (a === "vectorize" && b === "create-metadata-index") { state.vectorize.metadata.push(args.find((x) => x.startsWith("--propertyName=")).split("=")[1]); save(); }
else { console.error("stub: unexpected call " + args.join(" ")); process.exit(2); }
`;

/** The Discord application the stand-in plays. */
const APP_ID = "1234567890123456789";
const PUBLIC_KEY = "ab".repeat(32);
const BOT_TOKEN = "bot-token-MTIzNDU2.secret-part-0123456789";
/** The Telegram bot the stand-in plays. */
const TELEGRAM_TOKEN = "123456789:AAH-telegram-secret-part_0123456789";
/** The Slack app the stand-in plays: its bot token and Signing Secret. */
const SLACK_TOKEN = "xoxb-1234567890-0987654321-slackSecretPart0123";
const SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";

let work: string;
let bin: string;
let server: Server;
let url: string;
let requests: string[] = [];
let bodies: Record<string, unknown>[] = [];
let authorizations: string[] = [];
let embedDimensions = 768;
/** The worker's Discord settings and the application's endpoint, as the stand-ins hold them. */
let discordConfig: { defaultAgentId: string | null; allowedChannels: string[] };
let endpoint: string | null;
let registered: unknown[];
let refuseEndpoint = false;
/** The Telegram bot's webhook and chat binding, as the stand-ins hold them. */
let telegramWebhook: Record<string, unknown> | null;
let refuseWebhook = false;
let telegramConfig: { defaultAgentId: string | null; allowedChats: string[] };
/** The worker's Slack binding, and the Signing Secret it checks signatures with. */
let slackConfig: { defaultAgentId: string | null; allowedChannels: string[] };
let workerSlackSecret: string;
/** The signed url_verification requests the worker answered. */
let slackChecks: number;
/** The Discord application's flags (the Message Content intent) and the worker's Gateway report. */
let appFlags: number;
let gatewayHealth: { state: string } | null;

beforeAll(async () => {
  bin = mkdtempSync(join(tmpdir(), "edge-agents-stub-"));
  writeFileSync(join(bin, "wrangler"), STUB);
  chmodSync(join(bin, "wrangler"), 0o755);
  // The worker as the script sees it after deploying, and Discord's API under /discord-api.
  server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    requests.push(`${req.method} ${req.url}`);
    if (body) bodies.push(body);
    if (req.headers.authorization) authorizations.push(req.headers.authorization);
    res.setHeader("content-type", "application/json");
    const answer = (status: number, value: unknown) => {
      res.statusCode = status;
      res.end(JSON.stringify(value));
    };
    if (req.url?.startsWith("/telegram-api/")) {
      const path = req.url.slice("/telegram-api".length);
      if (!path.startsWith(`/bot${TELEGRAM_TOKEN}/`))
        return answer(401, { ok: false, error_code: 401, description: "Unauthorized" });
      const method = path.slice(`/bot${TELEGRAM_TOKEN}/`.length);
      if (method === "getMe")
        return answer(200, {
          ok: true,
          result: { id: 123456789, is_bot: true, first_name: "Ada", username: "ada_agent_bot" },
        });
      if (method === "setWebhook") {
        if (refuseWebhook)
          return answer(400, {
            ok: false,
            error_code: 400,
            description: "Bad Request: bad webhook: An HTTPS URL must be provided for webhook",
          });
        telegramWebhook = body ?? null;
        return answer(200, { ok: true, result: true, description: "Webhook was set" });
      }
      return answer(404, { ok: false, error_code: 404, description: "Not Found" });
    }
    if (req.url === "/slack-api/auth.test") {
      if (req.headers.authorization !== `Bearer ${SLACK_TOKEN}`)
        return answer(200, { ok: false, error: "invalid_auth" });
      return answer(200, {
        ok: true,
        url: "https://ada-workspace.slack.com/",
        team: "Ada's workspace",
        user: "edge-agent",
        team_id: "T0123ABCD",
        user_id: "U0BOT1234",
        bot_id: "B0BOT1234",
      });
    }
    if (req.url === "/slack/events") {
      // The worker's check (src/http/routes/slack/signed-request.ts): v0 HMAC over the raw body.
      const stamp = String(req.headers["x-slack-request-timestamp"] ?? "");
      const expected = `v0=${createHmac("sha256", workerSlackSecret).update(`v0:${stamp}:${text}`).digest("hex")}`;
      const given = String(req.headers["x-slack-signature"] ?? "");
      const fresh = Math.abs(Date.now() / 1000 - Number(stamp)) < 300;
      if (
        !fresh ||
        given.length !== expected.length ||
        !timingSafeEqual(Buffer.from(given), Buffer.from(expected))
      )
        return answer(401, { error: { code: "unauthorized" } });
      slackChecks++;
      return answer(200, { challenge: body?.challenge });
    }
    if (req.url === "/clients/slack/config") {
      if (req.method === "GET") return answer(200, slackConfig);
      slackConfig = body as typeof slackConfig;
      return answer(200, slackConfig);
    }
    if (req.url === "/clients/telegram/config") {
      if (req.method === "GET") return answer(200, telegramConfig);
      telegramConfig = body as typeof telegramConfig;
      return answer(200, telegramConfig);
    }
    if (req.url?.startsWith("/discord-api/")) {
      if (req.headers.authorization !== `Bot ${BOT_TOKEN}`)
        return answer(401, { message: "401: Unauthorized", code: 0 });
      const path = req.url.slice("/discord-api".length);
      if (path === "/applications/@me" && req.method === "GET")
        return answer(200, {
          id: APP_ID,
          name: "Ada's bot",
          verify_key: PUBLIC_KEY,
          interactions_endpoint_url: endpoint,
          flags: appFlags,
        });
      if (path === "/applications/@me" && req.method === "PATCH") {
        if (refuseEndpoint)
          return answer(400, {
            message: "Invalid Form Body",
            errors: { interactions_endpoint_url: "could not be verified" },
          });
        endpoint = String(body?.interactions_endpoint_url);
        return answer(200, { id: APP_ID });
      }
      if (path === `/applications/${APP_ID}/commands`) {
        if (req.method === "PUT") registered = body as unknown as unknown[];
        return answer(200, registered);
      }
      return answer(404, { message: "Unknown" });
    }
    if (req.url === "/health") {
      // A stopped Gateway makes the worker degraded, and /health says so with a 503.
      const stopped = gatewayHealth?.state === "stopped";
      return answer(stopped ? 503 : 200, {
        status: stopped ? "degraded" : "ok",
        schema: { version: "0013_x.sql", error: null },
        model: { backend: "workers-ai" },
        embedding: { dimensions: embedDimensions },
        ...(gatewayHealth ? { gateway: gatewayHealth } : {}),
      });
    }
    if (req.url === "/clients/discord/config") {
      if (req.method === "GET") return answer(200, discordConfig);
      if (body?.defaultAgentId === "nobody") return answer(404, { error: { code: "not_found" } });
      discordConfig = body as typeof discordConfig;
      return answer(200, discordConfig);
    }
    if (req.url?.startsWith("/agents"))
      return answer(200, { agents: [{ id: "ada" }, { id: "marlowe" }] });
    if (req.url === "/memories/embed") return answer(200, { embedded: 3, pending: false });
    answer(404, {});
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server?.close();
  rmSync(bin, { recursive: true, force: true });
});

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), "edge-agents-deploy-"));
  copyFileSync("wrangler.toml", join(work, "wrangler.toml"));
  requests = [];
  bodies = [];
  authorizations = [];
  embedDimensions = 768;
  discordConfig = { defaultAgentId: null, allowedChannels: [] };
  endpoint = null;
  registered = [];
  refuseEndpoint = false;
  telegramWebhook = null;
  refuseWebhook = false;
  telegramConfig = { defaultAgentId: null, allowedChats: [] };
  slackConfig = { defaultAgentId: null, allowedChannels: [] };
  workerSlackSecret = SLACK_SECRET;
  slackChecks = 0;
  appFlags = 0;
  gatewayHealth = null;
  setState({ exists: false, secrets: [], vars: {}, vectorize: null });
});

function setState(state: StubState): void {
  writeFileSync(join(work, "state.json"), JSON.stringify(state));
}

function state(): StubState {
  return JSON.parse(readFileSync(join(work, "state.json"), "utf8")) as StubState;
}

/** An account whose worker exists with these secrets. */
function deployedBefore(secrets = ["ADMIN_TOKEN", "SECRETS_KEY"]): void {
  setState({ exists: true, secrets, vars: {}, vectorize: null });
}

/** A call's arguments on one line, the secrets file's (random) path shown as <file>. */
const line = (call: Call): string =>
  call.args.join(" ").replace(call.secretsPath ?? "\0", "<file>");

function calls(): Call[] {
  try {
    return readFileSync(join(work, "calls.log"), "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Call);
  } catch {
    return [];
  }
}

function deployEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    STUB_STATE: join(work, "state.json"),
    STUB_LOG: join(work, "calls.log"),
    STUB_URL: "https://edge-agents.example.workers.dev",
  };
  for (const name of [
    "ADMIN_TOKEN",
    "OPENAI_API_KEY",
    "DISCORD_APPLICATION_ID",
    "DISCORD_BOT_TOKEN",
    "DISCORD_PUBLIC_KEY",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET",
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
    "INSTAGRAM_ACCESS_TOKEN",
    "BRAVE_SEARCH_API_KEY",
  ])
    delete env[name];
  return {
    ...env,
    DISCORD_API_BASE: `${url}/discord-api`,
    TELEGRAM_API_BASE: `${url}/telegram-api`,
    SLACK_API_BASE: `${url}/slack-api`,
    ...extra,
  };
}

/** The deploy with its output going to a pipe, as in CI. */
async function deploy(
  args: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, "--url", url, ...args], {
      cwd: work,
      env: deployEnv(extraEnv),
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, out: failed.stdout + failed.stderr };
  }
}

const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const shellQuote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * The deploy on a pseudo-terminal (stdin and stdout both TTYs). When the output shows a `prompt`,
 * its `answer` is typed, followed by Enter.
 */
function deployOnTerminal(
  args: string[] = [],
  typing: Array<{ prompt: string; answer: string }> = [],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  const command = [process.execPath, SCRIPT, "--url", url, ...args].map(shellQuote).join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    cwd: work,
    env: deployEnv(extraEnv),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  const waiting = [...typing];
  const collect = (chunk: Buffer) => {
    out += chunk.toString();
    const next = waiting[0];
    if (next && out.includes(next.prompt)) {
      waiting.shift();
      child.stdin.write(`${next.answer}\r`);
    }
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  return new Promise((done) => child.on("close", (code) => done({ code: code ?? 1, out })));
}

describe("npm run deploy", () => {
  it.skipIf(!hasScript)(
    "on a fresh account, on a terminal: one deploy uploads ADMIN_TOKEN and SECRETS_KEY with the worker, prints the token once, wakes the worker",
    async () => {
      const { code, out } = await deployOnTerminal();
      expect(code, out).toBe(0);
      const made = calls();
      expect(made.map(line)).toEqual(["secret list --format json", "deploy --secrets-file <file>"]);
      const secrets = made[1]!.secrets!;
      expect(Object.keys(secrets).sort()).toEqual(["ADMIN_TOKEN", "SECRETS_KEY"]);
      const token = secrets.ADMIN_TOKEN!;
      expect(token).toMatch(/^[0-9a-f]{48}$/);
      expect(secrets.SECRETS_KEY).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // Only this user could read the file, and it is gone.
      expect(made[1]!.secretsMode).toBe("600");
      expect(existsSync(made[1]!.secretsPath!)).toBe(false);
      // The token is on the terminal once, and never on a command line.
      expect(out.split(token).length - 1).toBe(1);
      expect(made.every((c) => !c.args.join(" ").includes(token))).toBe(true);
      // Its first request applies the migrations and seeds the characters.
      expect(requests).toEqual(["GET /health"]);
    },
  );

  it("on a fresh account, off a terminal (CI): makes no admin token, prints none, and says how to set one", async () => {
    const { code, out } = await deploy();
    expect(code, out).toBe(0);
    const made = calls();
    expect(made.map(line)).toEqual(["secret list --format json", "deploy --secrets-file <file>"]);
    expect(Object.keys(made[1]!.secrets!)).toEqual(["SECRETS_KEY"]);
    // Nothing that looks like a token made here reaches the log.
    expect(out).not.toMatch(/[0-9a-f]{48}/);
    expect(out).toContain("ADMIN_TOKEN is not set on the worker");
    expect(out).toContain("npx wrangler secret put ADMIN_TOKEN");
    expect(out).toContain("Deployed; ADMIN_TOKEN is still to set");
  });

  it("on a fresh account, with secrets in the environment: uploads them with the deploy and never prints them", async () => {
    const token = "operator-chosen-admin-token-0123456789";
    const key = "sk-test-openai-key-0123456789";
    const { code, out } = await deploy([], { ADMIN_TOKEN: token, OPENAI_API_KEY: key });
    expect(code, out).toBe(0);
    const made = calls();
    expect(made.map(line)).toEqual(["secret list --format json", "deploy --secrets-file <file>"]);
    expect(made[1]!.secrets).toMatchObject({ ADMIN_TOKEN: token, OPENAI_API_KEY: key });
    expect(out).not.toContain(token);
    expect(out).not.toContain(key);
    expect(out).toContain("Set ADMIN_TOKEN from this shell.");
    expect(out).toContain("Set OPENAI_API_KEY from this shell.");
  });

  it("refuses --token before touching the account: says to use ADMIN_TOKEN, never repeats the value", async () => {
    for (const args of [
      ["--token", "secret-on-argv-0123456789"],
      ["--token=secret-on-argv-0123456789"],
    ]) {
      const { code, out } = await deploy(args);
      expect(code).not.toBe(0);
      expect(out).toContain("--token is not accepted");
      expect(out).toContain("ADMIN_TOKEN");
      expect(out).not.toContain("secret-on-argv-0123456789");
    }
    expect(calls()).toEqual([]);
  });

  it("refuses an ADMIN_TOKEN the worker would refuse (under 16 characters) before deploying", async () => {
    const { code, out } = await deploy([], { ADMIN_TOKEN: "short-token" });
    expect(code).not.toBe(0);
    expect(out).toContain("shorter than 16 characters");
    expect(out).not.toContain("short-token");
    expect(calls()).toEqual([]);
  });

  it("run again: uploads no secret, so none is overwritten, and creates nothing", async () => {
    deployedBefore();
    const { code, out } = await deploy([], { ADMIN_TOKEN: "a-different-admin-token-0123456789" });
    expect(code, out).toBe(0);
    expect(calls().map(line)).toEqual(["secret list --format json", "deploy"]);
    expect(out).not.toContain("admin token (shown once");
  });

  it("when the secrets cannot be listed (not a new worker): deploys nothing, rather than guess and overwrite", async () => {
    setState({
      exists: true,
      listFails: true,
      secrets: ["ADMIN_TOKEN"],
      vars: {},
      vectorize: null,
    });
    const { code, out } = await deploy([], { ADMIN_TOKEN: "a-different-admin-token-0123456789" });
    expect(code).not.toBe(0);
    expect(out).toContain("Authentication error");
    expect(out).toContain("Nothing was deployed");
    expect(calls().map(line)).toEqual(["secret list --format json"]);
  });

  it("--var: sets checked variables with the deploy, and later deploys keep them (keep_vars)", async () => {
    deployedBefore();
    const { code, out } = await deploy([
      "--var",
      "OPENAI_BASE_URL=https://api.groq.com/openai/v1",
      "--var",
      "MODEL=llama-3.3-70b-versatile",
      "--var",
      "DAILY_TOKEN_LIMIT=",
    ]);
    expect(code, out).toBe(0);
    expect(calls().map(line)).toEqual([
      "secret list --format json",
      "deploy --var OPENAI_BASE_URL:https://api.groq.com/openai/v1 --var MODEL:llama-3.3-70b-versatile --var DAILY_TOKEN_LIMIT:",
    ]);
    expect(out).toContain("Set MODEL; later deploys keep it.");
    expect(out).toContain("Set DAILY_TOKEN_LIMIT (unset)");
    // The tracked file sets no variable and keeps the deployment's.
    const toml = readFileSync(join(work, "wrangler.toml"), "utf8");
    expect(toml).toMatch(/^keep_vars = true$/m);
    expect(toml).not.toMatch(/^\[vars\]/m);
    expect(state().vars.MODEL).toBe("llama-3.3-70b-versatile");
  });

  it("--var refuses, before touching the account: a secret (never echoing it), an unknown name, a bad value, a development-only switch", async () => {
    deployedBefore();
    const cases: Array<[string, string]> = [
      ["OPENAI_API_KEY=sk-secret-value-0123", "that is a secret"],
      ["MODLE=gpt-4.1", "not a variable the worker reads"],
      ["DAILY_TOKEN_LIMIT=lots", "DAILY_TOKEN_LIMIT must be a whole number"],
      ["OPENAI_BASE_URL=not a url", "OPENAI_BASE_URL"],
      ["ALLOW_LOOPBACK_FETCH=true", "not a variable the worker reads"],
      ["MODEL", "write it NAME=value"],
    ];
    for (const [option, said] of cases) {
      const { code, out } = await deploy(["--var", option]);
      expect(code, option).not.toBe(0);
      expect(out, option).toContain(said);
    }
    const secret = await deploy(["--var", "OPENAI_API_KEY=sk-secret-value-0123"]);
    expect(secret.out).not.toContain("sk-secret-value-0123");
    expect(calls()).toEqual([]);
  });

  describe("--discord", () => {
    const withBot = { DISCORD_BOT_TOKEN: BOT_TOKEN, ADMIN_TOKEN: "admin-token-for-the-test" };

    it("from the bot token alone, on a fresh account: one deploy with the id, key and token; commands, endpoint, default agent, invite URL", async () => {
      const { code, out } = await deploy(["--discord"], withBot);
      expect(code, out).toBe(0);
      const made = calls();
      expect(made.map(line)).toEqual([
        "secret list --format json",
        `deploy --var DISCORD_APPLICATION_ID:${APP_ID} --secrets-file <file>`,
      ]);
      expect(made[1]!.secrets).toMatchObject({
        DISCORD_BOT_TOKEN: BOT_TOKEN,
        DISCORD_PUBLIC_KEY: PUBLIC_KEY,
        ADMIN_TOKEN: "admin-token-for-the-test",
      });
      expect(requests).toEqual([
        "GET /discord-api/applications/@me",
        "GET /health",
        `GET /discord-api/applications/${APP_ID}/commands`,
        `PUT /discord-api/applications/${APP_ID}/commands`,
        "PATCH /discord-api/applications/@me",
        "GET /clients/discord/config",
        "GET /agents?limit=100",
        "POST /clients/discord/config",
      ]);
      expect(registered.length).toBeGreaterThan(0);
      expect(endpoint).toBe(`${url}/discord/interactions`);
      expect(discordConfig).toEqual({ defaultAgentId: "ada", allowedChannels: [] });
      expect(out).toContain(`Discord: Ada's bot (application ${APP_ID})`);
      expect(out).toContain("Default agent: ada (the first agent");
      // Slash commands need only the token; mentions need the intent and the Gateway: it says so.
      expect(out).toContain("switch on the Message Content intent");
      expect(out).toContain("npm run deploy -- --var DISCORD_GATEWAY=true");
      const invite = /https:\/\/discord\.com\/oauth2\/authorize\S+/.exec(out)?.[0];
      expect(invite).toBeDefined();
      const params = new URL(invite!).searchParams;
      expect(params.get("client_id")).toBe(APP_ID);
      expect(params.get("scope")).toBe("bot applications.commands");
      // View Channel, Send Messages, Send Messages in Threads, Create Public Threads, Read
      // Message History.
      expect(BigInt(params.get("permissions")!)).toBe(
        (1n << 10n) | (1n << 11n) | (1n << 38n) | (1n << 35n) | (1n << 16n),
      );
      // The bot token is on no command line and in no output.
      expect(out).not.toContain(BOT_TOKEN);
      expect(made.every((c) => !c.args.join(" ").includes(BOT_TOKEN))).toBe(true);

      // Again: nothing to register, the endpoint is set, the default agent stays.
      requests = [];
      const again = await deploy(["--discord"], withBot);
      expect(again.code, again.out).toBe(0);
      expect(requests).toEqual([
        "GET /discord-api/applications/@me",
        "GET /health",
        `GET /discord-api/applications/${APP_ID}/commands`,
        "GET /clients/discord/config",
      ]);
      expect(again.out).toContain("(already set)");
      expect(again.out).toContain("Default agent: ada (chosen before");
    });

    it("says what @mentions still need: the Gateway when the intent is on; the intent when the Gateway is on without it, even with /health degraded", async () => {
      deployedBefore();
      appFlags = 1 << 19; // GATEWAY_MESSAGE_CONTENT_LIMITED: switched on in the portal
      const intentOn = await deploy(["--discord"], withBot);
      expect(intentOn.code, intentOn.out).toBe(0);
      expect(intentOn.out).toContain(
        "npm run deploy -- --var DISCORD_GATEWAY=true   (the Message Content intent is on)",
      );
      expect(intentOn.out).not.toContain("switch on the Message Content intent");

      // The Gateway on without the intent: Discord closed it with 4014, and /health answers 503.
      appFlags = 0;
      gatewayHealth = { state: "stopped" };
      const stopped = await deploy(["--discord"], withBot);
      expect(stopped.code, stopped.out).toBe(0);
      expect(stopped.out).toContain("degraded");
      expect(stopped.out).toContain("Gateway: stopped, but the Message Content intent is off");
      expect(stopped.out).toContain(
        "Reset Token on the Bot page, then npm run deploy -- --discord",
      );
      expect(stopped.out).not.toContain("--var DISCORD_GATEWAY=true");

      appFlags = 1 << 18; // GATEWAY_MESSAGE_CONTENT: a verified app's
      gatewayHealth = { state: "connected" };
      const running = await deploy(["--discord"], withBot);
      expect(running.code, running.out).toBe(0);
      expect(running.out).toContain("Gateway: connected (@mentions, replies, DMs).");
    });

    it("--agent picks another default agent; an agent the worker lacks stops with a clear error", async () => {
      deployedBefore();
      discordConfig = { defaultAgentId: "ada", allowedChannels: ["111"] };
      const { code, out } = await deploy(["--discord", "--agent", "marlowe"], withBot);
      expect(code, out).toBe(0);
      expect(discordConfig).toEqual({ defaultAgentId: "marlowe", allowedChannels: ["111"] });
      const missing = await deploy(["--discord", "--agent", "nobody"], withBot);
      expect(missing.code).not.toBe(0);
      expect(missing.out).toContain("--agent nobody: the worker has no such agent");
    });

    it("a bot token Discord refuses stops everything before the account is touched, and is not echoed", async () => {
      const wrong = "wrong-bot-token-0123456789";
      const { code, out } = await deploy(["--discord"], { DISCORD_BOT_TOKEN: wrong });
      expect(code).not.toBe(0);
      expect(out).toContain("Discord refused the bot token (HTTP 401)");
      expect(out).not.toContain(wrong);
      expect(calls()).toEqual([]);
    });

    it("off a terminal without DISCORD_BOT_TOKEN: says where the token comes from, touches nothing", async () => {
      const { code, out } = await deploy(["--discord"]);
      expect(code).not.toBe(0);
      expect(out).toContain("--discord needs the bot token: set DISCORD_BOT_TOKEN");
      expect(calls()).toEqual([]);
      expect(requests).toEqual([]);
    });

    it("an endpoint Discord does not take: says its reason and what to paste where; the rest is done", async () => {
      deployedBefore();
      refuseEndpoint = true;
      const { code, out } = await deploy(["--discord"], withBot);
      expect(code, out).toBe(0);
      expect(out).toContain("Discord did not take");
      expect(out).toContain("(HTTP 400: Invalid Form Body)");
      expect(out).toContain(`${url}/discord/interactions`);
      expect(out).toContain("Interactions Endpoint URL");
      expect(discordConfig.defaultAgentId).toBe("ada");
    });

    it.skipIf(!hasScript)(
      "on a terminal: asks for the bot token and the admin token, echoing neither",
      async () => {
        deployedBefore();
        const admin = "typed-admin-token-0123456789";
        const { code, out } = await deployOnTerminal(
          ["--discord"],
          [
            { prompt: "Discord bot token", answer: BOT_TOKEN },
            { prompt: "Admin token", answer: admin },
          ],
        );
        expect(code, out).toBe(0);
        expect(out).not.toContain(BOT_TOKEN);
        expect(out).not.toContain(admin);
        expect(authorizations).toContain(`Bearer ${admin}`);
        expect(discordConfig.defaultAgentId).toBe("ada");
      },
    );
  });

  describe("Telegram", () => {
    const withTelegram = {
      TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      ADMIN_TOKEN: "admin-token-for-the-test",
    };

    it("with TELEGRAM_BOT_TOKEN: uploads the token and a new webhook secret, sets the webhook with them, binds the first agent, echoes neither", async () => {
      const { code, out } = await deploy([], withTelegram);
      expect(code, out).toBe(0);
      const uploaded = calls()[1]!.secrets!;
      expect(uploaded.TELEGRAM_BOT_TOKEN).toBe(TELEGRAM_TOKEN);
      expect(uploaded.TELEGRAM_WEBHOOK_SECRET).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(telegramWebhook).toEqual({
        url: `${url}/telegram/webhook`,
        secret_token: uploaded.TELEGRAM_WEBHOOK_SECRET,
        allowed_updates: ["message", "edited_message", "callback_query"],
      });
      expect(telegramConfig).toEqual({ defaultAgentId: "ada", allowedChats: [] });
      expect(out).toContain("Telegram: @ada_agent_bot");
      expect(out).toContain(`Telegram webhook: ${url}/telegram/webhook (set, with its secret).`);
      expect(out).toContain("Telegram's agent: ada (the first agent");
      expect(out).not.toContain(TELEGRAM_TOKEN);
      expect(out).not.toContain(uploaded.TELEGRAM_WEBHOOK_SECRET);
      expect(calls().every((c) => !c.args.join(" ").includes(TELEGRAM_TOKEN))).toBe(true);
    });

    it("takes the shell's TELEGRAM_WEBHOOK_SECRET and --agent; keeps the chats allowed before", async () => {
      deployedBefore(["ADMIN_TOKEN", "SECRETS_KEY", "TELEGRAM_BOT_TOKEN"]);
      telegramConfig = { defaultAgentId: "ada", allowedChats: ["-1001"] };
      const secret = "telegram-webhook-secret-from-shell";
      const { code, out } = await deploy(["--agent", "marlowe"], {
        ...withTelegram,
        TELEGRAM_WEBHOOK_SECRET: secret,
      });
      expect(code, out).toBe(0);
      expect(calls()[1]!.secrets).toEqual({
        TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
        TELEGRAM_WEBHOOK_SECRET: secret,
      });
      expect(telegramWebhook?.secret_token).toBe(secret);
      expect(telegramConfig).toEqual({ defaultAgentId: "marlowe", allowedChats: ["-1001"] });
      expect(out).not.toContain(secret);
    });

    it("a webhook Telegram does not take: says its reason; the deploy is done", async () => {
      refuseWebhook = true;
      const { code, out } = await deploy([], withTelegram);
      expect(code, out).toBe(0);
      expect(out).toContain("Telegram webhook: Telegram did not take");
      expect(out).toContain("An HTTPS URL must be provided");
      expect(out).not.toContain(TELEGRAM_TOKEN);
    });

    it("--telegram off a terminal without TELEGRAM_BOT_TOKEN: says where the token comes from, touches nothing", async () => {
      const { code, out } = await deploy(["--telegram"]);
      expect(code).not.toBe(0);
      expect(out).toContain("--telegram needs the bot token: set TELEGRAM_BOT_TOKEN");
      expect(calls()).toEqual([]);
      expect(requests).toEqual([]);
    });

    it.skipIf(!hasScript)(
      "--telegram on a terminal: asks for the bot token, never echoes it, and sets the bot up",
      async () => {
        deployedBefore();
        const { code, out } = await deployOnTerminal(
          ["--telegram"],
          [{ prompt: "Telegram bot token", answer: TELEGRAM_TOKEN }],
          { ADMIN_TOKEN: "admin-token-for-the-test" },
        );
        expect(code, out).toBe(0);
        expect(out).not.toContain(TELEGRAM_TOKEN);
        expect(calls()[1]!.secrets!.TELEGRAM_BOT_TOKEN).toBe(TELEGRAM_TOKEN);
        expect(telegramWebhook?.url).toBe(`${url}/telegram/webhook`);
        expect(telegramConfig.defaultAgentId).toBe("ada");
      },
    );

    it("a token Telegram refuses stops everything before the account is touched, and is not echoed", async () => {
      const wrong = "987654321:AAH-wrong-token_0123456789";
      const { code, out } = await deploy([], { TELEGRAM_BOT_TOKEN: wrong });
      expect(code).not.toBe(0);
      expect(out).toContain("Telegram refused TELEGRAM_BOT_TOKEN");
      expect(out).not.toContain(wrong);
      expect(calls()).toEqual([]);
    });
  });

  describe("--slack", () => {
    const withApp = {
      SLACK_BOT_TOKEN: SLACK_TOKEN,
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      ADMIN_TOKEN: "admin-token-for-the-test",
    };

    it("from the bot token and Signing Secret: checks the token first, uploads both with the deploy, passes Slack's URL check, prints the request URLs, binds the first agent, echoes neither", async () => {
      const { code, out } = await deploy(["--slack"], withApp);
      expect(code, out).toBe(0);
      const made = calls();
      expect(made.map(line)).toEqual(["secret list --format json", "deploy --secrets-file <file>"]);
      expect(made[1]!.secrets).toMatchObject({
        SLACK_BOT_TOKEN: SLACK_TOKEN,
        SLACK_SIGNING_SECRET: SLACK_SECRET,
      });
      expect(requests).toEqual([
        "POST /slack-api/auth.test",
        "GET /health",
        "POST /slack/events",
        "GET /clients/slack/config",
        "GET /agents?limit=100",
        "POST /clients/slack/config",
      ]);
      // Signed as Slack signs: the stand-in worker checked it with the uploaded secret.
      expect(slackChecks).toBe(1);
      expect(slackConfig).toEqual({ defaultAgentId: "ada", allowedChannels: [] });
      expect(out).toContain("Slack: @edge-agent in Ada's workspace (T0123ABCD)");
      expect(out).toContain(`Event Subscriptions, Request URL:       ${url}/slack/events`);
      expect(out).toContain(`Interactivity & Shortcuts, Request URL: ${url}/slack/interactions`);
      expect(out).toContain(`Slash Commands /ask and /forget, URL:   ${url}/slack/commands`);
      expect(out).toContain("Slack's URL check: the worker answers it.");
      expect(out).toContain("Slack's agent: ada (the first agent");
      for (const secret of [SLACK_TOKEN, SLACK_SECRET]) {
        expect(out).not.toContain(secret);
        expect(made.every((c) => !c.args.join(" ").includes(secret))).toBe(true);
      }
    });

    it("run again with --agent: uploads both again (replaced), moves the agent, keeps the channels allowed before", async () => {
      deployedBefore(["ADMIN_TOKEN", "SECRETS_KEY", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"]);
      slackConfig = { defaultAgentId: "ada", allowedChannels: ["C0123ABCD"] };
      const { code, out } = await deploy(["--slack", "--agent", "marlowe"], withApp);
      expect(code, out).toBe(0);
      expect(calls()[1]!.secrets).toEqual({
        SLACK_BOT_TOKEN: SLACK_TOKEN,
        SLACK_SIGNING_SECRET: SLACK_SECRET,
      });
      expect(out).toContain("Set SLACK_SIGNING_SECRET (replaced).");
      expect(slackConfig).toEqual({ defaultAgentId: "marlowe", allowedChannels: ["C0123ABCD"] });
      expect(out).toContain("Slack's agent: marlowe.");
    });

    it("a token Slack refuses stops everything before the account is touched, and is not echoed", async () => {
      const wrong = "xoxb-0000000000-wrong-token-0123";
      const { code, out } = await deploy(["--slack"], { ...withApp, SLACK_BOT_TOKEN: wrong });
      expect(code).not.toBe(0);
      expect(out).toContain("Slack refused SLACK_BOT_TOKEN (invalid_auth)");
      expect(out).not.toContain(wrong);
      expect(calls()).toEqual([]);
    });

    it("refuses, before touching anything: values the worker would refuse (naming the rule, not the value), and missing ones off a terminal", async () => {
      const cases: Array<[Record<string, string>, string, string]> = [
        [
          { SLACK_SIGNING_SECRET: "not-hex/0123456789abcdef" },
          "SLACK_SIGNING_SECRET must be the app's signing secret (letters and digits)",
          "not-hex/0123456789abcdef",
        ],
        [
          { SLACK_BOT_TOKEN: "xoxp-user-token-0123456789" },
          "SLACK_BOT_TOKEN must be a Slack bot token (xoxb-...)",
          "xoxp-user-token-0123456789",
        ],
      ];
      for (const [env, said, value] of cases) {
        const { code, out } = await deploy(["--slack"], { ...withApp, ...env });
        expect(code, said).not.toBe(0);
        expect(out).toContain(said);
        expect(out).not.toContain(value);
      }
      const missing = await deploy(["--slack"], { SLACK_BOT_TOKEN: SLACK_TOKEN });
      expect(missing.code).not.toBe(0);
      expect(missing.out).toContain("--slack needs SLACK_SIGNING_SECRET: set it in this shell");
      expect(calls()).toEqual([]);
      expect(requests).toEqual([]);
    });

    it("a worker that does not pass Slack's URL check: says so and where; the rest is done", async () => {
      workerSlackSecret = "another0signing0secret0held0there";
      const { code, out } = await deploy(["--slack"], withApp);
      expect(code, out).toBe(0);
      expect(out).toContain(
        "Slack's URL check: the worker did not answer a signed url_verification (HTTP 401)",
      );
      expect(out).toContain(`${url}/slack/events`);
      expect(slackConfig.defaultAgentId).toBe("ada");
    });

    it.skipIf(!hasScript)(
      "on a terminal: asks for the token and the Signing Secret, echoing neither",
      async () => {
        deployedBefore();
        const { code, out } = await deployOnTerminal(
          ["--slack"],
          [
            { prompt: "Slack bot token", answer: SLACK_TOKEN },
            { prompt: "Slack signing secret", answer: SLACK_SECRET },
          ],
          { ADMIN_TOKEN: "admin-token-for-the-test" },
        );
        expect(code, out).toBe(0);
        expect(out).not.toContain(SLACK_TOKEN);
        expect(out).not.toContain(SLACK_SECRET);
        expect(calls()[1]!.secrets).toMatchObject({
          SLACK_BOT_TOKEN: SLACK_TOKEN,
          SLACK_SIGNING_SECRET: SLACK_SECRET,
        });
        expect(slackChecks).toBe(1);
      },
    );
  });

  it("--help names the set-up of every chat surface", async () => {
    const { code, out } = await deploy(["--help"]);
    expect(code, out).toBe(0);
    for (const option of ["--discord", "--telegram", "--slack", "--agent"])
      expect(out).toContain(option);
    expect(out).toContain("--var DISCORD_GATEWAY=true");
    expect(out).toContain("manifest in docs/slack.md");
    expect(calls()).toEqual([]);
  });

  it("--memory-shards N: declares MEMORY_DB_1..N before the deploy creates them, adds only what is missing, never unbinds one", async () => {
    deployedBefore();
    const toml = () => readFileSync(join(work, "wrangler.toml"), "utf8");
    const declared = () => [...toml().matchAll(/binding = "(MEMORY_DB_\d+)"/g)].map((m) => m[1]);
    const first = await deploy(["--memory-shards", "2"]);
    expect(first.code, first.out).toBe(0);
    expect(declared()).toEqual(["MEMORY_DB_1", "MEMORY_DB_2"]);
    expect(toml()).toMatch(/binding = "MEMORY_DB_2"\ndatabase_name = "edge-agents-memory-2"/);
    expect(calls().map(line)).toContain("deploy");
    const again = await deploy(["--memory-shards", "3"]);
    expect(again.code, again.out).toBe(0);
    expect(declared()).toEqual(["MEMORY_DB_1", "MEMORY_DB_2", "MEMORY_DB_3"]);
    // Fewer would unbind a database agents may live in: refused before anything is deployed.
    const deploysBefore = calls().filter((call) => line(call) === "deploy").length;
    const fewer = await deploy(["--memory-shards", "1"]);
    expect(fewer.code).not.toBe(0);
    expect(fewer.out).toContain("MEMORY_DB_3");
    expect(calls().filter((call) => line(call) === "deploy")).toHaveLength(deploysBefore);
    expect(declared()).toHaveLength(3);
  });

  it("--vectorize: creates the index with the embedder's size and its metadata indexes before any vector, binds it, redeploys, re-embeds", async () => {
    deployedBefore();
    const admin = { ADMIN_TOKEN: "admin-token-for-the-test" };
    const { code, out } = await deploy(["--vectorize"], admin);
    expect(code, out).toBe(0);
    expect(calls().map(line)).toEqual([
      "secret list --format json",
      "deploy",
      "vectorize get edge-agents-memories --json",
      "vectorize create edge-agents-memories --dimensions=768 --metric=cosine",
      "vectorize list-metadata-index edge-agents-memories --json",
      ...["agentId", "type", "roomId", "userId", "memoryId"].map(
        (p) =>
          `vectorize create-metadata-index edge-agents-memories --propertyName=${p} --type=string`,
      ),
      "deploy",
    ]);
    expect(readFileSync(join(work, "wrangler.toml"), "utf8")).toMatch(
      /\[\[vectorize\]\]\nbinding = "VECTORS"\nindex_name = "edge-agents-memories"/,
    );
    expect(requests.filter((r) => r === "POST /memories/embed")).toHaveLength(2);
    expect(new Set(authorizations)).toEqual(new Set(["Bearer admin-token-for-the-test"]));

    // Again: the index, its metadata indexes and the binding exist; nothing is made twice.
    const again = await deploy(["--vectorize"], admin);
    expect(again.code, again.out).toBe(0);
    const second = calls().slice(11).map(line);
    expect(second).toEqual([
      "secret list --format json",
      "deploy",
      "vectorize get edge-agents-memories --json",
      "vectorize list-metadata-index edge-agents-memories --json",
    ]);
  });

  it("--vectorize refuses an index of another size: never two dimensions in one index", async () => {
    setState({
      exists: true,
      secrets: ["ADMIN_TOKEN", "SECRETS_KEY"],
      vars: {},
      vectorize: { dimensions: 384, metadata: [] },
    });
    const { code, out } = await deploy(["--vectorize"]);
    expect(code).not.toBe(0);
    expect(out).toContain("holds 384 dimensions, the embedder gives 768");
    expect(calls().some((c) => c.args.includes("create-metadata-index"))).toBe(false);
  });

  it.skipIf(!hasScript)(
    "--vectorize on a terminal, without ADMIN_TOKEN: asks for the admin token and does not echo it",
    async () => {
      setState({
        exists: true,
        secrets: ["ADMIN_TOKEN", "SECRETS_KEY"],
        vars: {},
        vectorize: {
          dimensions: 768,
          metadata: ["agentId", "type", "roomId", "userId", "memoryId"],
        },
      });
      const typed = "typed-admin-token-0123456789";
      const { code, out } = await deployOnTerminal(
        ["--vectorize"],
        [{ prompt: "Admin token", answer: typed }],
      );
      expect(code, out).toBe(0);
      expect(out).not.toContain(typed);
      expect(new Set(authorizations)).toEqual(new Set([`Bearer ${typed}`]));
      expect(requests.filter((r) => r === "POST /memories/embed")).toHaveLength(2);
    },
  );
});
