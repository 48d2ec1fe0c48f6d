// Tests run inside workerd through @cloudflare/vitest-plugin, with the real wrangler.toml, local
// D1/R2/Durable Objects and migrations applied per test file. No test reaches the internet:
// outside services are stand-ins behind globalThis.fetch (see test/stand-ins/).
// Workerd projects: the main one has a model configured; `gateway` adds DISCORD_GATEWAY=true against
// a Gateway stand-in on loopback; `no-model` has none, to prove a turn then answers 503
// model_not_configured and still stores the message; `limits` has tight rate limits and a
// worker-wide daily token ceiling (DAILY_TOKEN_LIMIT); `telemetry` exports traces to an OTLP
// collector stand-in.
// Node projects: `runtime` runs the pure runtime's tests (test/runtime/) in plain Node, which
// proves src/runtime/ needs no platform; `fast` the other platform-free tests (test/tiers.ts);
// together they are the fast tier (`npm run test:fast`). `node` runs the Node tools and the
// import-graph checks.
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import { unstable_readConfig } from "wrangler";
import { SETTINGS } from "./src/settings.ts";
import { NODE_TIER_FILES } from "./test/tiers.ts";

export const TEST_ADMIN_TOKEN = "test-admin-token-0123456789";

// Every variable is set explicitly, so a developer's .dev.vars (which wrangler would load, possibly
// with real keys) never leaks into a test run. Each must be declared in src/settings.ts (checked
// below and by test/node/settings.spec.ts); TEST_* are the tests' own, MCP_* a family of secrets.
const baseBindings = {
  OPENAI_API_KEY: "",
  OPENAI_BASE_URL: "",
  MODEL_FALLBACKS: "",
  DISCORD_PUBLIC_KEY: "",
  DISCORD_BOT_TOKEN: "",
  DISCORD_OWNER_IDS: "",
  DISCORD_GATEWAY: "",
  DISCORD_GATEWAY_SHARDS: "",
  INSTAGRAM_ACCESS_TOKEN: "",
  TELEGRAM_BOT_TOKEN: "",
  TELEGRAM_WEBHOOK_SECRET: "",
  TELEGRAM_API_BASE: "",
  TELEGRAM_OWNER_IDS: "",
  SLACK_BOT_TOKEN: "",
  SLACK_SIGNING_SECRET: "",
  SLACK_API_BASE: "",
  SLACK_OWNER_IDS: "",
  TRANSCRIPTION_MODEL: "",
  PUBLIC_BASE_URL: "",
  ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  RATE_LIMIT_PER_TOKEN: "",
  RATE_LIMIT_PER_USER: "",
  DAILY_TOKEN_LIMIT: "",
  MEMORY_RETENTION_DAYS: "",
  INSPECTOR_TEXT_SHARE: "",
  ALLOW_LOOPBACK_FETCH: "",
  MCP_ALLOW_LOOPBACK: "",
  OTEL_EXPORTER_OTLP_ENDPOINT: "",
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
  OTEL_EXPORTER_OTLP_HEADERS: "",
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "",
  // Tests make their own agents; test/fresh-db turns seeding on to watch it.
  SEED_CHARACTERS: "false",
  // wrangler.toml declares the AI binding; Miniflare creates it, but it answers only remotely.
  WORKERS_AI: "false",
  // Unset: the memory tests bind a stand-in Vectorize index and expect it used.
  VECTORIZE: "",
  SECRETS_KEY: "test-secrets-key-0123456789abcdef0123456789",
  MODEL: "test-primary",
  SMALL_MODEL: "test-small",
  // The stand-in model is not OpenAI's endpoint, where `auto` would leave the key out.
  PROMPT_CACHE_KEY: "on",
};

/** A real Ed25519 key pair per run: the worker gets the public key, tests sign with the private one. */
async function discordKeys(): Promise<{ publicKey: string; privateKey: string }> {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const publicKey = Buffer.from(await crypto.subtle.exportKey("raw", pair.publicKey)).toString(
    "hex",
  );
  const privateKey = Buffer.from(await crypto.subtle.exportKey("pkcs8", pair.privateKey)).toString(
    "base64",
  );
  return { publicKey, privateKey };
}

