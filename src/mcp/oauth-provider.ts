// The MCP SDK's OAuthClientProvider for one agent and one server, over the sealed D1 row
// (src/db/stores/mcp-credential-store.ts). The SDK does discovery (RFC 9728, RFC 8414 with the OpenID fallback), dynamic
// registration (RFC 7591), PKCE S256, resource indicators (RFC 8707) and refresh; this class keeps
// what it produces. Every change is written at once, so a room evicted mid-flow loses nothing.
// Every room of an agent shares the tokens, so refreshes go one at a time (refreshingFetch): a
// server that rotates refresh tokens (OAuth 2.1, section 4.3.1) refuses a second use of one.
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  OAuthTokens,
} from "@modelcontextprotocol/client";
import { ConflictError, NotConfiguredError, ValidationError } from "../runtime/util/errors.ts";
import type { McpServerEntry } from "../mcp-registry.ts";
import { sha256Hex, toBase64Url } from "../runtime/util/hashing.ts";
import type { McpCredentialRow, McpCredentialStore } from "../db/stores/mcp-credential-store.ts";

/** How long a consent link stays usable. */
export const AUTHORIZATION_WINDOW_MS = 15 * 60_000;
/** Tokens closer than this to expiry are refreshed (ahead of a connection, or in place of a stale one). */
export const TOKEN_REFRESH_MARGIN_MS = 60_000;
/** How long a room may hold the refresh lease: past it another room may refresh (the holder died). */
export const REFRESH_LEASE_MS = 15_000;
const LEASE_POLL_MS = 100;
/** Waiting rooms give up after this many polls (a lease always ends within REFRESH_LEASE_MS). */
const MAX_LEASE_POLLS = Math.ceil((2 * REFRESH_LEASE_MS) / LEASE_POLL_MS);

/** Credentials registered beforehand (the server entry's `auth.client`), secret resolved. */
export interface PreRegisteredClient {
  clientId: string;
  secret?: {
    name: string;
    /** Undefined when the worker secret is not set. */
    value: string | undefined;
    /** The origins mcp-servers.json lets it go to: the token endpoint must be one of them. */
    origins: ReadonlySet<string>;
  };
}

/** What every place that opens an agent's OAuth credentials for a server knows. */
export interface ProviderSource {
  credentials: McpCredentialStore;
  redirectUrl: string | null;
  clientMetadataUrl: string | null;
  secret(name: string): string | undefined;
  secretOrigins(name: string): ReadonlySet<string>;
}

/** The provider for one agent and one OAuth server (the rooms, the overview, the callback). */
export function loadProvider(
  source: ProviderSource,
  agentId: string,
  entry: McpServerEntry,
  now: () => number,
): Promise<AgentOAuthProvider> {
  const auth = entry.config.auth.type === "oauth" ? entry.config.auth : null;
  const client = auth?.client;
  const secretName = client?.secret;
  return AgentOAuthProvider.load(source.credentials, agentId, entry.name, {
    redirectUrl: source.redirectUrl,
    clientMetadataUrl: source.clientMetadataUrl,
    scopes: auth?.scopes ?? [],
    clientName: `edge-agents (${agentId})`,
    now,
    ...(client
      ? {
          preRegistered: {
            clientId: client.id,
            ...(secretName
              ? {
                  secret: {
                    name: secretName,
                    value: source.secret(secretName),
                    origins: source.secretOrigins(secretName),
                  },
                }
              : {}),
          },
        }
      : {}),
  });
}

export interface ProviderOptions {
  /** PUBLIC_BASE_URL/oauth/callback (or the request's origin); a flow in progress keeps its own. */
  redirectUrl: string | null;
  /**
   * The worker's Client ID Metadata Document URL (client-metadata.ts): the SDK uses it as the
   * client_id where the authorization server advertises `client_id_metadata_document_supported`,
   * and registers (RFC 7591) elsewhere. Null without an https PUBLIC_BASE_URL.
   */
  clientMetadataUrl: string | null;
  scopes: readonly string[];
  clientName: string;
  /** Used instead of a registration or a metadata document when the server entry has one. */
  preRegistered?: PreRegisteredClient;
  now: () => number;
}

export class AgentOAuthProvider implements OAuthClientProvider {
  /** The consent URL the last flow produced (also kept in the row). */
  authorizationUrl: URL | null = null;

  private readonly store: McpCredentialStore;
  private row: McpCredentialRow;
  private readonly options: ProviderOptions;
  private readonly leaseOwner = crypto.randomUUID();
  private leaseHeld = false;
  /** The stale refresh token this room presented, and the newer stored one sent in its place. */
  private replaced: { presented: string; sent: string } | null = null;

  private constructor(store: McpCredentialStore, row: McpCredentialRow, options: ProviderOptions) {
    this.store = store;
    this.row = row;
    this.options = options;
  }

