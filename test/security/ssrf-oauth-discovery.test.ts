// Hole 3 of issue 22: SSRF through OAuth discovery. An MCP server that requires OAuth names the
// URLs the worker fetches next (protected-resource metadata, the authorization server, its
// registration and token endpoints). A hostile server names an "internal" service: a private
// address, or a public-looking name whose DNS answer is private. Every such request must be
// refused before it is sent, the caller told plainly, and the internal service's answer never
// shown. The same guard holds for the other URLs that come from outside: a Discord attachment's
// download cannot be redirected inside. The internet here is a stand-in behind globalThis.fetch
// (test/stand-ins/network-stand-in.ts), which follows redirects as fetch does unless told not to.
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mcpPlatform } from "../../src/mcp/platform.ts";
import { api, createTestAgent, MODEL_HOST } from "../helpers/api.ts";
import { chat, post, snowflake, useAgentIn } from "../helpers/discord.ts";
import { createDiscordStandIn } from "../stand-ins/discord-stand-in.ts";
import { createNetworkStandIn } from "../stand-ins/network-stand-in.ts";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";

/** What the internal service would answer: it must never reach anyone. */
const INTERNAL_BODY = "TOPSECRET internal credentials: db-password=hunter2";
const INTERNAL_MARK = /TOPSECRET|hunter2/;
const MCP = "https://mcp.attacker.test";
const AUTH = "https://auth.attacker.test";
const INTRANET = "intranet.attacker.test";
const INTERNAL_HOSTS = [INTRANET, "10.0.0.7", "169.254.169.254", "[fd00::7]", "[::ffff:a00:7]"];

const network = createNetworkStandIn(globalThis.fetch);
vi.spyOn(globalThis, "fetch").mockImplementation(network.fetch);

interface Scenario {
  authorizationServers: string[];
  registrationEndpoint: string;
  tokenEndpoint: string;
  /** What the MCP endpoint's 401 names as its resource metadata. */
  resourceMetadataUrl: string;
}

let scenario: Scenario;

function install(overrides: Partial<Scenario> = {}): void {
  network.reset();
  scenario = {
    authorizationServers: [`${AUTH}/`],
    registrationEndpoint: `${AUTH}/register`,
    tokenEndpoint: `${AUTH}/token`,
    resourceMetadataUrl: `${MCP}/.well-known/oauth-protected-resource/mcp`,
    ...overrides,
  };
  network.names.set("mcp.attacker.test", ["93.184.216.34"]);
  network.names.set("auth.attacker.test", ["93.184.216.35"]);
  network.names.set(INTRANET, ["10.0.0.7"]);
  const internal = () =>
    new Response(INTERNAL_BODY, { status: 400, headers: { "content-type": "text/plain" } });
  for (const host of INTERNAL_HOSTS) network.hosts.set(host, internal);
  network.hosts.set("mcp.attacker.test", (_request, url) => {
    if (url.pathname.startsWith("/.well-known/oauth-protected-resource")) {
      return Response.json({
        resource: `${MCP}/mcp`,
        authorization_servers: scenario.authorizationServers,
      });
    }
    return new Response(null, {
      status: 401,
      headers: { "www-authenticate": `Bearer resource_metadata="${scenario.resourceMetadataUrl}"` },
    });
  });
  network.hosts.set("auth.attacker.test", async (request, url) => {
    if (url.pathname.startsWith("/.well-known/")) return Response.json(authMetadata());
    if (url.pathname === "/register")
      return Response.json(
        { ...((await request.json()) as object), client_id: "client-1" },
        { status: 201 },
      );
    if (url.pathname === "/token")
      return Response.json({
        access_token: "at-new",
        token_type: "bearer",
        expires_in: 3600,
        refresh_token: "rt-new",
      });
    return new Response("not found", { status: 404 });
  });
}

function authMetadata() {
  return {
    issuer: `${AUTH}/`,
    authorization_endpoint: `${AUTH}/authorize`,
    token_endpoint: scenario.tokenEndpoint,
    registration_endpoint: scenario.registrationEndpoint,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
  };
}

const internalRequests = () => network.requestsTo(...INTERNAL_HOSTS);

async function addOAuthServer(agentId: string): Promise<{
  status: number;
  text: string;
  view: { state: string; error?: string; authUrl?: string };
}> {
  const response = await api("POST", `/agents/${agentId}/tools`, {
    body: { name: "evil", url: `${MCP}/mcp`, auth: { type: "oauth" } },
  });
  const text = await response.text();
  return {
    status: response.status,
    text,
    view: JSON.parse(text) as { state: string; error?: string; authUrl?: string },
  };
}

/** Credentials as a finished consent leaves them, with the discovery a hostile server gave. */
async function storeAuthorizedRow(
  agentId: string,
  tokenExpiresInMs: number,
  discovery: Record<string, unknown>,
): Promise<void> {
  const issuer = `${AUTH}/`;
  await mcpPlatform(env).credentials!.save(
    {
      agentId,
      server: "evil",
      data: {
        redirectUrl: "https://agents.test/oauth/callback",
        clientInformation: {
          client_id: "client-1",
          redirect_uris: ["https://agents.test/oauth/callback"],
          issuer,
        },
        tokens: { access_token: "at-old", token_type: "bearer", refresh_token: "rt-old", issuer },
        discovery: {
          authorizationServerUrl: issuer,
          authorizationServerMetadata: authMetadata(),
          ...discovery,
        } as never,
      },
      stateHash: null,
      stateExpiresAt: null,
      tokenExpiresAt: Date.now() + tokenExpiresInMs,
    },
    Date.now(),
  );
}

