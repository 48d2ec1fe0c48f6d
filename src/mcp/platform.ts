// Binds the MCP module to the worker's environment: the D1 stores, the URL policy (loopback only
// with MCP_ALLOW_LOOPBACK, DNS over HTTPS otherwise), secrets by name and the OAuth callback URL.
// Used by the tools and OAuth routes and by each room.
import { drizzle } from "drizzle-orm/d1";
import { loadConfig, type Env } from "../config.ts";
import { createSecretBox } from "../memory/secret-box.ts";
import { createMcpCredentialStore, type McpCredentialStore } from "./credentials.ts";
import { createAgentServerStore, type AgentServerStore } from "./registry.ts";
import { dohResolver, type UrlPolicy } from "./url-safety.ts";

export const OAUTH_CALLBACK_PATH = "/oauth/callback";

export interface McpPlatform {
  servers: AgentServerStore;
  credentials: McpCredentialStore | null;
  urlPolicy: UrlPolicy;
  /** null when PUBLIC_BASE_URL is unset and no request origin was given. */
  redirectUrl: string | null;
  secret(name: string): string | undefined;
  fetch: typeof fetch;
}

export function mcpPlatform(env: Env, requestOrigin?: string): McpPlatform {
  const config = loadConfig(env);
  const db = drizzle(env.DB);
  // Late-bound, so tests that replace globalThis.fetch are honoured.
  const fetchFn: typeof fetch = (input, init) => fetch(input, init);
  const base = config.publicBaseUrl ?? requestOrigin;
  return {
    servers: createAgentServerStore(db),
    credentials: config.secretsKey ? createMcpCredentialStore(db, createSecretBox(config.secretsKey)) : null,
    urlPolicy: { allowLoopback: config.mcpAllowLoopback, resolve: dohResolver(fetchFn) },
    redirectUrl: base ? new URL(OAUTH_CALLBACK_PATH, base).toString() : null,
    secret: (name) => {
      const value = (env as unknown as Record<string, unknown>)[name];
      return typeof value === "string" && value.length > 0 ? value : undefined;
    },
    fetch: fetchFn,
  };
}
