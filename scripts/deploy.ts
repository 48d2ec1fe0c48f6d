// `npm run deploy [-- --vectorize]`: the one deploy command. It runs `wrangler deploy` (which
// creates the D1 database and R2 bucket on a first deploy), sets the secrets a worker cannot do
// without when they are missing (through `wrangler secret put` on stdin), opens the worker's
// /health (its first request applies the migrations and seeds the shipped characters), and
// registers the Discord commands when Discord is configured in this shell. With --vectorize it
// moves memory vectors to Vectorize. Running it again changes nothing that exists.
// The admin token never travels on a command line (`ps` and shell history keep those) and is
// printed only to a terminal (CI logs keep everything else): see docs/deploying.md.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { MIN_ADMIN_TOKEN_CHARS } from "../src/config.ts";

const HELP = `Usage: npm run deploy [-- --vectorize] [--url https://your-worker.example]
  --vectorize  create the Vectorize index (the embedder's dimension, metadata indexes), bind it,
               deploy again and re-embed existing memories into it
  --url        where the worker answers, when it is not the workers.dev address wrangler prints
The admin token comes from ADMIN_TOKEN in the environment, or is asked for on a terminal; it is
never an option, since a command line stays in \`ps\` and in shell history.`;

/** Said when someone passes the admin token as an option; never repeats what they passed. */
const TOKEN_OPTION_REFUSED =
  "--token is not accepted: a command line stays in `ps` and in shell history. " +
  "Put the admin token in ADMIN_TOKEN instead " +
  "(`read -rs ADMIN_TOKEN && export ADMIN_TOKEN` types it unseen), " +
  "or run on a terminal without it and you will be asked for it when it is needed.";

export const VECTORIZE_INDEX = "edge-agents-memories";
/** Metadata the vector index filters on (src/memory/vectorize-index.ts), indexed before any vector. */
export const METADATA_INDEXES = ["agentId", "type", "roomId", "userId", "memoryId"];
/** Secrets copied from this shell to the worker when they are set here and not there. */
const OPTIONAL_SECRETS = [
  "OPENAI_API_KEY",
  "DISCORD_PUBLIC_KEY",
  "DISCORD_BOT_TOKEN",
  "INSTAGRAM_ACCESS_TOKEN",
];

interface Run {
  code: number;
  stdout: string;
}

/** Runs wrangler (node_modules/.bin under npm), echoing what it prints; `input` goes to stdin. */
function wrangler(args: string[], options: { input?: string; quiet?: boolean } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("wrangler", args, { stdio: ["pipe", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!options.quiet) process.stdout.write(chunk);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout }));
    child.stdin.end(options.input ?? "");
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

async function remoteSecrets(): Promise<Set<string>> {
  const out = await must(["secret", "list", "--format", "json"], { quiet: true });
  const listed = JSON.parse(out.slice(out.indexOf("["))) as Array<{ name: string }>;
  return new Set(listed.map((secret) => secret.name));
}

async function putSecret(name: string, value: string): Promise<void> {
  await must(["secret", "put", name], { input: value, quiet: true });
}

