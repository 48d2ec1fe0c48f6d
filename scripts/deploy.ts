// `npm run deploy [-- --vectorize]`: the one deploy command. It runs `wrangler deploy` (which
// creates the D1 database and R2 bucket on a first deploy), sets the secrets a worker cannot do
// without when they are missing (ADMIN_TOKEN and SECRETS_KEY, random, through `wrangler secret put`
// on stdin; the admin token is printed once), opens the worker's /health (its first request
// applies the migrations and seeds the shipped characters), and registers the Discord commands
// when Discord is configured in this shell. With --vectorize it moves memory vectors to Vectorize.
// Running it again changes nothing that exists: no secret is overwritten, no index made twice.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

const HELP = `Usage: npm run deploy [-- --vectorize] [--url https://your-worker.example] [--token <admin token>]
  --vectorize  create the Vectorize index (the embedder's dimension, metadata indexes), bind it,
               deploy again and re-embed existing memories into it
  --url        where the worker answers, when it is not the workers.dev address wrangler prints
  --token      the admin token, for --vectorize's re-embedding when ADMIN_TOKEN was set earlier`;

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
      "Re-embed existing memories with `npm run memory -- init --agent <id> --url ... --token <admin token>` for each agent.",
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
  const { values } = parseArgs({
    options: {
      vectorize: { type: "boolean" },
      url: { type: "string" },
      token: { type: "string" },
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

  const deployed = await must(["deploy"]);
  const base = values.url ?? /https:\/\/[a-z0-9.-]+\.workers\.dev/i.exec(deployed)?.[0];

  const present = await remoteSecrets();
  let adminToken = values.token ?? process.env.ADMIN_TOKEN;
  if (!present.has("ADMIN_TOKEN")) {
    // Hex: a token starting with "-" would read as an option on command lines.
    adminToken = randomBytes(24).toString("hex");
    await putSecret("ADMIN_TOKEN", adminToken);
    console.log(
      `\n  Your admin token (shown once; keep it somewhere safe):\n\n    ${adminToken}\n`,
    );
  }
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
    await vectorize(base, adminToken);
  }
  console.log("Deployed.");
}

main().catch((error: unknown) => {
  console.error(`deploy: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