export default defineConfig(async () => {
  const migrations = await readD1Migrations("migrations");
  // The worker-first routes of wrangler.toml, for test/surfaces/wrangler-config.test.ts to hold against the API.
  const runWorkerFirst = JSON.stringify(
    unstable_readConfig({ config: "./wrangler.toml" }).assets?.run_worker_first ?? null,
  );
  const discord = await discordKeys();
  /** The bindings, once each is known to be declared in src/settings.ts (TEST_*, MCP_* aside). */
  const declared = (bindings: Record<string, unknown>) => {
    const undeclared = Object.keys(bindings).filter(
      (name) => !Object.hasOwn(SETTINGS, name) && !/^(TEST|MCP)_/.test(name),
    );
    if (undeclared.length > 0)
      throw new Error(`vitest.config.ts binds undeclared variables: ${undeclared.join(", ")}`);
    return bindings;
  };
  const project = (
    name: string,
    include: string[],
    bindings: Record<string, unknown>,
    globalSetup: string[] = [],
    setupFiles = ["./test/setup/apply-migrations.ts"],
    /** A workerd per file (the plugin's default) rather than one for all the project's files. */
    isolate = false,
    /** Memory databases MEMORY_DB_1..n besides DB (src/db/shards.ts). */
    memoryDatabases = 0,
  ) => ({
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        remoteBindings: false,
        miniflare: {
          bindings: {
            ...declared({ ...baseBindings, ...bindings }),
            TEST_MIGRATIONS: migrations,
            // The full tier's longer fuzz (test/surfaces/fuzz.test.ts): FUZZ_RUNS=20000 npm run test:full.
            TEST_FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
            TEST_RUN_WORKER_FIRST: runWorkerFirst,
          },
          // An empty database for test/db/migrations.test.ts, which applies the migrations in steps.
          d1Databases: {
            TEST_MIGRATION_DB: "test-migration-db",
            ...Object.fromEntries(
              Array.from({ length: memoryDatabases }, (_, i) => [
                `MEMORY_DB_${i + 1}`,
                `memory-db-${i + 1}`,
              ]),
            ),
          },
          // The tokenizer's 2.4 MB rank table must not travel through Vitest's module WebSocket:
          // workerd caps a WebSocket message at 1 MiB, and a worker's warm-module snapshot bundles
          // every module of the graph into one message. Loading it from disk avoids that. The MCP
          // SDK's v2 packages are loaded from disk too: with them in the graph, the gateway
          // project's workerd exited when its second test file started.
          modulesRules: [
            {
              type: "ESModule",
              include: [
                "**/gpt-tokenizer/esm/bpeRanks/*.js",
                "**/@modelcontextprotocol/server/dist/**/*.mjs",
                "**/@modelcontextprotocol/client/dist/**/*.mjs",
                "**/@modelcontextprotocol/core/dist/**/*.mjs",
              ],
            },
          ],
        },
      }),
    ],
    // Integration tests make hundreds of requests through workerd; on a busy 2-core machine the
    // default 5 s is too tight. Nothing here asserts speed (that is `npm run bench`).
    test: {
      name,
      include,
      // Platform-free tests run in Node (the `runtime` and `fast` projects), never here too.
      exclude: [...configDefaults.exclude, "test/runtime/**", ...NODE_TIER_FILES],
      globalSetup,
      testTimeout: 30_000,
      setupFiles,
      // One workerd for all of a project's files, one after another: booting a runtime and
      // loading the worker into it cost ~8 s a file, three quarters of the suite. Each file
      // still starts from an empty world (test/setup/apply-migrations.ts resets every binding).
      isolate,
    },
  });
  const withModelAndDiscord = {
    OPENAI_API_KEY: "sk-test-not-a-real-key",
    OPENAI_BASE_URL: "http://model.test/v1",
    MODEL_FALLBACKS: "test-fallback",
    DISCORD_PUBLIC_KEY: discord.publicKey,
    DISCORD_APPLICATION_ID: "100000000000000001",
    DISCORD_API_BASE: "http://discord.test/api/v10",
    DISCORD_BOT_TOKEN: "test-bot-token-not-real",
    // Owners who manage the bot in DMs; the stand-in's application owner is another one.
    DISCORD_OWNER_IDS: "610000000000000001",
    TEST_DISCORD_PRIVATE_KEY: discord.privateKey,
    // The MCP test peers listen on 127.0.0.1 over http: the guarded fetch may reach loopback.
    ALLOW_LOOPBACK_FETCH: "true",
    // Instagram publishing against the Graph API stand-in (test/stand-ins/graph-stand-in.ts).
    INSTAGRAM_USER_ID: "17841400000000001",
    INSTAGRAM_ACCESS_TOKEN: "test-instagram-token",
    INSTAGRAM_GRAPH_BASE: "http://graph.test/v26.0",
    PUBLIC_BASE_URL: "https://agents.test",
    // Telegram against the Bot API stand-in (test/stand-ins/telegram-stand-in.ts).
    TELEGRAM_BOT_TOKEN: "123456:TEST-token_value",
    TELEGRAM_WEBHOOK_SECRET: "test-telegram-webhook-secret",
    TELEGRAM_API_BASE: "http://telegram.test",
    TELEGRAM_OWNER_IDS: "700000001",
    // Slack against the Web API stand-in (test/stand-ins/slack-stand-in.ts).
    SLACK_BOT_TOKEN: "xoxb-test-token-not-real",
    SLACK_SIGNING_SECRET: "8f742231b10e8888abcd99yyyzzz85a5",
    SLACK_API_BASE: "http://slack.test/api",
    SLACK_OWNER_IDS: "U0OWNER001",
    // A bearer secret for MCP servers: mcp-servers.json declares where it may go (test/security/).
    MCP_GITHUB_TOKEN: "ghp_test_secret_not_real_0123456789",
  };
  return {
    test: {
      // Runtime events and logs are printed for a failing test only: a passing run stays short.
      silent: "passed-only" as const,
      // With a workerd shared by a project's files, work an earlier file left running (a room's
      // after-reply writes, a token's last-used touch) can outlive test/setup's reset of every
      // binding; workerd then refuses its next I/O as belonging to a request that is gone. That
      // error, and only it, is the shared runtime's and not a test's: it is dropped. Any other
      // unhandled error still fails the run.
      onUnhandledError(error: { message?: string }) {
        const message = error.message ?? "";
        return !(
          message.startsWith("Cannot perform I/O on behalf of a different request") &&
          message.includes("(I/O type: Lock&)")
        );
      },
      projects: [
        // Limits high enough that no test trips them by accident, but the limiter is on every request.
        project(
          "main",
          ["test/**/*.test.ts"],
          {
            ...withModelAndDiscord,
            RATE_LIMIT_PER_TOKEN: "100000/min",
            RATE_LIMIT_PER_USER: "100000/min",
          },
          [
            // Real MCP servers (and an OAuth one) from the MCP SDK, on loopback.
            "./test/setup/mcp-peers.ts",
            // Web pages and a search API stand-in for the web plugin, on loopback.
            "./test/setup/web-peers.ts",
          ],
        ),
        // Discord conversations over the Gateway, against a Gateway stand-in on loopback. A runtime
        // per file: the worker's first request starts the Gateway object, which holds its
        // connection for the runtime's life, and a file resetting storage under it breaks it.
        project(
          "gateway",
          ["test/gateway/**/*.spec.ts"],
          {
            ...withModelAndDiscord,
            DISCORD_GATEWAY: "true",
            RATE_LIMIT_PER_TOKEN: "100000/min",
            RATE_LIMIT_PER_USER: "100000/min",
          },
          ["./test/setup/gateway-peer.ts"],
          undefined,
          true,
        ),
        project("no-model", ["test/no-model/**/*.spec.ts"], {}),
        // Agents spread over three memory databases besides the catalog (docs/scaling.md).
        project(
          "shards",
          ["test/shards/**/*.spec.ts"],
          {
            ...withModelAndDiscord,
            RATE_LIMIT_PER_TOKEN: "100000/min",
            RATE_LIMIT_PER_USER: "100000/min",
          },
          undefined,
          undefined,
          false,
          3,
        ),
        // A database no migration was applied to: the worker brings it up to date itself.
        project(
          "fresh-db",
          ["test/fresh-db/**/*.spec.ts"],
          { ...withModelAndDiscord, SEED_CHARACTERS: "true" },
          [],
          [],
        ),
        // Traces to an OTLP collector stand-in (test/telemetry/traces.spec.ts).
        project("telemetry", ["test/telemetry/**/*.spec.ts"], {
          ...withModelAndDiscord,
          RATE_LIMIT_PER_TOKEN: "100000/min",
          RATE_LIMIT_PER_USER: "100000/min",
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector.test/otlp/",
          OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=secret%20key,x-tenant=acme",
          OTEL_SERVICE_NAME: "edge-agents-test",
        }),
        // The deployment defaults tightened, to watch them bite.
        project("limits", ["test/limits/**/*.spec.ts"], {
          ...withModelAndDiscord,
          RATE_LIMIT_PER_TOKEN: "30/min",
          RATE_LIMIT_PER_USER: "3/min",
          // Per agent, unless its character sets settings.dailyTokens. Far above what the other
          // tests here spend; test/limits/daily-token-limit.spec.ts spends up to it on purpose.
          DAILY_TOKEN_LIMIT: "200000",
        }),
        // The pure runtime (src/runtime/) in plain Node: no workerd, no bindings, no migrations.
        { test: { name: "runtime", include: ["test/runtime/**/*.test.ts"], environment: "node" } },
        // The other platform-free tests (test/tiers.ts), in plain Node: with `runtime`, the fast tier.
        { test: { name: "fast", include: NODE_TIER_FILES, environment: "node" } },
        // The Node tools (the memory CLI, the knowledge file reader) in Node, against the worker
        // started as the benchmarks start it; and the import graph's boundaries (boundaries.spec.ts).
        {
          test: {
            name: "node",
            include: ["test/node/**/*.spec.ts"],
            environment: "node",
            testTimeout: 60_000,
            hookTimeout: 120_000,
          },
        },
      ],
    },
  };
});
