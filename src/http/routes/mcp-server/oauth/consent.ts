// An agent's authorization endpoint (GET and POST /agents/:agentId/oauth/authorize): the library
// validates the request (client, exact redirect URI, PKCE S256, resource) and keeps it server-side
// behind a one-time handle bound to the browser; this page shows it to the agent's operator.
// Allow needs an API token that may manage the agent, asked of the one check (`agent.write`), and
// grants what the client asked that this token may do itself, never more; Deny sends access_denied.
import { AuthorizationError } from "@cloudflare/workers-oauth-provider";
import type { Context } from "hono";
import { stores } from "../../../../db/stores/index.ts";
import { admit } from "../../../../rate-limits/admission.ts";
import { tokenBucket } from "../../../../rate-limits/buckets.ts";
import { decide, hasScope, type Scope } from "../../../../runtime/access/index.ts";
import { AppError } from "../../../../runtime/util/errors.ts";
import type { AppEnv, Principal } from "../../../app-env.ts";
import { authenticateApiToken, keepAliveOf } from "../../../auth.ts";
import { agentOAuthApi, MCP_OAUTH_SCOPES, mcpResourceOf } from "./authorization-server.ts";
import { consentErrorPage, consentPage, pageHeaders } from "./consent-page.ts";
import type { GrantProps } from "./grant-principal.ts";

export async function showConsent(c: Context<AppEnv>, agentId: string): Promise<Response> {
  const oauth = agentOAuthApi(c.env, new URL(c.req.url).origin, agentId);
  try {
    const request = await oauth.parseAuthRequest(c.req.raw);
    const details = await oauth.describeConsent(request);
    const consent = await oauth.beginConsent(request);
    const agent = await stores(c.env).agents.get(agentId);
    const html = consentPage({
      agentId,
      agentName: agent?.character.name ?? null,
      details,
      handle: consent.handle,
      action: new URL(c.req.url).pathname,
    });
    return new Response(html, {
      headers: pageHeaders(consent.headers, redirectOrigin(request.redirectUri)),
    });
  } catch (error) {
    return authorizationFailure(error);
  }
}

export async function decideConsent(c: Context<AppEnv>, agentId: string): Promise<Response> {
  const origin = new URL(c.req.url).origin;
  const oauth = agentOAuthApi(c.env, origin, agentId);
  const form = await formOf(c.req.raw);
  if (!form) return errorPage(400, "Cannot connect", "Send the consent page's form.");
  const handle = String(form.get("handle") ?? "");
  try {
    if (form.get("decision") !== "approve") {
      const denied = await oauth.denyConsent(c.req.raw, handle);
      return new Response(null, { status: 302, headers: denied.headers });
    }
    const operator = await operatorOf(c, String(form.get("token") ?? ""), agentId);
    if (operator instanceof Response) return operator;
    const approved = await oauth.approveConsent(c.req.raw, handle);
    // The handle is the library's, shared by every agent in OAUTH_KV: it must be this agent's.
    if (approved.request.resource !== mcpResourceOf(origin, agentId))
      return errorPage(400, "Wrong agent", "This consent was started for another agent.");
    const scopes = grantedScopes(operator, approved.request.scope);
    if (scopes.length === 0)
      return errorPage(
        403,
        "Nothing to grant",
        "This token has none of the scopes the app asked for. Start again from the app with a token that has them.",
      );
    const props: GrantProps = {
      agentId,
      scopes,
      userPrefix: operator.userPrefix,
      approvedBy: operator.id,
    };
    const client = await oauth.lookupClient(approved.request.clientId);
    const { redirectTo } = await oauth.completeAuthorization({
      request: approved.request,
      // The grant's user is the agent: its grants are listed and revoked by agent (grant-routes.ts).
      userId: agentId,
      // Kept in clear by the library, for listing: who approved, for which tenant, which app.
      metadata: {
        approvedBy: operator.id,
        userPrefix: operator.userPrefix,
        clientName: client?.clientName ?? null,
      },
      scope: scopes,
      props,
    });
    approved.headers.set("Location", redirectTo);
    return new Response(null, { status: 302, headers: approved.headers });
  } catch (error) {
    return authorizationFailure(error);
  }
}

/** The approving API token, or the page that says why it may not approve. */
async function operatorOf(
  c: Context<AppEnv>,
  token: string,
  agentId: string,
): Promise<Principal | Response> {
  if (!token) return errorPage(401, "No token", "Paste an API token to allow, or choose Deny.");
  let operator: Principal;
  try {
    operator = await authenticateApiToken(c, token);
    await admit(c.env, [tokenBucket(operator)], keepAliveOf(c));
  } catch (error) {
    if (error instanceof AppError) return errorPage(error.status, "Not allowed", error.message);
    throw error;
  }
  const decision = decide(operator, "agent.write", { agentId });
  if (!decision.allowed)
    return errorPage(
      403,
      "Not allowed",
      `This token may not manage agent "${agentId}": ${decision.reason}.`,
    );
  return operator;
}

/** What the client asked (all MCP scopes when it named none) that the approving token has. */
function grantedScopes(operator: Principal, asked: string[]): Scope[] {
  const wanted =
    asked.length === 0 ? MCP_OAUTH_SCOPES : MCP_OAUTH_SCOPES.filter((s) => asked.includes(s));
  return wanted.filter((scope) => hasScope(operator, scope));
}

/** The posted form, or null for a body that is not one (read from a copy: the library reads cookies). */
async function formOf(request: Request): Promise<FormData | null> {
  try {
    return await request.clone().formData();
  } catch {
    return null;
  }
}

function redirectOrigin(redirectUri: string): string | undefined {
  const origin = new URL(redirectUri).origin;
  return /^https?:\/\//.test(origin) ? origin : undefined;
}

/** The library's guidance: redirect only once client and redirect URI are validated. */
function authorizationFailure(error: unknown): Response {
  if (error instanceof AuthorizationError) {
    if (error.redirectTo) return Response.redirect(error.redirectTo, 302);
    return errorPage(400, "Cannot connect", error.description);
  }
  throw error;
}

function errorPage(status: number, title: string, message: string): Response {
  return new Response(consentErrorPage(title, message), {
    status,
    headers: pageHeaders(undefined),
  });
}
