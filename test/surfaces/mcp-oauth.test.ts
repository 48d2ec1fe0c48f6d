// OAuth for MCP hosts on an agent's MCP server (src/http/routes/mcp-server/oauth/), by the specs'
// own headings: discovery (MCP authorization, RFC 9728, RFC 8414), registration (RFC 7591), the
// operator's consent, the code with PKCE S256 (RFC 7636), refresh, revocation (RFC 7009 and the
// operator's REST route), and the audience: one agent per grant. The SDK's v2 client, holding no
// API token, connects through the whole flow and calls `chat`.
import {
  Client,
  type OAuthClientProvider,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/client/validators/cf-worker";
import { afterEach, describe, expect, it } from "vitest";
import { api, createTestAgent, json, mintToken, useModelStandIn } from "../helpers/api.ts";
import {
  agentBase,
  authorizeGrant,
  authorizeUrl,
  consent,
  openConsent,
  pkce,
  REDIRECT_URI,
  registerClient,
  tokenRequest,
  type Tokens,
  workerFetch,
} from "../helpers/mcp-oauth.ts";

const model = useModelStandIn();

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

/** A host's OAuth state in memory; its "user" approves with `operatorToken` on the consent page. */
function hostProvider(operatorToken: string) {
  const state: {
    client?: { client_id: string };
    tokens?: StoredOAuthTokens;
    verifier?: string;
    callback?: URLSearchParams;
  } = {};
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return REDIRECT_URI;
    },
    get clientMetadata() {
      return {
        client_name: "OAuth-only host",
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      };
    },
    clientInformation: () => state.client,
    saveClientInformation: (info) => {
      state.client = info as { client_id: string };
    },
    tokens: () => state.tokens,
    saveTokens: (tokens) => {
      state.tokens = tokens;
    },
    saveCodeVerifier: (verifier) => {
      state.verifier = verifier;
    },
    codeVerifier: () => state.verifier ?? "",
    // The browser step: the operator opens the page and allows with their API token.
    redirectToAuthorization: async (url) => {
      const answer = await consent(url, "approve", operatorToken);
      // The redirect's query: the code, the state and (RFC 9207) the issuer.
      state.callback = new URL(answer.headers.get("location") ?? "").searchParams;
    },
  };
  return { provider, state };
}

function transportFor(agentId: string, provider: OAuthClientProvider) {
  return new StreamableHTTPClientTransport(new URL(`${agentBase(agentId)}/mcp`), {
    fetch: workerFetch,
    authProvider: provider,
  });
}

async function connectWithOAuth(agentId: string, operatorToken: string) {
  const { provider, state } = hostProvider(operatorToken);
  const newClient = () =>
    new Client(
      { name: "oauth-only-host", version: "1.0.0" },
      { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
    );
  const first = transportFor(agentId, provider);
  await expect(newClient().connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(state.callback?.get("code")).toBeTruthy();
  await first.finishAuth(state.callback ?? new URLSearchParams());
  const client = newClient();
  await client.connect(transportFor(agentId, provider));
  open.push(client);
  return { client, state };
}

const mcpPost = (agentId: string, token: string | null) =>
  workerFetch(`${agentBase(agentId)}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" },
      },
    }),
  });

describe("MCP OAuth: discovery (MCP authorization, RFC 9728, RFC 8414)", () => {
  it("answers a request without a token 401 with a Bearer challenge naming the resource metadata", async () => {
    const agentId = await createTestAgent();
    const response = await mcpPost(agentId, null);
    expect(response.status).toBe(401);
    const challenge = response.headers.get("www-authenticate") ?? "";
    expect(challenge).toContain(
      `resource_metadata="https://agents.test/.well-known/oauth-protected-resource/agents/${agentId}/mcp"`,
    );
    expect(challenge).toContain('scope="messages:write memories:read agents:read"');
    expect((await json<{ error: { code: string } }>(response)).error.code).toBe("unauthorized");
  });

  it("publishes the agent's MCP URL as the resource and its own authorization server", async () => {
    const agentId = await createTestAgent();
    const resource = await json(
      await workerFetch(
        `https://agents.test/.well-known/oauth-protected-resource/agents/${agentId}/mcp`,
      ),
    );
    expect(resource).toMatchObject({
      resource: `${agentBase(agentId)}/mcp`,
      authorization_servers: [agentBase(agentId)],
    });
    const server = await json(
      await workerFetch(
        `https://agents.test/.well-known/oauth-authorization-server/agents/${agentId}`,
      ),
    );
    expect(server).toMatchObject({
      issuer: agentBase(agentId),
      authorization_endpoint: `${agentBase(agentId)}/oauth/authorize`,
      token_endpoint: `${agentBase(agentId)}/oauth/token`,
      registration_endpoint: `${agentBase(agentId)}/oauth/register`,
      revocation_endpoint: `${agentBase(agentId)}/oauth/token`,
      code_challenge_methods_supported: ["S256"],
      client_id_metadata_document_supported: false,
    });
    const unknown = await workerFetch(
      "https://agents.test/.well-known/oauth-protected-resource/agents/no-such-agent/mcp",
    );
    expect(unknown.status).toBe(404);
  });
});

