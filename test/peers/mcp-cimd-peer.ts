// An OAuth-protected MCP peer whose authorization server takes Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document) and offers no dynamic registration: its metadata
// says `client_id_metadata_document_supported` and has no registration_endpoint, so a client
// gets in only with a URL client_id. The server would fetch that URL; the worker under test is
// not reachable from here, so the test fetches the worker's document and hands it over
// (POST /document), and the peer then knows that client_id and checks redirect URIs against it.
// Started by vitest's global setup (test/setup/mcp-peers.ts) beside the other MCP peers.
import { createServer, type IncomingMessage } from "node:http";
import express from "express";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import {
  createOAuthMetadata,
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
  mcpAuthRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import {
  OAuthClientInformationFullSchema,
  type OAuthClientInformationFull,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import {
  closeServer,
  handleMcp,
  listen,
  PeerAuthProvider,
  tracked,
  whoamiServer,
} from "./mcp-peers.ts";

export interface CimdPeer {
  /** The MCP server (tool `whoami` names the client_id it was called by). */
  url: string;
  authServerUrl: string;
  /** POST /document (a client's metadata document), GET /counts. */
  controlUrl: string;
  close(): Promise<void>;
}

/** Knows only clients whose metadata documents it was given; registers none. */
class CimdAuthProvider extends PeerAuthProvider {
  readonly documents = new Map<string, OAuthClientInformationFull>();

  override get clientsStore(): OAuthRegisteredClientsStore {
    return { getClient: async (id) => this.documents.get(id) };
  }
}

export async function startCimdPeer(): Promise<CimdPeer> {
  const mcpHttp = createServer();
  const authHttp = createServer();
  const mcpPort = await listen(mcpHttp);
  const authPort = await listen(authHttp);
  const url = new URL(`http://127.0.0.1:${mcpPort}/mcp`);
  const authServerUrl = new URL(`http://127.0.0.1:${authPort}/`);
  const provider = new CimdAuthProvider(url.href);
  const metadata = createOAuthMetadata({ provider, issuerUrl: authServerUrl });
  const noLimit = { rateLimit: false as const };

  const authApp = express();
  // Before the SDK's router, which serves the same path without the CIMD flag.
  authApp.get("/.well-known/oauth-authorization-server", (_req, res) => {
    res.json({ ...metadata, client_id_metadata_document_supported: true });
  });
  authApp.use(
    mcpAuthRouter({
      provider,
      issuerUrl: authServerUrl,
      authorizationOptions: noLimit,
      tokenOptions: noLimit,
      revocationOptions: noLimit,
    }),
  );
  authHttp.on("request", authApp);

  const mcpApp = express();
  mcpApp.use(express.json());
  mcpApp.use(
    mcpAuthMetadataRouter({
      oauthMetadata: metadata,
      resourceServerUrl: url,
      resourceName: "CIMD",
    }),
  );
  const bearer = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(url),
    expectedResource: url,
  });
  const whoami = () => whoamiServer("cimd-peer");
  mcpApp.all(
    "/mcp",
    bearer,
    (req, res) =>
      void handleMcp(whoami, req as IncomingMessage & { auth?: AuthInfo }, res, req.body),
  );
  mcpHttp.on("request", mcpApp);

  const controlApp = express();
  controlApp.use(express.json());
  controlApp.post("/document", (req, res) => {
    const document = OAuthClientInformationFullSchema.parse(req.body);
    provider.documents.set(document.client_id, document);
    res.json({ clientId: document.client_id });
  });
  controlApp.get("/counts", (_req, res) => void res.json(provider.counts));
  const control = createServer(controlApp);
  const controlPort = await listen(control);

  const sockets = [tracked(mcpHttp), tracked(authHttp), tracked(control)] as const;
  return {
    url: url.href,
    authServerUrl: authServerUrl.href,
    controlUrl: `http://127.0.0.1:${controlPort}`,
    close: async () => {
      await Promise.all([
        closeServer(mcpHttp, sockets[0]),
        closeServer(authHttp, sockets[1]),
        closeServer(control, sockets[2]),
      ]);
    },
  };
}
