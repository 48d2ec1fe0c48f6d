// vitest global setup (Node): starts the MCP peers once for the run and hands their URLs to the
// tests in workerd through `inject("mcpPeers")`.
import type { TestProject } from "vitest/node";
import { startMcpPeers } from "../peers/mcp-peers.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const peers = await startMcpPeers();
  project.provide("mcpPeers", {
    plainUrl: peers.plainUrl,
    sseUrl: peers.sseUrl,
    oauthUrl: peers.oauthUrl,
    authServerUrl: peers.authServerUrl,
    controlUrl: peers.controlUrl,
  });
  return () => peers.close();
}
