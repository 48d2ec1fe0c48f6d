// End to end (workerd): the worker as an OAuth client identified by its Client ID Metadata
// Document (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25 authorization). The
// document is served at PUBLIC_BASE_URL/oauth/client-metadata.json; an authorization server that
// advertises `client_id_metadata_document_supported` gets that URL as the client_id (the stand-in,
// test/peers/mcp-cimd-peer.ts, has no registration endpoint at all), others still get a
// registration (test/surfaces/mcp.test.ts).
import { describe, expect, inject, it } from "vitest";
import { api, createTestAgent, json } from "../helpers/api.ts";

const peers = inject("mcpPeers");
const DOCUMENT_URL = "https://agents.test/oauth/client-metadata.json";

interface ServerView {
  name: string;
  state: string;
  authUrl?: string;
  tools: Array<{ name: string }>;
}

describe("OAuth Client ID Metadata Document", () => {
  it("serves the document at a stable URL whose client_id is that URL", async () => {
    const response = await api("GET", "/oauth/client-metadata.json", { token: null });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(await response.json()).toEqual({
      client_id: DOCUMENT_URL,
      client_name: "edge-agents",
      client_uri: "https://agents.test",
      redirect_uris: ["https://agents.test/oauth/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
  });

  it("uses the document's URL as client_id where the authorization server supports it, with no registration", async () => {
    // The authorization server would fetch the client_id URL; here the test hands it what the worker serves.
    const document = await (
      await api("GET", "/oauth/client-metadata.json", { token: null })
    ).json();
    await fetch(`${peers.cimd.controlUrl}/document`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(document),
    });
    const agentId = await createTestAgent();
    const added = await api("POST", `/agents/${agentId}/tools`, {
      body: { name: "cimd", url: peers.cimd.url, auth: { type: "oauth" } },
    });
    expect(added.status).toBe(201);
    const view = await json<ServerView>(added);
    expect(view.state).toBe("authenticating");
    const authUrl = new URL(view.authUrl!);
    expect(authUrl.origin).toBe(new URL(peers.cimd.authServerUrl).origin);
    expect(authUrl.searchParams.get("client_id")).toBe(DOCUMENT_URL);
    expect(authUrl.searchParams.get("redirect_uri")).toBe("https://agents.test/oauth/callback");

    // The person allows; the authorization server checks the redirect URI against the document.
    const redirect = await fetch(authUrl, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    const back = new URL(redirect.headers.get("location")!);
    const page = await api("GET", `${back.pathname}${back.search}`, { token: null });
    expect(page.status).toBe(200);
    expect(await page.json()).toMatchObject({ server: "cimd", state: "ready", tools: 1 });

    const listed = await json<{ servers: ServerView[] }>(
      await api("GET", `/agents/${agentId}/tools`),
    );
    expect(listed.servers.find((server) => server.name === "cimd")?.state).toBe("ready");
    const counts = (await (await fetch(`${peers.cimd.controlUrl}/counts`)).json()) as Record<
      string,
      number
    >;
    expect(counts.registrations).toBe(0);
    expect(counts.codeExchanges).toBeGreaterThanOrEqual(1);
  });
});
