// What the global setup (test/setup/mcp-peers.ts) hands to tests: the MCP peers' URLs.
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    mcpPeers: {
      plainUrl: string;
      sseUrl: string;
      oauthUrl: string;
      authServerUrl: string;
      controlUrl: string;
    };
  }
}
