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
import {
  ADMIN_TOKEN,
  api,
  createTestAgent,
  json,
  mintToken,
  useModelStandIn,
} from "../helpers/api.ts";
import { approverLapse } from "../../src/http/routes/mcp-server/oauth/grant-approver.ts";
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

/**
 * A host's OAuth state in memory; its "user" approves on the consent page with `operatorTokens`,
 * the first one first, then the next at each authorization the host asks for (the last repeats).
 */
function hostProvider(...operatorTokens: string[]) {
  const state: {
    client?: { client_id: string };
    tokens?: StoredOAuthTokens;
    verifier?: string;
    callback?: URLSearchParams;
    /** Each authorization URL the host opened. */
    opened: URL[];
  } = { opened: [] };
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
      state.opened.push(url);
      const operatorToken =
        operatorTokens[Math.min(state.opened.length, operatorTokens.length) - 1]!;
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

async function connectWithOAuth(agentId: string, ...operatorTokens: string[]) {
  const { provider, state } = hostProvider(...operatorTokens);
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
  const transport = transportFor(agentId, provider);
  await client.connect(transport);
  open.push(client);
  return { client, state, transport, newClient, provider };
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

  it("grants no more than the approving token may do, and answers a call outside the grant 403 to step up", async () => {
    const agentId = await createTestAgent();
    const manager = await mintToken({
      name: "manager",
      scopes: ["agents:write", "agents:read"],
      agents: [agentId],
    });
    const { tokens } = await authorizeGrant(agentId, manager.token);
    expect(tokens.scope).toBe("agents:read");
    const { client } = await connectRaw(agentId, tokens.access_token);
    // Every tool is listed to a grant; the instructions say which are outside it.
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      "chat",
      "get_task",
      "search_memories",
      "start_task",
    ]);
    expect(client.getInstructions()).toContain("search_memories (needs `memories:read`)");
    // Calling one of those is refused before it runs, with the challenge a host steps up from:
    // what the grant holds and what the call needs.
    const refused = await mcpCall(agentId, tokens.access_token, "search_memories", {
      query: "anything",
    });
    expect(refused.status).toBe(403);
    const challenge = refused.headers.get("www-authenticate") ?? "";
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="memories:read agents:read"');
    expect(challenge).toContain(
      `resource_metadata="https://agents.test/.well-known/oauth-protected-resource/agents/${agentId}/mcp"`,
    );
    expect((await json<{ error: { code: string } }>(refused)).error.code).toBe("forbidden");
    // A tool inside the grant is called as before.
    const allowed = await mcpCall(agentId, tokens.access_token, "get_task", { taskId: "none" });
    expect(allowed.status).toBe(200);
    // An API token is not stepped up: it is shown only what it may call, as before.
    const { client: byToken } = await connectRaw(agentId, manager.token);
    expect((await byToken.listTools()).tools.map((tool) => tool.name)).toEqual(["get_task"]);
  });

  it("steps up with the SDK's client: the operator is asked again for the wider scope, then the call works", async () => {
    const agentId = await createTestAgent();
    const manager = await mintToken({
      name: "manager",
      scopes: ["agents:write", "agents:read"],
      agents: [agentId],
    });
    const wider = await operator(agentId);
    const { client, state, transport, newClient, provider } = await connectWithOAuth(
      agentId,
      manager.token,
      wider.token,
    );
    expect(state.tokens?.scope).toBe("agents:read");
    await expect(
      client.callTool({ name: "search_memories", arguments: { query: "anything" } }),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    // The host asked for what it held and what the call needs, and the operator allowed it.
    expect(state.opened).toHaveLength(2);
    expect(new Set(state.opened[1]!.searchParams.get("scope")?.split(" "))).toEqual(
      new Set(["agents:read", "memories:read"]),
    );
    await transport.finishAuth(state.callback ?? new URLSearchParams());
    expect(new Set(state.tokens?.scope?.split(" "))).toEqual(
      new Set(["agents:read", "memories:read"]),
    );
    const again = newClient();
    await again.connect(transportFor(agentId, provider));
    open.push(again);
    const result = await again.callTool({
      name: "search_memories",
      arguments: { query: "anything" },
    });
    expect(result.isError).not.toBe(true);
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

  it("ends a grant when the API token that approved it is revoked: its access, its refresh, its listing", async () => {
    const agentId = await createTestAgent();
    const approver = await operator(agentId);
    const { clientId, tokens } = await authorizeGrant(agentId, approver.token);
    // Another grant on the same agent, approved by ADMIN_TOKEN, which no token revocation ends.
    const byAdmin = await authorizeGrant(agentId, ADMIN_TOKEN);
    expect((await mcpPost(agentId, tokens.access_token)).status).toBe(200);
    const listed = async () =>
      (
        await json<{ grants: Array<{ approvedBy: string; approverLapse: string | null }> }>(
          await api("GET", `/agents/${agentId}/mcp/grants`),
        )
      ).grants
        .map((grant) => [grant.approvedBy, grant.approverLapse])
        .sort();
    expect(await listed()).toEqual(
      [
        [approver.id, null],
        ["admin-token", null],
      ].sort(),
    );
    expect((await api("DELETE", `/auth/tokens/${approver.id}`)).status).toBe(204);
    expect(await listed()).toEqual(
      [
        [approver.id, "revoked"],
        ["admin-token", null],
      ].sort(),
    );
    // The refresh is refused, and the library deletes the grant with its tokens.
    const refresh = await tokenRequest(agentId, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token ?? "",
      client_id: clientId,
    });
    expect(refresh.status).toBe(400);
    expect((await json<{ error: string }>(refresh)).error).toBe("invalid_grant");
    const refused = await mcpPost(agentId, tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(await listed()).toEqual([["admin-token", null]]);
    expect((await mcpPost(agentId, byAdmin.tokens.access_token)).status).toBe(200);
  });

  it("refuses the access token of a grant whose approver was revoked, before any refresh", async () => {
    const agentId = await createTestAgent();
    const approver = await operator(agentId);
    const { tokens } = await authorizeGrant(agentId, approver.token);
    expect((await mcpPost(agentId, tokens.access_token)).status).toBe(200);
    expect((await api("DELETE", `/auth/tokens/${approver.id}`)).status).toBe(204);
    expect((await mcpPost(agentId, tokens.access_token)).status).toBe(401);
  });

  it("reads an approver's record: revoked, expired, unknown or for other agents no longer stands", () => {
    const now = 1_000_000;
    const record = {
      id: "tok_1",
      name: "operator",
      scopes: ["agents:write" as const],
      agents: ["a1"],
      rateLimit: null,
      userPrefix: null,
      createdBy: "admin-token",
      createdAt: 0,
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
    };
    expect(approverLapse(record, "a1", now)).toBeNull();
    expect(approverLapse({ ...record, agents: null }, "a2", now)).toBeNull();
    expect(approverLapse({ ...record, expiresAt: now + 1 }, "a1", now)).toBeNull();
    expect(approverLapse({ ...record, expiresAt: now }, "a1", now)).toBe("expired");
    expect(approverLapse({ ...record, revokedAt: now - 1 }, "a1", now)).toBe("revoked");
    expect(approverLapse(record, "a2", now)).toBe("other_agent");
    expect(approverLapse(null, "a1", now)).toBe("unknown");
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

/** One stateless tools/call (protocol 2025-11-25) with a bearer token, as a host sends it. */
const mcpCall = (agentId: string, token: string, name: string, args: Record<string, unknown>) =>
  workerFetch(`${agentBase(agentId)}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name, arguments: args },
    }),
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
