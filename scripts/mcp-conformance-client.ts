// `node scripts/mcp-conformance-client.ts <server url>`: the product's own MCP client, as the
// conformance suite's client scenarios run it (`MCP_CONFORMANCE_SCENARIO`, and for some
// `MCP_CONFORMANCE_CONTEXT`). It does what the worker does for one agent and one server: the
// consent link of src/mcp/overview.ts, /oauth/callback's completion (src/mcp/consent.ts), and a
// room's connections (src/mcp/connections.ts) listing and calling tools, over the guarded fetch
// with loopback allowed (the suite's servers are on localhost) and in-memory stores. The person
// who consents is played by following the authorization URL: the suite's server approves at once.
import { registerHooks } from "node:module";
import type { McpPlatform } from "../src/mcp/platform.ts";
import type { McpServerConfig, McpServerEntry } from "../src/mcp-registry.ts";
import type { UrlPolicy } from "../src/net/url-safety.ts";
import type { ToolContext } from "../src/runtime/ports/tools.ts";
import { createFixedServerStore, createMemoryCredentialStore } from "./mcp-conformance-stores.ts";

// The worker's bundler imports mcp-servers.json (src/mcp-registry.ts) without an import
// attribute; Node asks for one, so JSON modules get it here, before the product is loaded.
registerHooks({
  load: (url, context, nextLoad) =>
    // `require` of a JSON file (dependencies read their package.json) has no attributes at all.
    url.endsWith(".json") && context.importAttributes && context.importAttributes.type === undefined
      ? nextLoad(url, { ...context, importAttributes: { type: "json" } })
      : nextLoad(url, context),
});
const { McpConnections } = await import("../src/mcp/connections.ts");
const { completeAuthorization } = await import("../src/mcp/consent.ts");
const { describeServers } = await import("../src/mcp/overview.ts");
const { createGuardedFetch } = await import("../src/net/guarded-fetch.ts");
const { OUTBOUND_CAPS } = await import("../src/net/outbound.ts");
const { parseRegistry, secretOrigins } = await import("../src/mcp-registry.ts");

const AGENT_ID = "conformance";
const SERVER_NAME = "peer";
/** Never loaded: the consent step reads the redirect to it (the worker's is PUBLIC_BASE_URL's). */
const CALLBACK_URL = "http://localhost:8787/oauth/callback";
/**
 * The client_id the suite's authorization servers accept as a Client ID Metadata Document URL
 * (they never fetch it); the worker's own is PUBLIC_BASE_URL/oauth/client-metadata.json.
 */
const CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json";
/** A person asked again and again gives up: at most this many consents per run. */
const MAX_CONSENTS = 3;
/** Within the suite's own timeout: a client that hangs must not outlive its scenario. */
const RUN_DEADLINE_MS = 25_000;

/** The tool each scenario expects a call to (none: listing is the test). */
const TOOL_CALLS: Record<string, { name: string; args: Record<string, unknown> }> = {
  tools_call: { name: "add_numbers", args: { a: 2, b: 3 } },
  "sse-retry": { name: "test_reconnection", args: {} },
};
const AUTH_TOOL_CALL = { name: "test-tool", args: {} };
/** The worker secret holding a pre-registered client's secret (auth/pre-registration). */
const CLIENT_SECRET_NAME = "MCP_CONFORMANCE_CLIENT_SECRET";

/** What the suite passes in MCP_CONFORMANCE_CONTEXT (only credentials are used here). */
interface ScenarioContext {
  client_id?: string;
  client_secret?: string;
}

/** The secrets and mcp-servers.json of this run: a pre-registered client's, when given one. */
interface Operator {
  secrets: Map<string, string>;
  registry: ReturnType<typeof parseRegistry>;
}

async function main(): Promise<void> {
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
  const serverUrl = process.argv[2];
  if (!serverUrl) throw new Error("usage: node scripts/mcp-conformance-client.ts <server url>");
  const isAuth = scenario.startsWith("auth/");
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as ScenarioContext;
  const preRegistered = isAuth && context.client_id !== undefined;
  const config: McpServerConfig = {
    url: serverUrl,
    transport: "streamable-http",
    auth: !isAuth
      ? { type: "none" }
      : preRegistered
        ? {
            type: "oauth",
            client: {
              id: context.client_id!,
              ...(context.client_secret ? { secret: CLIENT_SECRET_NAME } : {}),
            },
          }
        : { type: "oauth" },
  };
  const entry: McpServerEntry = { name: SERVER_NAME, config, origin: "agent" };
  const operator: Operator = { secrets: new Map(), registry: parseRegistry({ servers: {} }) };
  if (preRegistered && context.client_secret) {
    operator.secrets.set(CLIENT_SECRET_NAME, context.client_secret);
    operator.registry = parseRegistry({
      servers: {},
      secretOrigins: { [CLIENT_SECRET_NAME]: [await tokenEndpointOrigin(serverUrl)] },
    });
  }
  const platform = conformancePlatform([entry], operator);
  const room = new McpConnections({ agentId: AGENT_ID, ...platform, now: Date.now });
  const consents = { given: 0 };
  try {
    await connect(room, platform, entry, consents);
    const tools = await room.list();
    console.log(`listed ${tools.length} tool(s): ${tools.map((tool) => tool.name).join(", ")}`);
    const call = TOOL_CALLS[scenario] ?? (isAuth ? AUTH_TOOL_CALL : null);
    if (call) await callTool(room, platform, entry, consents, call);
  } finally {
    await room.close();
  }
}

