// vitest global setup (Node): starts the MCP peers once for the run and hands their URLs to the
// tests in workerd through `inject("mcpPeers")`.
import type { TestProject } from "vitest/node";
import { startCimdPeer } from "../peers/mcp-cimd-peer.ts";
import { startMcpPeers } from "../peers/mcp-peers.ts";
import { startMcpV2Peers } from "../peers/mcp-v2-peers.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const peers = await startMcpPeers();
  const cimd = await startCimdPeer();
  const v2 = await startMcpV2Peers();
  project.provide("mcpPeers", {
    plainUrl: peers.plainUrl,
    sseUrl: peers.sseUrl,
    oauthUrl: peers.oauthUrl,
    authServerUrl: peers.authServerUrl,
    controlUrl: peers.controlUrl,
    cimd: { url: cimd.url, authServerUrl: cimd.authServerUrl, controlUrl: cimd.controlUrl },
    v2: { bothUrl: v2.bothUrl, modernUrl: v2.modernUrl },
  });
  return async () => {
    await Promise.all([peers.close(), cimd.close(), v2.close()]);
  };
}
