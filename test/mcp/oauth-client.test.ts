// The worker as an OAuth client of MCP servers, the parts that need no server: its Client ID
// Metadata Document, pre-registered credentials and where their secret may go, the challenge a
// server's 401 carries (MCP 2025-11-25 authorization, scope selection), a pending step-up, and
// the issuer a 2025-03-26 server's own-origin authorization server may name.
// End to end: test/surfaces/mcp.test.ts, test/surfaces/mcp-cimd.test.ts, and the conformance
// suite (npm run mcp:conformance:client).
import { describe, expect, it } from "vitest";
import { clientMetadataDocument, clientMetadataUrl } from "../../src/mcp/client-metadata.ts";
import { beginAuthorization, readChallenge } from "../../src/mcp/consent.ts";
import type { McpPlatform } from "../../src/mcp/platform.ts";
import { McpServerConfig, type McpServerEntry } from "../../src/mcp-registry.ts";
import {
  AgentOAuthProvider,
  type PreRegisteredClient,
  type ProviderOptions,
} from "../../src/mcp/oauth-provider.ts";
import { ValidationError } from "../../src/runtime/util/errors.ts";
import { createMemoryCredentialStore } from "../../scripts/mcp-conformance-stores.ts";

const AS = "https://auth.example";

async function provider(
  options: Partial<ProviderOptions> = {},
  data: Record<string, unknown> = {},
): Promise<AgentOAuthProvider> {
  const store = createMemoryCredentialStore();
  await store.save(
    {
      agentId: "ada",
      server: "crm",
      data: {
        discovery: {
          authorizationServerUrl: `${AS}/`,
          authorizationServerMetadata: {
            issuer: `${AS}/`,
            authorization_endpoint: `${AS}/authorize`,
            token_endpoint: `${AS}/token`,
            response_types_supported: ["code"],
          },
        },
        ...data,
      },
      stateHash: null,
      stateExpiresAt: null,
      tokenExpiresAt: null,
    },
    0,
  );
  return AgentOAuthProvider.load(store, "ada", "crm", {
    redirectUrl: "https://agents.example/oauth/callback",
    clientMetadataUrl: null,
    scopes: [],
    clientName: "edge-agents (ada)",
    now: () => 1_000,
    ...options,
  });
}

describe("Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document)", () => {
  it("has a URL only under an https PUBLIC_BASE_URL, since that URL is the client_id", () => {
    expect(clientMetadataUrl("https://agents.example")).toBe(
      "https://agents.example/oauth/client-metadata.json",
    );
    expect(clientMetadataUrl("http://localhost:8787")).toBeNull();
    expect(clientMetadataUrl(undefined)).toBeNull();
    expect(clientMetadataDocument("http://localhost:8787")).toBeNull();
  });

  it("names itself as client_id and the worker's callback as its only redirect URI", () => {
    const document = clientMetadataDocument("https://agents.example/");
    expect(document).toMatchObject({
      client_id: "https://agents.example/oauth/client-metadata.json",
      redirect_uris: ["https://agents.example/oauth/callback"],
      token_endpoint_auth_method: "none",
    });
  });

  it("is offered to the SDK as clientMetadataUrl (used where the server supports it)", async () => {
    const url = "https://agents.example/oauth/client-metadata.json";
    expect((await provider({ clientMetadataUrl: url })).clientMetadataUrl).toBe(url);
    expect((await provider()).clientMetadataUrl).toBeUndefined();
  });
});

describe("pre-registered client credentials", () => {
  const secret = (origins: string[], value: string | undefined) =>
    ({
      clientId: "agents-client",
      secret: { name: "MCP_CRM_CLIENT_SECRET", value, origins: new Set(origins) },
    }) satisfies PreRegisteredClient;

  it("are configured as a client id and the name of a worker secret, never the secret itself", () => {
    const config = (client: unknown) =>
      McpServerConfig.safeParse({
        url: "https://mcp.example/mcp",
        auth: { type: "oauth", client },
      });
    expect(config({ id: "agents-client", secret: "MCP_CRM_CLIENT_SECRET" }).success).toBe(true);
    expect(config({ id: "agents-client" }).success).toBe(true);
    expect(config({ id: "agents-client", secret: "hunter2" }).success).toBe(false);
    expect(config({ id: "agents-client", secret: "OPENAI_API_KEY" }).success).toBe(false);
  });

  it("sends the secret to a token endpoint at an origin declared for it, bound to that server", async () => {
    const oauth = await provider({ preRegistered: secret([AS], "s3cret") });
    expect(oauth.clientInformation()).toEqual({
      client_id: "agents-client",
      client_secret: "s3cret",
      issuer: `${AS}/`,
    });
  });

  it("refuses to send the secret to any other token endpoint", async () => {
    const oauth = await provider({ preRegistered: secret(["https://other.example"], "s3cret") });
    expect(() => oauth.clientInformation()).toThrow(ValidationError);
    expect(() => oauth.clientInformation()).toThrow(/not to https:\/\/auth\.example/);
  });

  it("says when the secret is not set, and takes a public client's id alone", async () => {
    const unset = await provider({ preRegistered: secret([AS], undefined) });
    expect(() => unset.clientInformation()).toThrow(/MCP_CRM_CLIENT_SECRET is not set/);
    const publicClient = await provider({ preRegistered: { clientId: "public-client" } });
    expect(publicClient.clientInformation()).toEqual({
      client_id: "public-client",
      issuer: `${AS}/`,
    });
  });

  it("never stores the credentials (the server entry is their one source)", async () => {
    const oauth = await provider({ preRegistered: secret([AS], "s3cret") });
    await oauth.saveClientInformation({ client_id: "agents-client", client_secret: "s3cret" });
    const plain = await provider();
    expect(plain.clientInformation()).toBeUndefined();
  });
});

