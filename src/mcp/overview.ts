// What an agent's MCP servers look like from outside a room: for GET /agents/:agentId/tools,
// POST (after adding one), /oauth/callback and Discord's /tools. Probing opens a short-lived
// connection from the worker (rooms keep their own); an OAuth server without tokens gets a
// consent link, reusing one still pending or starting a new authorization. A failure says what
// failed (and the HTTP status), never what a remote server answered.
import { McpConnections, type ServerState } from "./connections.ts";
import { beginAuthorization } from "./consent.ts";
import { loadProvider } from "./oauth-provider.ts";
import type { McpPlatform } from "./platform.ts";
import type { McpServerEntry } from "../mcp-registry.ts";
import { describeRemoteError } from "./remote-errors.ts";

export interface ServerOverview {
  name: string;
  origin: "registry" | "agent";
  url: string;
  transport: "streamable-http" | "sse";
  auth: "none" | "bearer" | "oauth";
  /** `unknown` when not probed. */
  state: ServerState | "unknown";
  tools: Array<{ name: string; description: string }>;
  error?: string;
  authUrl?: string;
}

export interface OverviewOptions {
  /** Connect and list tools (a few hundred ms per server at most, bounded by the timeout). */
  probe: boolean;
  /** Start an authorization for OAuth servers that have neither tokens nor a pending link. */
  startAuthorization: boolean;
  connectTimeoutMs?: number;
  now: () => number;
}

export async function describeServers(
  platform: McpPlatform,
  agentId: string,
  entries: readonly McpServerEntry[],
  options: OverviewOptions,
): Promise<ServerOverview[]> {
  const overviews = await Promise.all(
    entries.map((entry) => baseOverview(platform, agentId, entry, options)),
  );
  if (!options.probe) return overviews;
  const probe = new McpConnections({
    agentId,
    ...platform,
    now: options.now,
    connectTimeoutMs: options.connectTimeoutMs,
  });
  try {
    // Waiting for consent or failed already (no SECRETS_KEY, a refused discovery): nothing to connect.
    const probed = entries.filter((_, index) => overviews[index]!.state === "unknown");
    await probe.prepare(probed);
    const statuses = new Map(probe.statuses().map((status) => [status.name, status]));
    return overviews.map((overview) => {
      const status = statuses.get(overview.name);
      if (!status) return overview;
      return {
        ...overview,
        state: status.state,
        tools: probe.toolsOf(overview.name),
        ...(status.error ? { error: status.error } : {}),
        ...(status.authUrl ? { authUrl: status.authUrl } : {}),
      };
    });
  } finally {
    await probe.close();
  }
}

async function baseOverview(
  platform: McpPlatform,
  agentId: string,
  entry: McpServerEntry,
  options: OverviewOptions,
): Promise<ServerOverview> {
  const overview: ServerOverview = {
    name: entry.name,
    origin: entry.origin,
    url: entry.config.url,
    transport: entry.config.transport,
    auth: entry.config.auth.type,
    state: "unknown",
    tools: [],
  };
  if (entry.config.auth.type !== "oauth") return overview;
  if (!platform.credentials)
    return {
      ...overview,
      state: "failed",
      error: "OAuth servers need SECRETS_KEY, which encrypts their tokens",
    };
  const provider = await loadProvider(
    { ...platform, credentials: platform.credentials },
    agentId,
    entry,
    options.now,
  );
  const pending = provider.pendingAuthUrl;
  // A pending link beside tokens is a step-up: the server asked a room for more scope (403
  // insufficient_scope) and only a person's consent gives it.
  if (pending && !provider.authorizationExpired)
    return { ...overview, state: "authenticating", authUrl: pending };
  if (provider.hasTokens()) return overview;
  if (!options.startAuthorization)
    return { ...overview, state: "authenticating", error: "not authorized yet" };
  try {
    const authUrl = await beginAuthorization(platform, entry, provider);
    return authUrl ? { ...overview, state: "authenticating", authUrl } : overview;
  } catch (error) {
    return {
      ...overview,
      state: "failed",
      error: `could not start the authorization: ${describeRemoteError(error)}`,
    };
  }
}
