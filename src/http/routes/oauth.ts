// GET /oauth/callback: where an MCP server's authorization server sends the person back after
// consent. The `state` finds the pending authorization (only its hash is stored, for 15 minutes);
// the code is exchanged with the PKCE verifier and the resource indicator, the tokens are sealed
// in D1 for every room of the agent, and the server is connected once to confirm. A browser gets
// a small page; other clients get JSON. Nothing secret is ever shown, nor what the authorization
// server answered. `iss` is checked (RFC 9207) against the server the flow was started with.
// GET /oauth/client-metadata.json: the worker's Client ID Metadata Document
// (src/mcp/client-metadata.ts), public: its URL is the client_id.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { completeAuthorization } from "../../mcp/consent.ts";
import { describeServers } from "../../mcp/overview.ts";
import {
  CLIENT_METADATA_PATH,
  clientMetadataDocument,
  OAUTH_CALLBACK_PATH,
} from "../../mcp/client-metadata.ts";
import { mcpPlatform } from "../../mcp/platform.ts";
import { loadConfig } from "../../config.ts";
import { AppError, NotFoundError } from "../../runtime/util/errors.ts";
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
        const platform = mcpPlatform(c.env, new URL(c.req.url).origin);
        const { agentId, entry } = await completeAuthorization(platform, query.data, Date.now);
        const [view] = await describeServers(platform, agentId, [entry], {
          probe: true,
          startAuthorization: false,
          now: Date.now,
        });
        const tools = view?.tools.length ?? 0;
        const summary =
          view?.state === "ready"
            ? `The agent ${agentId} can now use ${entry.name} (${tools} tool${tools === 1 ? "" : "s"}).`
            : `Authorized, but ${entry.name} could not be reached just now (${view?.error ?? "unknown"}); the agent will retry.`;
        return respond(
          c,
          200,
          { agentId, server: entry.name, state: view?.state ?? "unknown", tools },
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
  app.openapi(
    createRoute({
      method: "get",
      path: CLIENT_METADATA_PATH,
      summary:
        "The worker's OAuth Client ID Metadata Document, its client_id for MCP servers' authorization servers",
      responses: {
        200: {
          description: "The document (its URL is the client_id)",
          content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
        },
        404: errorContent("PUBLIC_BASE_URL is not an https URL, so there is no stable client_id"),
      },
    }),
    (c) => {
      const base = loadConfig(c.env).publicBaseUrl;
      const document = base ? clientMetadataDocument(base) : null;
      if (!document)
        throw new NotFoundError(
          "no client metadata document: PUBLIC_BASE_URL is not set to an https URL",
        );
      // Authorization servers fetch it when they first see the client_id and may cache it.
      c.header("Cache-Control", "public, max-age=3600");
      return c.json(document, 200);
    },
  );
  return app;
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
