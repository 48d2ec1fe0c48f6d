// What the global setups hand to tests: the MCP peers' URLs (test/setup/mcp-peers.ts) and the
// Discord Gateway stand-in's (test/setup/gateway-peer.ts); the loopback web's (test/setup/web-peers.ts).
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    mcpPeers: {
      plainUrl: string;
      sseUrl: string;
      oauthUrl: string;
      authServerUrl: string;
      controlUrl: string;
      /** An authorization server that takes Client ID Metadata Documents only (mcp-cimd-peer.ts). */
      cimd: { url: string; authServerUrl: string; controlUrl: string };
      /** v2 SDK servers (mcp-v2-peers.ts): 2026-07-28 and 2025-11-25, or 2026-07-28 only. */
      v2: { bothUrl: string; modernUrl: string };
    };
    gatewayPeer: { url: string; controlUrl: string };
    /** A second Gateway stand-in for the sharded bot (test/gateway/sharding.spec.ts). */
    gatewayShardPeer: { url: string; controlUrl: string };
    /** A third, for autoThread's conversations (test/gateway/auto-thread.spec.ts). */
    gatewayThreadPeer: { url: string; controlUrl: string };
    /** A fourth, for the filter before the model (test/gateway/message-filter.spec.ts). */
    gatewayFilterPeer: { url: string; controlUrl: string };
    webPeers: { baseUrl: string; searchBase: string };
  }
}