describe("MCP OAuth: an OAuth-only MCP client", () => {
  it("discovers, registers, gets the operator's consent and a token, and calls chat", async () => {
    const agentId = await createTestAgent();
    model.script({ text: "Hello over OAuth." });
    const { client, state } = await connectWithOAuth(agentId, (await operator(agentId)).token);
    expect(state.tokens?.refresh_token).toBeTruthy();
    const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(tools).toEqual(["chat", "get_task", "search_memories", "start_task"]);
    const result = await client.callTool({ name: "chat", arguments: { message: "hi" } });
    expect(result.isError).not.toBe(true);
    expect(JSON.stringify(result.content)).toContain("Hello over OAuth.");
    // The grant is the operator's to see, under the REST API's own auth.
    const { grants } = await json<{ grants: Array<{ clientName: string; scopes: string[] }> }>(
      await api("GET", `/agents/${agentId}/mcp/grants`),
    );
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ clientName: "OAuth-only host" });
  });
});

describe("MCP OAuth: the operator's consent", () => {
  it("shows the client, its redirect URI, the agent and the scopes, under the assets' CSP", async () => {
    const agentId = await createTestAgent();
    const clientId = await registerClient(agentId, "Claude <script>");
    const page = await openConsent(authorizeUrl(agentId, clientId, (await pkce()).challenge));
    expect(page.status).toBe(200);
    expect(page.html).toContain("Claude &#60;script&#62;");
    expect(page.html).not.toContain("<script");
    expect(page.html).toContain(REDIRECT_URI);
    expect(page.html).toContain(agentId);
    for (const scope of ["messages:write", "memories:read", "agents:read"])
      expect(page.html).toContain(scope);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self' https://host.test");
  });

  it("refuses to approve without a token that may manage the agent", async () => {
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    const clientId = await registerClient(agentId);
    const url = () => pkce().then((p) => authorizeUrl(agentId, clientId, p.challenge));
    const noToken = await consent(await url(), "approve", null);
    expect(noToken.status).toBe(401);
    const reader = await mintToken({ name: "reader", scopes: ["agents:read", "messages:write"] });
    const readOnly = await consent(await url(), "approve", reader.token);
    expect(readOnly.status).toBe(403);
    expect(await readOnly.text()).toContain("agents:write");
    const elsewhere = await mintToken({ name: "other", scopes: ["agents:write"], agents: [other] });
    const wrongAgent = await consent(await url(), "approve", elsewhere.token);
    expect(wrongAgent.status).toBe(403);
    expect((await consent(await url(), "approve", "ea_not-a-real-token")).status).toBe(401);
    // No grant came of any of them.
    const { grants } = await json<{ grants: unknown[] }>(
      await api("GET", `/agents/${agentId}/mcp/grants`),
    );
    expect(grants).toEqual([]);
  });

  it("sends access_denied back to the client when the operator denies", async () => {
    const agentId = await createTestAgent();
    const clientId = await registerClient(agentId);
    const denied = await consent(
      authorizeUrl(agentId, clientId, (await pkce()).challenge),
      "deny",
      null,
    );
    expect(denied.status).toBe(302);
    const location = new URL(denied.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("state-1");
  });

  it("grants no more than the approving token may do", async () => {
    const agentId = await createTestAgent();
    const manager = await mintToken({
      name: "manager",
      scopes: ["agents:write", "agents:read"],
      agents: [agentId],
    });
    const { tokens } = await authorizeGrant(agentId, manager.token);
    expect(tokens.scope).toBe("agents:read");
    const { client } = await connectRaw(agentId, tokens.access_token);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["get_task"]);
  });
});