  static async load(
    store: McpCredentialStore,
    agentId: string,
    server: string,
    options: ProviderOptions,
  ): Promise<AgentOAuthProvider> {
    const row = (await store.load(agentId, server)) ?? {
      agentId,
      server,
      data: {},
      stateHash: null,
      stateExpiresAt: null,
      tokenExpiresAt: null,
    };
    return new AgentOAuthProvider(store, row, options);
  }

  get redirectUrl(): string {
    // A flow started with one redirect URL must finish with it (the exchange repeats it).
    const url = this.row.data.redirectUrl ?? this.options.redirectUrl;
    if (!url) throw new NotConfiguredError("no OAuth callback URL is known: set PUBLIC_BASE_URL");
    return url;
  }

  /** Whether a new consent flow could be started (a callback URL is known). */
  get canRedirect(): boolean {
    return !!(this.row.data.redirectUrl ?? this.options.redirectUrl);
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      ...(this.options.scopes.length > 0 ? { scope: this.options.scopes.join(" ") } : {}),
    };
  }

  get clientMetadataUrl(): string | undefined {
    return this.options.clientMetadataUrl ?? undefined;
  }

  get tokenExpiresAt(): number | null {
    return this.row.tokenExpiresAt;
  }

  get pendingAuthUrl(): string | null {
    return this.row.data.authUrl ?? null;
  }

  /** The pending consent link's state has expired (or there is none). */
  get authorizationExpired(): boolean {
    return this.row.stateExpiresAt === null || this.row.stateExpiresAt <= this.options.now();
  }

  /**
   * A consent link is pending beside tokens: a server refused them for want of scope (403
   * insufficient_scope, a step-up) and a person must grant more before they are used again.
   */
  get stepUpPending(): boolean {
    return this.hasTokens() && !!this.row.data.authUrl && !this.authorizationExpired;
  }

  hasTokens(): boolean {
    return !!this.row.data.tokens?.access_token;
  }

  async state(): Promise<string> {
    const state = toBase64Url(crypto.getRandomValues(new Uint8Array(32)));
    this.row.stateHash = await sha256Hex(state);
    this.row.stateExpiresAt = this.options.now() + AUTHORIZATION_WINDOW_MS;
    this.row.data.redirectUrl = this.redirectUrl;
    await this.persist();
    return state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const pre = this.options.preRegistered;
    return pre ? this.preRegisteredInformation(pre) : this.row.data.clientInformation;
  }

  /**
   * Pre-registered credentials for the authorization server discovery just found (auth() saves
   * the discovery before it asks). They are never stored; the secret goes out only when that
   * server's token endpoint is at an origin mcp-servers.json declares for it.
   */
  private preRegisteredInformation(pre: PreRegisteredClient): OAuthClientInformationMixed {
    const discovery = this.row.data.discovery;
    const issuer = discovery?.authorizationServerUrl;
    const stamp = issuer ? { issuer } : {};
    if (!pre.secret) return { client_id: pre.clientId, ...stamp };
    const { name, value, origins } = pre.secret;
    if (!value)
      throw new NotConfiguredError(`the secret ${name} is not set (wrangler secret put ${name})`);
    const endpoint =
      discovery?.authorizationServerMetadata?.token_endpoint ??
      (issuer ? new URL("/token", issuer).href : undefined);
    const origin = endpoint ? new URL(endpoint).origin : null;
    if (!origin || !origins.has(origin)) {
      const declared = origins.size > 0 ? [...origins].sort().join(", ") : "none is declared";
      throw new ValidationError(
        `${name} may only be sent to the origins declared for it in mcp-servers.json (secretOrigins): ${declared}; not to ${origin ?? "an unknown token endpoint"}`,
      );
    }
    return { client_id: pre.clientId, client_secret: value, ...stamp };
  }

  async saveClientInformation(information: OAuthClientInformationMixed): Promise<void> {
    // Pre-registered credentials come from the server entry each time; a secret is never stored.
    if (this.options.preRegistered) return;
    this.row.data.clientInformation = information;
    await this.persist();
  }

  tokens(): OAuthTokens | undefined {
    return this.row.data.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    // The SDK keeps the refresh token it presented when the server sends none back: that is the
    // stale one if refreshingFetch sent the stored one instead.
    if (this.replaced && tokens.refresh_token === this.replaced.presented)
      tokens = { ...tokens, refresh_token: this.replaced.sent };
    this.replaced = null;
    this.row.data.tokens = tokens;
    this.row.tokenExpiresAt =
      typeof tokens.expires_in === "number" ? this.options.now() + tokens.expires_in * 1000 : null;
    // Authorized: the consent link and its state are spent.
    delete this.row.data.authUrl;
    delete this.row.data.codeVerifier;
    this.row.stateHash = null;
    this.row.stateExpiresAt = null;
    await this.persist();
    await this.releaseLease();
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrl = url;
    this.row.data.authUrl = url.toString();
    await this.persist();
  }

  async saveCodeVerifier(verifier: string): Promise<void> {
    this.row.data.codeVerifier = verifier;
    await this.persist();
  }

  codeVerifier(): string {
    const verifier = this.row.data.codeVerifier;
    if (!verifier)
      throw new ValidationError(
        "no authorization is in progress for this server (the code verifier is missing)",
      );
    return verifier;
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    this.row.data.discovery = state;
    await this.persist();
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.row.data.discovery;
  }

  async invalidateCredentials(
    scope: "all" | "client" | "tokens" | "verifier" | "discovery",
  ): Promise<void> {
    if (scope === "all" || scope === "client") delete this.row.data.clientInformation;
    if (scope === "all" || scope === "tokens") {
      delete this.row.data.tokens;
      this.row.tokenExpiresAt = null;
    }
    if (scope === "all" || scope === "verifier") delete this.row.data.codeVerifier;
    if (scope === "all" || scope === "discovery") delete this.row.data.discovery;
    await this.persist();
    await this.releaseLease();
  }

  /**
   * `fetch` for auth() and the transports. A refresh-token grant first takes the agent's refresh
   * lease for this server (waiting while another room holds it), then reads the stored tokens
   * again: if another room refreshed meanwhile and its tokens are not about to expire, they are
   * the answer and nothing is sent; if they are, the newest refresh token is sent instead of the
   * one this room read. The lease ends once the new tokens are saved, or when the grant fails.
   */
  refreshingFetch(base: typeof fetch): typeof fetch {
    return async (input, init) => {
      const presented =
        init?.body instanceof URLSearchParams && init.body.get("grant_type") === "refresh_token"
          ? init.body.get("refresh_token")
          : null;
      return presented === null
        ? base(input, init)
        : this.refreshOneAtATime(base, input, init!, presented);
    };
  }

  private async refreshOneAtATime(
    base: typeof fetch,
    input: Parameters<typeof fetch>[0],
    init: RequestInit,
    presented: string,
  ): Promise<Response> {
    await this.takeLease();
    try {
      const current = await this.store.load(this.row.agentId, this.row.server);
      if (!current) throw new ConflictError("this server's OAuth credentials were removed");
      this.row = current;
      const stored = current.data.tokens;
      if (stored?.refresh_token && stored.refresh_token !== presented) {
        const left =
          current.tokenExpiresAt === null ? null : current.tokenExpiresAt - this.options.now();
        if (left === null || left >= TOKEN_REFRESH_MARGIN_MS) return tokenResponse(stored, left);
        this.replaced = { presented, sent: stored.refresh_token };
        const body = new URLSearchParams(init.body as URLSearchParams);
        body.set("refresh_token", stored.refresh_token);
        init = { ...init, body };
      }
      const response = await base(input, init);
      if (!response.ok) await this.releaseLease();
      return response;
    } catch (error) {
      await this.releaseLease();
      throw error;
    }
  }

  private async takeLease(): Promise<void> {
    const { agentId, server } = this.row;
    for (let poll = 0; poll < MAX_LEASE_POLLS; poll++) {
      const now = this.options.now();
      const lease = await this.store.takeRefreshLease(
        agentId,
        server,
        this.leaseOwner,
        now,
        now + REFRESH_LEASE_MS,
      );
      if (lease === "taken") {
        this.leaseHeld = true;
        return;
      }
      if (lease === "missing")
        throw new ConflictError("this server's OAuth credentials were removed");
      await new Promise((resolve) => setTimeout(resolve, LEASE_POLL_MS));
    }
    throw new ConflictError(
      `another room has been refreshing this server's token for over ${(2 * REFRESH_LEASE_MS) / 1000} s`,
    );
  }

  private async releaseLease(): Promise<void> {
    if (!this.leaseHeld) return;
    this.leaseHeld = false;
    await this.store.releaseRefreshLease(this.row.agentId, this.row.server, this.leaseOwner);
  }

  private async persist(): Promise<void> {
    await this.store.save(this.row, this.options.now());
  }
}

/** A token endpoint's answer carrying tokens another room obtained (expires_in from what is left). */
function tokenResponse(tokens: OAuthTokens, leftMs: number | null): Response {
  const { access_token, token_type, refresh_token, scope, id_token } = tokens;
  const body = {
    access_token,
    token_type,
    refresh_token,
    scope,
    id_token,
    ...(leftMs === null ? {} : { expires_in: Math.floor(leftMs / 1000) }),
  };
  return Response.json(body, { headers: { "cache-control": "no-store" } });
}
