// Starting and finishing a person's consent for an OAuth MCP server. Starting asks the server
// first (an unauthenticated `initialize`): its 401 names the protected-resource metadata and the
// scope it wants (MCP 2025-11-25, authorization: scope selection strategy; RFC 9728 section 5.1),
// which discovery and the authorization request then use. Finishing is what /oauth/callback
// does: the pending authorization found by its state's hash, `iss` checked (RFC 9207), the code
// exchanged with the PKCE verifier. Both go through the guarded fetch of the platform.
import {
  auth,
  extractWWWAuthenticateParams,
  IssuerMismatchError,
  LATEST_PROTOCOL_VERSION,
} from "@modelcontextprotocol/client";
import type { McpAuthData } from "../db/stores/mcp-credential-store.ts";
import { assertSafeServerUrl } from "../net/url-safety.ts";
import { AppError, NotConfiguredError, ValidationError } from "../runtime/util/errors.ts";
import { sha256Hex } from "../runtime/util/hashing.ts";
import { type AgentOAuthProvider, loadProvider } from "./oauth-provider.ts";
import type { McpPlatform } from "./platform.ts";
import { findServer, type McpServerEntry } from "../mcp-registry.ts";
import { describeRemoteError, traceResponses } from "./remote-errors.ts";

/** What a server's 401 (or 403) says about its authorization: both optional. */
export interface AuthChallenge {
  resourceMetadataUrl?: URL;
  scope?: string;
}

/** The query /oauth/callback receives (already checked for shape). */
export interface CallbackParams {
  state: string;
  code?: string;
  error?: string;
  error_description?: string;
  iss?: string;
}

/** Discovery, registration and a PKCE authorization request; returns the consent URL (null if already authorized). */
export async function beginAuthorization(
  platform: McpPlatform,
  entry: McpServerEntry,
  provider: AgentOAuthProvider,
): Promise<string | null> {
  if (!provider.canRedirect)
    throw new NotConfiguredError("no OAuth callback URL is known: set PUBLIC_BASE_URL");
  const url = await assertSafeServerUrl(entry.config.url, platform.urlPolicy);
  const challenge = await readChallenge(url, entry.config.headers ?? {}, platform.fetch);
  const trace = traceResponses(platform.oauthFetch);
  let result: Awaited<ReturnType<typeof auth>>;
  try {
    const options = { serverUrl: url, ...challenge, fetchFn: trace.fetch };
    result = await auth(provider, options).catch((error: unknown) => {
      if (!isSameOriginLegacyIssuer(error, url)) throw error;
      return auth(provider, { ...options, skipIssuerMetadataValidation: true });
    });
  } catch (error) {
    throw new AppError("upstream", 502, describeRemoteError(error, trace));
  }
  return result === "REDIRECT"
    ? (provider.authorizationUrl?.toString() ?? provider.pendingAuthUrl)
    : null;
}

/**
 * The v2 SDK checks that authorization server metadata names the URL it was fetched for as its
 * issuer (RFC 8414 section 3.3). A 2025-03-26 server (no protected-resource metadata) has its
 * authorization server at its own origin, and some name an issuer with a path there (`/oauth`):
 * the 1.x SDK accepted that, and it is still the same origin, so the same party. Only that case
 * is let through; metadata naming any other origin is refused.
 */
function isSameOriginLegacyIssuer(error: unknown, serverUrl: URL): boolean {
  if (!(error instanceof IssuerMismatchError) || error.kind !== "metadata") return false;
  if (error.expected !== new URL("/", serverUrl).href || !error.received) return false;
  return URL.canParse(error.received) && new URL(error.received).origin === serverUrl.origin;
}

/**
 * Sends what a client sends first, without a token, and reads the challenge of a 401 or 403.
 * A server that answers anything else (it lets `initialize` through, or is down) gives no hints:
 * discovery then uses the well-known locations and the scope falls back to scopes_supported.
 */
export async function readChallenge(
  url: URL,
  headers: Record<string, string>,
  fetchFn: typeof fetch,
): Promise<AuthChallenge> {
  let response: Response;
  try {
    response = await fetchFn(url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: "edge-agents", version: "0.1.0" },
        },
      }),
    });
  } catch {
    return {};
  }
  // Only the headers matter; an answered initialize may hold a stream open.
  void response.body?.cancel().catch(() => undefined);
  if (response.status !== 401 && response.status !== 403) return {};
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
  return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
}

/**
 * The authorization server sent the person back: finds the pending authorization by its state,
 * checks `iss`, refuses an error answer, and exchanges the code. Returns the agent and server it
 * was for; the tokens are stored for every room of the agent.
 */
export async function completeAuthorization(
  platform: McpPlatform,
  params: CallbackParams,
  now: () => number,
): Promise<{ agentId: string; entry: McpServerEntry }> {
  if (!platform.credentials)
    throw new NotConfiguredError("SECRETS_KEY is not set, so no authorization can be stored");
  const row = await platform.credentials.findByStateHash(await sha256Hex(params.state));
  if (!row || row.stateExpiresAt === null || row.stateExpiresAt <= now()) {
    throw new ValidationError(
      "this authorization link is unknown or has expired (links last 15 minutes); start again from the agent's tools",
    );
  }
  // Before anything else, for an error answer too: a response from another server is not ours to act on.
  assertIssuer(row.data, params.iss);
  if (params.error)
    throw new ValidationError(
      `the authorization was not given: ${params.error}${params.error_description ? ` (${params.error_description})` : ""}`,
    );
  if (!params.code) throw new ValidationError("the callback has neither a code nor an error");
  const entry = findServer(row.server, await platform.servers.list(row.agentId));
  if (entry.config.auth.type !== "oauth")
    throw new ValidationError(`the MCP server "${row.server}" no longer uses OAuth`);
  const provider = await loadProvider(
    { ...platform, credentials: platform.credentials },
    row.agentId,
    entry,
    now,
  );
  const url = await assertSafeServerUrl(entry.config.url, platform.urlPolicy);
  const trace = traceResponses(platform.oauthFetch);
  try {
    await auth(provider, {
      serverUrl: url,
      authorizationCode: params.code,
      // Checked above already; the v2 SDK checks it again (RFC 9207) and refuses a code without it.
      ...(params.iss !== undefined ? { iss: params.iss } : {}),
      fetchFn: trace.fetch,
    });
  } catch (exchangeError) {
    throw new AppError(
      "upstream",
      400,
      `the code could not be exchanged for tokens: ${describeRemoteError(exchangeError, trace)}`,
    );
  }
  return { agentId: row.agentId, entry };
}

/**
 * RFC 9207: `iss`, when sent, must be the issuer of the authorization server the flow was started
 * with (its metadata's `issuer`, compared as a plain string); a server whose metadata says
 * `authorization_response_iss_parameter_supported` must send it. Otherwise no code is exchanged.
 */
function assertIssuer(data: McpAuthData, iss: string | undefined): void {
  const metadata = data.discovery?.authorizationServerMetadata;
  const expected = metadata?.issuer ?? data.discovery?.authorizationServerUrl;
  if (iss === undefined) {
    const promised =
      (metadata as { authorization_response_iss_parameter_supported?: unknown } | undefined)
        ?.authorization_response_iss_parameter_supported === true;
    if (promised)
      throw new ValidationError(
        "the callback came without iss, which this authorization server promises to send (RFC 9207); no code was exchanged",
      );
    return;
  }
  if (!expected || iss !== expected) {
    throw new ValidationError(
      "the callback's iss does not match the authorization server this authorization was started with (RFC 9207); no code was exchanged",
    );
  }
}