/** GET a JSON path on the worker, a few times: a new worker takes a moment to answer everywhere. */
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
      last = `HTTP ${response.status}`;
    } catch (error) {
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

/**
 * Gives the worker an admin token when it has none: the shell's ADMIN_TOKEN, else a random one
 * printed once, and only to a terminal. Off a terminal (CI) a printed token would stay in a log,
 * so none is made: the worker then refuses every API call until one is set, and the operator is
 * told how. Returns the token the worker now holds, when this run knows it.
 */
async function ensureAdminToken(fromEnv: string | undefined): Promise<string | undefined> {
  if (fromEnv) {
    await putSecret("ADMIN_TOKEN", fromEnv);
    console.log("Set ADMIN_TOKEN from this shell.");
    return fromEnv;
  }
  if (!process.stdout.isTTY) {
    console.error(
      [
        "",
        "  ADMIN_TOKEN is not set on the worker, and none was made: this output is not a terminal,",
        "  so a new token would be kept in a log. Until one is set the API refuses every request.",
        "  Set it without it touching a log or a command line, either on a terminal:",
        "    openssl rand -hex 24                  (keep it somewhere safe)",
        "    npx wrangler secret put ADMIN_TOKEN   (paste it when asked)",
        "  or run the deploy again with ADMIN_TOKEN in its environment (a CI secret, say).",
        "",
      ].join("\n"),
    );
    return undefined;
  }
  // Hex: a token starting with "-" would read as an option on command lines.
  const token = randomBytes(24).toString("hex");
  await putSecret("ADMIN_TOKEN", token);
  console.log(`\n  Your admin token (shown once; keep it somewhere safe):\n\n    ${token}\n`);
  return token;
}

/** The admin token for the deploy's own API calls: ADMIN_TOKEN, else asked for on a terminal. */
async function adminTokenForApi(fromEnv: string | undefined): Promise<string | undefined> {
  if (fromEnv || !onTerminal()) return fromEnv;
  const typed = await askHidden("Admin token, to re-embed memories (not shown; Enter skips): ");
  return typed || undefined;
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

async function main(): Promise<void> {
  // Before parsing, so the refusal says what to do instead of "unknown option".
  if (process.argv.some((arg) => arg === "--token" || arg.startsWith("--token=")))
    throw new Error(TOKEN_OPTION_REFUSED);
  const { values } = parseArgs({
    options: {
      vectorize: { type: "boolean" },
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
  const envToken = adminTokenFromEnv();

  const deployed = await must(["deploy"]);
  const base = values.url ?? /https:\/\/[a-z0-9.-]+\.workers\.dev/i.exec(deployed)?.[0];

  const present = await remoteSecrets();
  const adminToken = present.has("ADMIN_TOKEN") ? undefined : await ensureAdminToken(envToken);
  if (!present.has("SECRETS_KEY")) {
    await putSecret("SECRETS_KEY", randomBytes(32).toString("base64url"));
    console.log("Set SECRETS_KEY (random; it encrypts stored secrets and OAuth tokens).");
  }
  for (const name of OPTIONAL_SECRETS) {
    const value = process.env[name]?.trim();
    if (value && !present.has(name)) {
      await putSecret(name, value);
      console.log(`Set ${name} from this shell.`);
    }
  }

  if (base) {
    // The first request applies pending migrations and, on a new deployment, seeds the characters.
    const health = (await workerJson(base, "/health")) as {
      schema?: { version: string | null; error: unknown } | null;
      model?: { backend: string };
    };
    console.log(
      `Worker at ${base}: schema ${health.schema?.version ?? "unknown"}, model backend ${health.model?.backend ?? "unknown"}.`,
    );
    if (health.schema?.error)
      console.log(`  A migration failed: ${JSON.stringify(health.schema.error)}`);
  } else {
    console.log(
      "Could not tell the worker's address from wrangler's output; pass --url to check it.",
    );
  }

  if (process.env.DISCORD_APPLICATION_ID && process.env.DISCORD_BOT_TOKEN) {
    console.log("Registering the Discord commands (global)...");
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [new URL("./discord-register.ts", import.meta.url).pathname],
        { stdio: "inherit" },
      );
      child.on("close", (code) =>
        code === 0 ? resolve() : reject(new Error(`discord:register failed (exit ${code})`)),
      );
    });
  }

  if (values.vectorize) {
    if (!base) throw new Error("--vectorize needs the worker's address: pass --url");
    await vectorize(base, adminToken ?? (await adminTokenForApi(envToken)));
  }
  const tokenSet = present.has("ADMIN_TOKEN") || adminToken !== undefined;
  console.log(tokenSet ? "Deployed." : "Deployed; ADMIN_TOKEN is still to set (see above).");
}

main().catch((error: unknown) => {
  console.error(`deploy: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