describe("MCP OAuth: tokens (RFC 6749 refresh, RFC 7009 revocation, one agent per grant)", () => {
  it("refreshes a token, and the new one works", async () => {
    const agentId = await createTestAgent();
    const { clientId, tokens } = await authorizeGrant(agentId, (await operator(agentId)).token);
    const refreshed = await tokenRequest(agentId, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token ?? "",
      client_id: clientId,
    });
    expect(refreshed.status).toBe(200);
    const next = await json<Tokens>(refreshed);
    expect(next.access_token).not.toBe(tokens.access_token);
    expect((await mcpPost(agentId, next.access_token)).status).toBe(200);
  });

  it("refuses a grant the operator revoked, its access and its refresh token", async () => {
    const agentId = await createTestAgent();
    const { clientId, tokens } = await authorizeGrant(agentId, (await operator(agentId)).token);
    expect((await mcpPost(agentId, tokens.access_token)).status).toBe(200);
    const { grants } = await json<{ grants: Array<{ id: string }> }>(
      await api("GET", `/agents/${agentId}/mcp/grants`),
    );
    const reader = await mintToken({ name: "reader", scopes: ["agents:read"], agents: [agentId] });
    const notAllowed = await api("DELETE", `/agents/${agentId}/mcp/grants/${grants[0]?.id}`, {
      token: reader.token,
    });
    expect(notAllowed.status).toBe(403);
    expect((await api("DELETE", `/agents/${agentId}/mcp/grants/${grants[0]?.id}`)).status).toBe(
      204,
    );
    const refused = await mcpPost(agentId, tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const refresh = await tokenRequest(agentId, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token ?? "",
      client_id: clientId,
    });
    expect(refresh.status).toBe(400);
    expect((await api("DELETE", `/agents/${agentId}/mcp/grants/${grants[0]?.id}`)).status).toBe(
      404,
    );
  });

  it("refuses an access token the client revoked itself (RFC 7009)", async () => {
    const agentId = await createTestAgent();
    const { clientId, tokens } = await authorizeGrant(agentId, (await operator(agentId)).token);
    const revoked = await tokenRequest(agentId, {
      token: tokens.access_token,
      token_type_hint: "access_token",
      client_id: clientId,
    });
    expect(revoked.status).toBe(200);
    expect((await mcpPost(agentId, tokens.access_token)).status).toBe(401);
  });

  it("refuses a token granted for one agent on another agent's endpoint", async () => {
    const agentId = await createTestAgent();
    const other = await createTestAgent();
    const { tokens } = await authorizeGrant(agentId, (await operator(agentId)).token);
    expect((await mcpPost(agentId, tokens.access_token)).status).toBe(200);
    const elsewhere = await mcpPost(other, tokens.access_token);
    expect(elsewhere.status).toBe(401);
    // Nor does it open the REST API, which takes API tokens only.
    expect((await api("GET", `/agents/${agentId}`, { token: tokens.access_token })).status).toBe(
      401,
    );
  });
});

/** An API token that may manage `agentId` and use every MCP tool on it. */
function operator(agentId: string) {
  return mintToken({
    name: "operator",
    scopes: ["agents:write", "messages:write", "memories:read", "agents:read"],
    agents: [agentId],
  });
}

async function connectRaw(agentId: string, accessToken: string) {
  const client = new Client(
    { name: "oauth-token-host", version: "1.0.0" },
    { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${agentBase(agentId)}/mcp`), {
      fetch: workerFetch,
      requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
    }),
  );
  open.push(client);
  return { client };
}
