// The worker as an OAuth client of MCP servers, described by a Client ID Metadata Document
// (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25 authorization, "Client ID
// Metadata Documents"): the document's https URL is the client_id, so an authorization server that
// advertises `client_id_metadata_document_supported` needs no registration. It is served at a
// stable URL under PUBLIC_BASE_URL (https only: the URL is the identity); without one the client
// falls back to dynamic registration (RFC 7591) or pre-registered credentials.
/** Where authorization servers send the person back (src/http/routes/oauth.ts). */
export const OAUTH_CALLBACK_PATH = "/oauth/callback";
export const CLIENT_METADATA_PATH = "/oauth/client-metadata.json";
export const CLIENT_NAME = "edge-agents";

/** The document's URL, which is also the client_id; null unless PUBLIC_BASE_URL is https. */
export function clientMetadataUrl(publicBaseUrl: string | undefined): string | null {
  if (!publicBaseUrl) return null;
  const base = new URL(publicBaseUrl);
  return base.protocol === "https:" ? new URL(CLIENT_METADATA_PATH, base).toString() : null;
}

/** The document served at clientMetadataUrl(): a public client using PKCE, no secret. */
export function clientMetadataDocument(publicBaseUrl: string): Record<string, unknown> | null {
  const clientId = clientMetadataUrl(publicBaseUrl);
  if (!clientId) return null;
  const base = new URL(publicBaseUrl);
  return {
    client_id: clientId,
    client_name: CLIENT_NAME,
    client_uri: base.origin,
    redirect_uris: [new URL(OAUTH_CALLBACK_PATH, base).toString()],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
}