/** The worker's platform for MCP, with loopback allowed, no DNS and in-memory stores. */
function conformancePlatform(entries: readonly McpServerEntry[], operator: Operator): McpPlatform {
  const policy: UrlPolicy = {
    allowLoopback: true,
    resolve: async () => {
      throw new Error("the conformance client resolves no names: the suite serves on localhost");
    },
  };
  return {
    servers: createFixedServerStore(entries),
    credentials: createMemoryCredentialStore(),
    urlPolicy: policy,
    redirectUrl: CALLBACK_URL,
    clientMetadataUrl: CLIENT_METADATA_URL,
    secret: (name) => operator.secrets.get(name),
    secretOrigins: (name) => secretOrigins(name, operator.registry),
    fetch: createGuardedFetch({ fetch, policy, caps: OUTBOUND_CAPS.mcp }),
    oauthFetch: createGuardedFetch({ fetch, policy, caps: OUTBOUND_CAPS.oauth }),
  };
}

/**
 * Where the pre-registered secret may go, as an operator declares it in mcp-servers.json
 * (secretOrigins) having registered there: the suite's authorization server gets a new port each
 * run, so it is looked up from the server's metadata (RFC 9728, then RFC 8414).
 */
async function tokenEndpointOrigin(serverUrl: string): Promise<string> {
  const server = new URL(serverUrl);
  const resource = (await (
    await fetch(new URL(`/.well-known/oauth-protected-resource${server.pathname}`, server))
  ).json()) as { authorization_servers: string[] };
  const issuer = new URL(resource.authorization_servers[0]!);
  const metadata = (await (
    await fetch(new URL(`/.well-known/oauth-authorization-server${issuer.pathname}`, issuer))
  ).json()) as { token_endpoint: string };
  return new URL(metadata.token_endpoint).origin;
}

type Room = InstanceType<typeof McpConnections>;

/** Connects as a room does; when the server waits for consent, gets the link and consents. */
async function connect(
  room: Room,
  platform: McpPlatform,
  entry: McpServerEntry,
  consents: { given: number },
): Promise<void> {
  for (;;) {
    await room.prepare([entry]);
    const status = room.statuses()[0]!;
    if (status.state === "ready") return;
    if (status.state !== "authenticating")
      throw new Error(`the server is ${status.state}: ${status.error ?? "no reason given"}`);
    if (consents.given >= MAX_CONSENTS)
      throw new Error(`still not authorized after ${consents.given} consents; giving up`);
    const [view] = await describeServers(platform, AGENT_ID, [entry], {
      probe: false,
      startAuthorization: true,
      now: Date.now,
    });
    if (!view?.authUrl) throw new Error(`no consent link: ${view?.error ?? "none was given"}`);
    consents.given++;
    console.log(`consent ${consents.given}: following the authorization URL`);
    const params = await consent(view.authUrl);
    await completeAuthorization(platform, params, Date.now);
  }
}

/** The person's browser: the suite's authorization server approves and redirects at once. */
async function consent(authUrl: string) {
  const response = await fetch(authUrl, { redirect: "manual" });
  const location = response.headers.get("location");
  if (!location)
    throw new Error(`the authorization server did not redirect (HTTP ${response.status})`);
  const back = new URL(location);
  if (`${back.origin}${back.pathname}` !== CALLBACK_URL)
    throw new Error(`the authorization server redirected elsewhere (${back.origin})`);
  const query = Object.fromEntries(back.searchParams);
  if (!query.state) throw new Error("the redirect carries no state");
  return { ...query, state: query.state };
}

/** Calls a tool as a turn does; a refusal for more scope (step-up) is consented, then retried. */
async function callTool(
  room: Room,
  platform: McpPlatform,
  entry: McpServerEntry,
  consents: { given: number },
  call: { name: string; args: Record<string, unknown> },
): Promise<void> {
  for (;;) {
    const tool = (await room.list()).find((tool) => tool.name.endsWith(`__${call.name}`));
    if (!tool) throw new Error(`the server lists no tool ${call.name}`);
    const output = await room.call(tool.name, call.args, toolContext());
    if (output.ok) {
      console.log(`called ${call.name}: ${output.content.slice(0, 200)}`);
      return;
    }
    if (room.statuses()[0]?.state !== "authenticating")
      throw new Error(`${call.name} failed: ${output.error}`);
    await connect(room, platform, entry, consents);
  }
}

function toolContext(): ToolContext {
  const id = crypto.randomUUID();
  return {
    agentId: AGENT_ID,
    roomId: "conformance",
    userId: "conformance",
    turnId: id,
    callId: id,
    signal: AbortSignal.timeout(60_000),
  };
}

setTimeout(() => {
  console.error(`failed: no result within ${RUN_DEADLINE_MS} ms`);
  process.exit(1);
}, RUN_DEADLINE_MS).unref();
try {
  await main();
  process.exit(0);
} catch (error) {
  console.error(`failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
