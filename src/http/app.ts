// Builds the worker's Hono app: body limits, the routes of each surface (each declaring and
// enforcing its bearer-token scope, see auth.ts), the generated OpenAPI document and a browsable
// reference (Swagger UI, served from the static assets). Every error leaves through handleError,
// so clients always get `{"error":{code,message}}`.
import { traceRequests } from "../telemetry/request-spans.ts";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { NotFoundError, PayloadTooLargeError } from "../runtime/util/errors.ts";
import type { AppEnv } from "./app-env.ts";
import { handleError } from "./errors.ts";
import { ensureSchema } from "../db/schema-ready.ts";
import { agentRoutes } from "./routes/agents.ts";
import { agentMoveRoutes } from "./routes/agent-moves.ts";
import { discordRoutes, MAX_INTERACTION_BODY_BYTES } from "./routes/discord/discord.ts";
import { chatClientConfigRoutes } from "./routes/chat-clients-config.ts";
import { slackEventRoutes } from "./routes/slack/slack.ts";
import { slackCommandRoutes } from "./routes/slack/slack-commands.ts";
import { slackInteractionRoutes } from "./routes/slack/slack-interactions.ts";
import { telegramRoutes } from "./routes/telegram/telegram.ts";
import { healthRoutes } from "./routes/health.ts";
import { knowledgeRoutes } from "./routes/knowledge.ts";
import { memoryRoutes } from "./routes/memories.ts";
import { messageRoutes } from "./routes/messages.ts";
import { tokenRoutes } from "./routes/tokens.ts";
import { oauthRoutes } from "./routes/oauth.ts";
import { mediaRoutes } from "./routes/media.ts";
import { MAX_UPLOAD_BODY_BYTES } from "../media/validate.ts";
import { postRoutes } from "./routes/instagram/posts.ts";
import { toolRoutes } from "./routes/tools.ts";
import { taskRoutes } from "./routes/tasks/tasks.ts";
import { taskAnswerRoutes } from "./routes/tasks/answer-routes.ts";
import { scheduleRoutes } from "./routes/tasks/schedules.ts";
import { usageRoutes } from "./routes/usage.ts";
import { storageRoutes } from "./routes/storage.ts";
import { turnRoutes } from "./routes/turns.ts";
import { proposalRoutes } from "./routes/proposals.ts";
import { openAIRoutes } from "./routes/openai/openai-routes.ts";
import { skillRoutes } from "./routes/skills.ts";
import { mcpServerRoutes } from "./routes/mcp-server/mcp-route.ts";
import { mcpOAuthRoutes } from "./routes/mcp-server/oauth/oauth-routes.ts";
import { mcpGrantRoutes } from "./routes/mcp-server/oauth/grant-routes.ts";
import { docsHeaders, docsPage } from "./docs-page.ts";
import { PLUGINS } from "../plugins/index.ts";
import { guard } from "./auth.ts";
import { errorContent, jsonContent } from "./schemas.ts";
import { validationError } from "./validation.ts";
import {
  MAX_AGENT_BODY_BYTES,
  MAX_MEMORY_BODY_BYTES,
  MAX_MESSAGE_BODY_BYTES,
} from "./body-limits.ts";

