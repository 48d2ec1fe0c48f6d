// GET /oauth/callback: where an MCP server's authorization server sends the person back after
// consent. The `state` finds the pending authorization (only its hash is stored, for 15 minutes);
// the code is exchanged with the PKCE verifier and the resource indicator, the tokens are sealed
// in D1 for every room of the agent, and the server is connected once to confirm. A browser gets
// a small page; other clients get JSON. Nothing secret is ever shown, nor what the authorization
// server answered. `iss` is checked (RFC 9207) against the server the flow was started with.
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { sha256Hex } from "../../runtime/util/hashing.ts";
import { AgentOAuthProvider } from "../../mcp/oauth-provider.ts";
import { describeServers } from "../../mcp/overview.ts";
import { mcpPlatform, OAUTH_CALLBACK_PATH } from "../../mcp/platform.ts";
import { findServer } from "../../mcp/registry.ts";
import { describeRemoteError, traceResponses } from "../../mcp/remote-errors.ts";
import type { McpAuthData } from "../../db/stores/mcp-credential-store.ts";
import { assertSafeServerUrl } from "../../net/url-safety.ts";
import { AppError, NotConfiguredError, ValidationError } from "../../runtime/util/errors.ts";
import type { AppEnv } from "../app-env.ts";
import { errorBody } from "../errors.ts";
import { errorContent } from "../schemas.ts";
import { validationError } from "../validation.ts";
import { errorField, log } from "../../log.ts";

const CallbackQuery = z.strictObject({
  state: z.string().min(16).max(512),
  code: z.string().min(1).max(2_048).optional(),
  error: z.string().max(200).optional(),
  error_description: z.string().max(1_000).optional(),
  error_uri: z.string().max(1_000).optional(),
  iss: z.string().max(1_000).optional(),
});

export function oauthRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: "get",
      path: OAUTH_CALLBACK_PATH,
      summary: "OAuth redirect target for MCP servers (checked by its state; no bearer token)",
      // Documented by hand: the route checks its own query, so a browser gets even that error as a page.
      parameters: [
        { name: "state", in: "query", required: true, schema: { type: "string" } },
        { name: "code", in: "query", required: false, schema: { type: "string" } },
        { name: "error", in: "query", required: false, schema: { type: "string" } },
      ],
      responses: {
        200: {
          description: "Authorized and connected (HTML for browsers, JSON otherwise)",
          content: { "text/html": { schema: z.string() } },
        },
        400: errorContent("Unknown or expired state, a refused consent, or a failed code exchange"),
      },
    }),
    async (c) => {
      try {
        const query = CallbackQuery.safeParse(c.req.query());
        if (!query.success) throw validationError("query", query.error.issues);
        const { state, code, error, error_description: description, iss } = query.data;
        const platform = mcpPlatform(c.env, new URL(c.req.url).origin);
        if (!platform.credentials)
          throw new NotConfiguredError("SECRETS_KEY is not set, so no authorization can be stored");
        const row = await platform.credentials.findByStateHash(await sha256Hex(state));
        if (!row || row.stateExpiresAt === null || row.stateExpiresAt <= Date.now()) {
          throw new ValidationError(
            "this authorization link is unknown or has expired (links last 15 minutes); start again from the agent's tools",
          );
        }
        // Before anything else, for an error answer too: a response from another server is not ours to act on.
        assertIssuer(row.data, iss);
        if (error)
          throw new ValidationError(
            `the authorization was not given: ${error}${description ? ` (${description})` : ""}`,
          );
        if (!code) throw new ValidationError("the callback has neither a code nor an error");
        const entry = findServer(row.server, await platform.servers.list(row.agentId));
        if (entry.config.auth.type !== "oauth")
          throw new ValidationError(`the MCP server "${row.server}" no longer uses OAuth`);
        const provider = await AgentOAuthProvider.load(
          platform.credentials,
          row.agentId,
          row.server,
          {
            redirectUrl: platform.redirectUrl,
            scopes: entry.config.auth.scopes ?? [],
            clientName: `edge-agents (${row.agentId})`,
            now: Date.now,
          },
        );
        const url = await assertSafeServerUrl(entry.config.url, platform.urlPolicy);
        const trace = traceResponses(platform.oauthFetch);
        try {
          await auth(provider, { serverUrl: url, authorizationCode: code, fetchFn: trace.fetch });
        } catch (exchangeError) {
          throw new AppError(
            "upstream",
            400,
            `the code could not be exchanged for tokens: ${describeRemoteError(exchangeError, trace)}`,
          );
        }
        const [view] = await describeServers(platform, row.agentId, [entry], {
          probe: true,
          startAuthorization: false,
          now: Date.now,
        });
        const tools = view?.tools.length ?? 0;
        const summary =
          view?.state === "ready"
            ? `The agent ${row.agentId} can now use ${row.server} (${tools} tool${tools === 1 ? "" : "s"}).`
            : `Authorized, but ${row.server} could not be reached just now (${view?.error ?? "unknown"}); the agent will retry.`;
        return respond(
          c,
          200,
          { agentId: row.agentId, server: row.server, state: view?.state ?? "unknown", tools },
          "Connected",
          summary,
        );
      } catch (error) {
        const failure =
          error instanceof AppError
            ? error
            : new AppError(
                "internal",
                500,
                "the authorization could not be completed; see the worker logs",
              );
        if (!(error instanceof AppError))
          log.error("oauth_callback_failed", { error: errorField(error) });
        return respond(
          c,
          failure.status as 400,
          errorBody(failure.code, failure.message),
          "Not connected",
          failure.message,
        );
      }
    },
  );
  return app;
}

/**
 * RFC 9207: `iss`, when sent, must be the issuer of the authorization server the flow was started
 * with (its metadata's `issuer`, compared as a plain string); a server whose metadata says
 * `authorization_response_iss_parameter_supported` must send it. Otherwise no code is exchanged.
 */
function assertIssuer(data: McpAuthData, iss: string | undefined): void {
  const metadata = data.discovery?.authorizationServerMetadata;
  const expected = metadata?.issuer ?? data.discovery?.authorizationServerUrl;
  if (iss === undefined) {
    const promised =
      (metadata as { authorization_response_iss_parameter_supported?: unknown } | undefined)
        ?.authorization_response_iss_parameter_supported === true;
    if (promised)
      throw new ValidationError(
        "the callback came without iss, which this authorization server promises to send (RFC 9207); no code was exchanged",
      );
    return;
  }
  if (!expected || iss !== expected) {
    throw new ValidationError(
      "the callback's iss does not match the authorization server this authorization was started with (RFC 9207); no code was exchanged",
    );
  }
}

function respond(
  c: Context<AppEnv>,
  status: 200 | 400,
  body: object,
  title: string,
  text: string,
): Response {
  c.header("Cache-Control", "no-store");
  c.header("Referrer-Policy", "no-referrer");
  if (!(c.req.header("accept") ?? "").includes("text/html")) return c.json(body, status);
  c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p><p>You can close this tab.</p></body></html>`;
  return c.html(page, status);
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!,
  );
}