afterEach(() => network.reset());

describe("SSRF through OAuth discovery (RFC 9728 / RFC 8414 URLs come from the MCP server)", () => {
  for (const target of [
    `https://${INTRANET}/`,
    "http://10.0.0.7/",
    "https://169.254.169.254/",
    "https://[fd00::7]/",
    "https://[::ffff:10.0.0.7]/",
  ]) {
    it(`an MCP server cannot make the worker fetch an internal authorization server's metadata (${target})`, async () => {
      install({ authorizationServers: [target] });
      const agentId = await createTestAgent();
      const { status, text, view } = await addOAuthServer(agentId);
      expect(internalRequests()).toEqual([]);
      expect(status).toBe(201);
      expect(view.state).toBe("failed");
      expect(view.error).toMatch(/could not start the authorization: .*refused/);
      expect(view.authUrl).toBeUndefined();
      expect(text).not.toMatch(INTERNAL_MARK);
    });
  }

  it("an authorization server cannot make the worker register a client at an internal endpoint", async () => {
    install({ registrationEndpoint: `https://${INTRANET}/register` });
    const agentId = await createTestAgent();
    const { text, view } = await addOAuthServer(agentId);
    expect(internalRequests()).toEqual([]);
    expect(view.state).toBe("failed");
    expect(view.error).toContain(INTRANET);
    expect(text).not.toMatch(INTERNAL_MARK);
  });

  it("the OAuth callback does not send the code to an internal token endpoint, nor show its answer", async () => {
    install({ tokenEndpoint: `https://${INTRANET}/token` });
    const agentId = await createTestAgent();
    const { view } = await addOAuthServer(agentId);
    expect(view.state).toBe("authenticating");
    const state = new URL(view.authUrl!).searchParams.get("state")!;
    const callback = await api(
      "GET",
      `/oauth/callback?state=${encodeURIComponent(state)}&code=the-code`,
      { token: null },
    );
    const body = await callback.text();
    expect(internalRequests()).toEqual([]);
    expect(callback.status).toBe(400);
    expect(JSON.parse(body).error.message).toMatch(/refused/);
    expect(body).not.toMatch(INTERNAL_MARK);
  });

  it("a token refresh is not sent to an internal token endpoint", async () => {
    install();
    const agentId = await createTestAgent();
    // The tokens expire within the refresh margin: connecting refreshes them first.
    await storeAuthorizedRow(agentId, 10_000, {
      authorizationServerMetadata: {
        ...authMetadata(),
        token_endpoint: `https://${INTRANET}/token`,
      },
    });
    const { text } = await addOAuthServer(agentId);
    expect(internalRequests()).toEqual([]);
    expect(text).not.toMatch(INTERNAL_MARK);
  });

  it("a 401 naming internal protected-resource metadata does not make the worker fetch it", async () => {
    install({ resourceMetadataUrl: `https://${INTRANET}/.well-known/oauth-protected-resource` });
    const agentId = await createTestAgent();
    // Authorized already (tokens far from expiry): connecting meets the server's 401 and its metadata URL.
    await storeAuthorizedRow(agentId, 3_600_000, {});
    const { text } = await addOAuthServer(agentId);
    expect(network.requestsTo("mcp.attacker.test").length).toBeGreaterThan(0);
    expect(internalRequests()).toEqual([]);
    expect(text).not.toMatch(INTERNAL_MARK);
  });
});

describe("SSRF through a Discord attachment's download", () => {
  const model = createOpenAIStandIn();
  const discord = createDiscordStandIn();

  it("a Discord attachment that redirects to the cloud metadata address is not followed", async () => {
    install();
    network.hosts.set(MODEL_HOST, (request) => model.fetch(request));
    network.hosts.set("discord.test", (request, url) =>
      url.pathname.startsWith("/cdn/")
        ? new Response(null, {
            status: 302,
            headers: { location: "http://169.254.169.254/latest/meta-data/iam" },
          })
        : discord.fetch(request),
    );
    try {
      const channel = snowflake();
      await useAgentIn(channel);
      const body = JSON.parse(chat(channel, "look at this")) as {
        data: Record<string, unknown> & { options: unknown[] };
      };
      body.data.options.push({ name: "attachment", type: 11, value: "1" });
      body.data.resolved = {
        attachments: {
          "1": {
            id: "1",
            filename: "cat.txt",
            size: 10,
            url: "http://discord.test/cdn/cat.txt",
            content_type: "text/plain",
          },
        },
      };
      model.script({ text: "I could not read it." });
      await post(JSON.stringify(body));
      await discord.waitForCalls(1);
      expect(internalRequests()).toEqual([]);
      const prompt = JSON.stringify(model.calls[0]!.messages);
      expect(prompt).toContain('The attachment \\"cat.txt\\" was not read');
      expect(prompt).not.toMatch(INTERNAL_MARK);
    } finally {
      model.reset();
      discord.reset();
    }
  });
});
