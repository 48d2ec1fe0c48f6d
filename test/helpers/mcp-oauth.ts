// An MCP host's side of OAuth against an agent's MCP server, as raw HTTP through the worker's
// fetch handler: register a client (RFC 7591), open the consent page, post the operator's choice
// (the page's one-time handle and the cookie that binds it to this "browser"), exchange the code
// with its PKCE verifier, refresh, revoke. The SDK client's provider (test/surfaces/mcp-oauth.test.ts)
// uses `consent` for the human step.
import { exports } from "cloudflare:workers";
import { MCP_BASE } from "./mcp-client.ts";

export const REDIRECT_URI = "https://host.test/callback";

export function workerFetch(url: string | URL | Request, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(url, init));
}

export const agentBase = (agentId: string): string => `${MCP_BASE}/agents/${agentId}`;

export async function registerClient(agentId: string, name = "Test Host"): Promise<string> {
  const response = await workerFetch(`${agentBase(agentId)}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }),
  });
  if (response.status !== 201) throw new Error(`registration failed: ${response.status}`);
  return ((await response.json()) as { client_id: string }).client_id;
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export async function pkce(): Promise<Pkce> {
  const verifier = `${crypto.randomUUID()}${crypto.randomUUID()}`.replaceAll("-", "");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const challenge = btoa(String.fromCharCode(...new Uint8Array(digest)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
  return { verifier, challenge };
}

export function authorizeUrl(
  agentId: string,
  clientId: string,
  challenge: string,
  scope = "messages:write memories:read agents:read",
): URL {
  const url = new URL(`${agentBase(agentId)}/oauth/authorize`);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", clientId);
  url.searchParams.set("redirect_uri", REDIRECT_URI);
  url.searchParams.set("code_challenge", challenge);
  url.searchParams.set("code_challenge_method", "S256");
  url.searchParams.set("state", "state-1");
  url.searchParams.set("scope", scope);
  url.searchParams.set("resource", `${agentBase(agentId)}/mcp`);
  return url;
}

export interface ConsentPage {
  status: number;
  html: string;
  headers: Headers;
  handle: string | null;
  cookie: string | null;
}

export async function openConsent(url: URL | string): Promise<ConsentPage> {
  const response = await workerFetch(url);
  const html = await response.text();
  const handle = /name="handle" value="([^"]+)"/.exec(html)?.[1] ?? null;
  const cookie = response.headers.get("set-cookie")?.split(";")[0] ?? null;
  return { status: response.status, html, headers: response.headers, handle, cookie };
}

/** Posts the consent form as a browser would; the answer is the 302 to the client, or a page. */
export async function consent(
  url: URL | string,
  decision: "approve" | "deny",
  operatorToken: string | null,
): Promise<Response> {
  const page = await openConsent(url);
  if (!page.handle || !page.cookie) throw new Error(`no consent form: ${page.status}`);
  const form = new URLSearchParams({ handle: page.handle, decision });
  if (operatorToken !== null) form.set("token", operatorToken);
  const target = new URL(url);
  return workerFetch(`${target.origin}${target.pathname}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: page.cookie },
    body: form.toString(),
    redirect: "manual",
  });
}

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  scope: string;
  expires_in: number;
}

export async function tokenRequest(
  agentId: string,
  form: Record<string, string>,
): Promise<Response> {
  return workerFetch(`${agentBase(agentId)}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
}

/** The whole flow for one grant: a client, the operator's consent, the code exchanged for tokens. */
export async function authorizeGrant(
  agentId: string,
  operatorToken: string,
  scope?: string,
): Promise<{ clientId: string; tokens: Tokens }> {
  const clientId = await registerClient(agentId);
  const { verifier, challenge } = await pkce();
  const approved = await consent(
    authorizeUrl(agentId, clientId, challenge, scope),
    "approve",
    operatorToken,
  );
  const location = approved.headers.get("location");
  if (approved.status !== 302 || !location) throw new Error(`consent refused: ${approved.status}`);
  const code = new URL(location).searchParams.get("code");
  if (!code) throw new Error("consent redirected without a code");
  const response = await tokenRequest(agentId, {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    code_verifier: verifier,
  });
  if (response.status !== 200) throw new Error(`code exchange failed: ${response.status}`);
  return { clientId, tokens: (await response.json()) as Tokens };
}
