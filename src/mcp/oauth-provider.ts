// The MCP SDK's OAuthClientProvider for one agent and one server, over the sealed D1 row
// (credentials.ts). The SDK does discovery (RFC 9728, RFC 8414 with the OpenID fallback), dynamic
// registration (RFC 7591), PKCE S256, resource indicators (RFC 8707) and refresh; this class keeps
// what it produces. Every change is written at once, so a room evicted mid-flow loses nothing.
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { sha256Hex, toBase64Url } from "../runtime/hashing.ts";
import type { McpCredentialRow, McpCredentialStore } from "./credentials.ts";

/** How long a consent link stays usable. */
export const AUTHORIZATION_WINDOW_MS = 15 * 60_000;

export interface ProviderOptions {
  /** PUBLIC_BASE_URL/oauth/callback (or the request's origin); a flow in progress keeps its own. */
  redirectUrl: string | null;
  scopes: readonly string[];
  clientName: string;
  now: () => number;
}

export class AgentOAuthProvider implements OAuthClientProvider {
  /** The consent URL the last flow produced (also kept in the row). */
  authorizationUrl: URL | null = null;

  private readonly store: McpCredentialStore;
  private row: McpCredentialRow;
  private readonly options: ProviderOptions;

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
    const row = (await store.load(agentId, server)) ?? { agentId, server, data: {}, stateHash: null, stateExpiresAt: null, tokenExpiresAt: null };
    return new AgentOAuthProvider(store, row, options);
  }

  get redirectUrl(): string {
    // A flow started with one redirect URL must finish with it (the exchange repeats it).
    const url = this.row.data.redirectUrl ?? this.options.redirectUrl;
    if (!url) throw new Error("no OAuth callback URL is known: set PUBLIC_BASE_URL");
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
    return this.row.data.clientInformation;
  }

  async saveClientInformation(information: OAuthClientInformationMixed): Promise<void> {
    this.row.data.clientInformation = information;
    await this.persist();
  }

  tokens(): OAuthTokens | undefined {
    return this.row.data.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    this.row.data.tokens = tokens;
    this.row.tokenExpiresAt = typeof tokens.expires_in === "number" ? this.options.now() + tokens.expires_in * 1000 : null;
    // Authorized: the consent link and its state are spent.
    delete this.row.data.authUrl;
    delete this.row.data.codeVerifier;
    this.row.stateHash = null;
    this.row.stateExpiresAt = null;
    await this.persist();
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
    if (!verifier) throw new Error("no authorization is in progress for this server (the code verifier is missing)");
    return verifier;
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    this.row.data.discovery = state;
    await this.persist();
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.row.data.discovery;
  }

  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    if (scope === "all" || scope === "client") delete this.row.data.clientInformation;
    if (scope === "all" || scope === "tokens") {
      delete this.row.data.tokens;
      this.row.tokenExpiresAt = null;
    }
    if (scope === "all" || scope === "verifier") delete this.row.data.codeVerifier;
    if (scope === "all" || scope === "discovery") delete this.row.data.discovery;
    await this.persist();
  }

  private async persist(): Promise<void> {
    await this.store.save(this.row, this.options.now());
  }
}