export function createApp(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.target, result.error.issues);
    },
  });
  app.onError(handleError);
  app.notFound((c) =>
    handleError(new NotFoundError(`no route for ${c.req.method} ${c.req.path}`), c),
  );
  // With an OTLP endpoint configured, each request is a span, and the current context (src/telemetry/).
  app.use("*", traceRequests());
  // The first request an isolate serves after a deploy waits for D1 to have this code's
  // migrations (applied once, by the SchemaGate); later requests pass straight through.
  app.use("*", async (c, next) => {
    await ensureSchema(c.env);
    await next();
  });

  const limit = (maxSize: number) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw new PayloadTooLargeError(`request body is larger than ${maxSize} bytes`);
      },
    });
  app.use("/agents/:agentId/messages", limit(MAX_MESSAGE_BODY_BYTES));
  app.use("/agents", limit(MAX_AGENT_BODY_BYTES));
  // Uploads (up to ten files) get their own, larger ceiling; every other /agents route the small one.
  // Hono's bodyLimit would buffer a body sent without Content-Length, so an upload is only held to
  // its declared length here; the streaming multipart reader counts the bytes that really arrive.
  const agentLimit = limit(MAX_AGENT_BODY_BYTES);
  const uploadLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
    if (Number(c.req.header("content-length") ?? 0) > MAX_UPLOAD_BODY_BYTES)
      throw new PayloadTooLargeError(`request body is larger than ${MAX_UPLOAD_BODY_BYTES} bytes`);
    await next();
  };
  app.use("/agents/*", (c, next) =>
    /^\/agents\/[^/]+\/media$/.test(c.req.path) ? uploadLimit(c, next) : agentLimit(c, next),
  );
  app.use("/memories", limit(MAX_MEMORY_BODY_BYTES));
  app.use("/memories/*", limit(MAX_MEMORY_BODY_BYTES));
  app.use("/discord/interactions", limit(MAX_INTERACTION_BODY_BYTES));
  app.use("/clients/*", limit(MAX_MESSAGE_BODY_BYTES));
  app.use("/auth/*", limit(MAX_MESSAGE_BODY_BYTES));
  app.use("/plugins/*", limit(MAX_MESSAGE_BODY_BYTES));

  app.route("/", healthRoutes());
  app.route("/", agentRoutes());
  app.route("/", agentMoveRoutes());
  app.route("/", messageRoutes());
  app.route("/", knowledgeRoutes());
  app.route("/", memoryRoutes());
  app.route("/", telegramRoutes());
  app.route("/", slackEventRoutes());
  app.route("/", slackInteractionRoutes());
  app.route("/", slackCommandRoutes());
  // Before Discord's: its `/clients/{clientId}/config` would take `/clients/telegram/config` and
  // `/clients/slack/config`.
  app.route("/", chatClientConfigRoutes());
  app.route("/", discordRoutes());
  app.route("/", tokenRoutes());
  app.route("/", toolRoutes());
  app.route("/", oauthRoutes());
  app.route("/", mediaRoutes());
  app.route("/", postRoutes());
  app.route("/", taskRoutes());
  app.route("/", taskAnswerRoutes());
  app.route("/", scheduleRoutes());
  app.route("/", skillRoutes());
  app.route("/", proposalRoutes());
  app.route("/", usageRoutes());
  app.route("/", storageRoutes());
  app.route("/", turnRoutes());
  app.route("/", openAIRoutes());
  // Each agent as an MCP server (Streamable HTTP; not in /openapi.json: its operations are JSON-RPC).
  app.route("/", mcpServerRoutes());
  // Its OAuth for MCP hosts: public discovery, registration, token and consent routes, and the
  // operator's listing and revocation of grants.
  app.route("/", mcpOAuthRoutes());
  app.route("/", mcpGrantRoutes());
  // Each plugin's routes under /plugins/<name>/, declaring their scopes like every other route.
  for (const plugin of PLUGINS) {
    if (!plugin.routes) continue;
    const routes = new OpenAPIHono<AppEnv>();
    plugin.routes(routes, { guard, errorContent, jsonContent });
    app.route(`/plugins/${plugin.name}`, routes);
  }

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description:
      "ADMIN_TOKEN, or a token minted with POST /auth/tokens. Each operation lists the one scope it needs; `admin` implies every scope.",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "edge-agents",
      version: "0.1.0",
      description: "An ElizaOS-style agent runtime on Cloudflare Workers, Durable Objects and D1.",
    },
  });
  // Swagger UI from this worker's own assets, under a CSP that no page may frame (docs-page.ts).
  app.use("/docs", docsHeaders());
  app.get("/docs", docsPage("/openapi.json"));
  return app;
}
