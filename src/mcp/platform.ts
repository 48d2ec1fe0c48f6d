// Binds the MCP module to the worker's environment: the D1 stores (from src/db/stores/index.ts),
// secrets by name, the OAuth callback URL, and the guarded fetch (src/net/) for everything MCP
// sends: the transports, and every OAuth discovery, registration, token and refresh request, with
// caps for each.
// Used by the tools and OAuth routes and by each room.
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { createGuardedFetch } from "../net/guarded-fetch.ts";
import { network, OUTBOUND_CAPS, outboundPolicy } from "../net/outbound.ts";
import type { UrlPolicy } from "../net/url-safety.ts";
import type { AgentServerStore } from "../db/stores/agent-server-store.ts";
import type { McpCredentialStore } from "../db/stores/mcp-credential-store.ts";
import { stores } from "../db/stores/index.ts";
import { clientMetadataUrl, OAUTH_CALLBACK_PATH } from "./client-metadata.ts";
import { secretOrigins } from "../mcp-registry.ts";

export interface McpPlatform {
  servers: AgentServerStore;
  credentials: McpCredentialStore | null;
  /** What an MCP server's own URL must pass when added and on every connect. */
  urlPolicy: UrlPolicy;
  /** null when PUBLIC_BASE_URL is unset and no request origin was given. */
  redirectUrl: string | null;
  /** The worker's Client ID Metadata Document URL (its client_id); null unless https. */
  clientMetadataUrl: string | null;
  secret(name: string): string | undefined;
  /** The origins mcp-servers.json lets a secret go to. */
  secretOrigins(name: string): ReadonlySet<string>;
  /** The transports' fetch (guarded, OUTBOUND_CAPS.mcp). */
  fetch: typeof fetch;
  /** OAuth discovery, registration, code exchange and refresh (guarded, OUTBOUND_CAPS.oauth). */
  oauthFetch: typeof fetch;
}

export function mcpPlatform(env: Env, requestOrigin?: string): McpPlatform {
  const config = loadConfig(env);
  const base = config.publicBaseUrl ?? requestOrigin;
  // One policy (and one DNS cache) for the server URL check and both fetches.
  const policy = outboundPolicy(env);
  return {
    servers: stores(env).mcpServers,
    credentials: stores(env).mcpCredentials,
    urlPolicy: policy,
    redirectUrl: base ? new URL(OAUTH_CALLBACK_PATH, base).toString() : null,
    // PUBLIC_BASE_URL only, never a request's origin: the document's URL is the client's identity.
    clientMetadataUrl: clientMetadataUrl(config.publicBaseUrl),
    secret: (name) => {
      const value = (env as unknown as Record<string, unknown>)[name];
      return typeof value === "string" && value.length > 0 ? value : undefined;
    },
    secretOrigins: (name) => secretOrigins(name),
    fetch: createGuardedFetch({ fetch: network, policy, caps: OUTBOUND_CAPS.mcp }),
    oauthFetch: createGuardedFetch({ fetch: network, policy, caps: OUTBOUND_CAPS.oauth }),
  };
}