describe("the server's challenge (MCP 2025-11-25 authorization: scope selection strategy)", () => {
  const answering =
    (response: Response): typeof fetch =>
    async () =>
      response;

  it("reads resource_metadata and scope from a 401's WWW-Authenticate (RFC 9728 section 5.1)", async () => {
    const challenge = await readChallenge(
      new URL("https://mcp.example/mcp"),
      {},
      answering(
        new Response(null, {
          status: 401,
          headers: {
            "www-authenticate":
              'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="files:read"',
          },
        }),
      ),
    );
    expect(challenge.resourceMetadataUrl?.href).toBe(
      "https://mcp.example/.well-known/oauth-protected-resource/mcp",
    );
    expect(challenge.scope).toBe("files:read");
  });

  it("gives no hints when the server lets initialize through or cannot be reached", async () => {
    const url = new URL("https://mcp.example/mcp");
    expect(await readChallenge(url, {}, answering(Response.json({})))).toEqual({});
    expect(
      await readChallenge(url, {}, async () => {
        throw new TypeError("unreachable");
      }),
    ).toEqual({});
  });
});

describe("step-up authorization (403 insufficient_scope)", () => {
  it("holds tokens back while a consent for more scope is pending", async () => {
    const tokens = { access_token: "at", token_type: "bearer" };
    const pending = await provider({}, { tokens, authUrl: `${AS}/authorize?state=x` });
    // The pending link counts only while its state is alive (set by state()).
    expect(pending.stepUpPending).toBe(false);
    await pending.state();
    expect(pending.stepUpPending).toBe(true);
    await pending.saveTokens(tokens);
    expect(pending.stepUpPending).toBe(false);
  });
});

describe("a 2025-03-26 server's authorization server at its own origin (RFC 8414 section 3.3)", () => {
  const MCP = "https://legacy.example";

  /** No protected-resource metadata; the authorization server's metadata at the server's origin. */
  function legacyServer(issuer: string): typeof fetch {
    return async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.origin !== MCP) return new Response(null, { status: 404 });
      if (url.pathname === "/.well-known/oauth-authorization-server")
        return Response.json({
          issuer,
          authorization_endpoint: `${MCP}/oauth/authorize`,
          token_endpoint: `${MCP}/oauth/token`,
          registration_endpoint: `${MCP}/oauth/register`,
          response_types_supported: ["code"],
          code_challenge_methods_supported: ["S256"],
        });
      if (url.pathname === "/oauth/register" && init?.method === "POST")
        return Response.json(
          { client_id: "registered", redirect_uris: ["https://agents.example/oauth/callback"] },
          { status: 201 },
        );
      if (url.pathname === "/mcp") return new Response(null, { status: 401 });
      return new Response(null, { status: 404 });
    };
  }

  function platform(fetchFn: typeof fetch): McpPlatform {
    return {
      servers: { list: async () => [] } as unknown as McpPlatform["servers"],
      credentials: null,
      urlPolicy: {
        allowLoopback: false,
        resolve: async () => ["93.184.216.34"],
        trustedOrigins: [MCP],
      },
      redirectUrl: "https://agents.example/oauth/callback",
      clientMetadataUrl: null,
      secret: () => undefined,
      secretOrigins: () => new Set(),
      fetch: fetchFn,
      oauthFetch: fetchFn,
    };
  }

  const entry: McpServerEntry = {
    name: "crm",
    config: McpServerConfig.parse({ url: `${MCP}/mcp`, auth: { type: "oauth" } }),
    origin: "agent",
  };

  it("accepts an issuer with a path at the server's own origin, as the 1.x client did", async () => {
    const fetchFn = legacyServer(`${MCP}/oauth`);
    const consent = await beginAuthorization(
      platform(fetchFn),
      entry,
      await provider({}, { discovery: undefined }),
    );
    expect(consent).not.toBeNull();
    expect(new URL(consent!).origin + new URL(consent!).pathname).toBe(`${MCP}/oauth/authorize`);
  });

  it("refuses metadata that names an issuer at another origin", async () => {
    const fetchFn = legacyServer("https://elsewhere.example/oauth");
    await expect(
      beginAuthorization(platform(fetchFn), entry, await provider({}, { discovery: undefined })),
    ).rejects.toMatchObject({ status: 502, message: expect.stringContaining("another issuer") });
  });
});
