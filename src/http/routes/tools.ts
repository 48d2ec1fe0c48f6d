// An agent's MCP servers and every tool it can call. Adding a server checks its URL (https and
// public, see net/url-safety.ts) and that a bearer secret may go to it (mcp-servers.json's
// secretOrigins), stores it, and answers with its state: ready with its tools, down with the
// reason, or `authenticating` with the consent link for OAuth servers. A consent link is shown
// only to a token that may change the agent's tools: whoever opens it connects the agent.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { describeServers } from "../../mcp/overview.ts";
import { mcpPlatform } from "../../mcp/platform.ts";
import { stores } from "../../db/stores/index.ts";
import {
  assertSecretAllowed,
  effectiveServers,
  findServer,
  McpServerConfig,
  SERVER_NAME,
  SERVER_NAME_RULE,
} from "../../mcp-registry.ts";
import { assertSafeServerUrl } from "../../net/url-safety.ts";
import { BUILTIN_TOOL_DEFINITIONS } from "../../runtime/turn/builtin-tools.ts";
import { pluginTools } from "../../plugins/room-plugins.ts";
import { ConflictError, NotFoundError } from "../../runtime/util/errors.ts";
import type { AppEnv } from "../app-env.ts";
import { guard, hasScope } from "../auth.ts";
import { AgentIdParam, errorContent, jsonContent } from "../schemas.ts";

const ServerName = z.string().regex(SERVER_NAME, SERVER_NAME_RULE);

const AddServer = McpServerConfig.extend({ name: ServerName })
  .partial({ url: true })
  .openapi("AddMcpServer", {
    description:
      "A new server for this agent (`name` + `url`, ...), or just the `name` of a server it already uses, to (re)start its authorization.",
    example: { name: "docs", url: "https://mcp.example.com/mcp", auth: { type: "oauth" } },
  });

const ServerView = z
  .object({
    name: z.string(),
    origin: z.enum(["registry", "agent"]),
    url: z.string(),
    transport: z.enum(["streamable-http", "sse"]),
    auth: z.enum(["none", "bearer", "oauth"]),
    state: z.enum(["ready", "authenticating", "down", "failed", "unknown"]),
    tools: z.array(z.object({ name: z.string(), description: z.string() })),
    error: z.string().optional(),
    authUrl: z.string().optional().openapi({
      description:
        "Open it to authorize the agent (OAuth servers waiting for consent); only for tokens with `tools:write`",
    }),
  })
  .openapi("McpServer");

export function toolRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/tools",
      summary: "The agent's MCP servers (probed now) and every tool it can call",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam }) },
      responses: {
        200: jsonContent(
          z.object({
            servers: z.array(ServerView),
            tools: z.array(
              z.object({ name: z.string(), description: z.string(), source: z.string() }),
            ),
          }),
          "Servers with their state, and the tools of the built-ins, the plugins and the ready servers",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const record = await stores(c.env).agents.get(agentId);
      if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
      const platform = mcpPlatform(c.env, new URL(c.req.url).origin);
      const entries = effectiveServers(
        record.character.settings.mcpServers,
        await platform.servers.list(agentId),
      );
      const described = await describeServers(platform, agentId, entries, {
        probe: true,
        startAuthorization: false,
        now: Date.now,
      });
      // agents:read may see that consent is awaited, not the link itself (tools:write may).
      const mayConsent = hasScope(c.get("principal"), "tools:write");
      const servers = described.map(({ authUrl, ...server }) =>
        mayConsent && authUrl ? { ...server, authUrl } : server,
      );
      const tools = [
        ...BUILTIN_TOOL_DEFINITIONS.map((tool) => ({
          name: tool.name,
          description: tool.description,
          source: "builtin",
        })),
        ...(await pluginTools(c.env, agentId, record.character)).map(
          ({ name, description, source }) => ({ name, description, source }),
        ),
        ...servers.flatMap((server) =>
          server.tools.map((tool) => ({ ...tool, source: `mcp:${server.name}` })),
        ),
      ];
      return c.json({ servers, tools }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/tools",
      summary: "Add an MCP server to the agent (or restart a server's authorization)",
      ...guard("tools:write"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        body: { required: true, content: { "application/json": { schema: AddServer } } },
      },
      responses: {
        201: jsonContent(
          ServerView,
          "Added; `state` says whether it works, `authUrl` where to consent",
        ),
        200: jsonContent(
          ServerView,
          "An existing server, with its state (and a fresh consent link when it needs one)",
        ),
        400: errorContent(
          "Invalid settings, a URL that is not https and public, or a bearer secret not declared for this origin",
        ),
        404: errorContent("No such agent or server"),
        409: errorContent("The agent already has a server with this name"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const { name, url, ...rest } = c.req.valid("json");
      const record = await stores(c.env).agents.get(agentId);
      if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
      const platform = mcpPlatform(c.env, new URL(c.req.url).origin);
      const now = Date.now();
      let status: 200 | 201 = 200;
      if (url !== undefined) {
        const config = McpServerConfig.parse({ ...rest, url });
        // Refused before anything is stored.
        assertSecretAllowed(config);
        await assertSafeServerUrl(config.url, platform.urlPolicy);
        await platform.servers.add(agentId, name, config, now);
        // Rooms cache the agent's servers by version: they pick the new one up on their next turn.
        await stores(c.env).agents.touch(agentId, now);
        status = 201;
      }
      const own = await platform.servers.list(agentId);
      const entry = findServer(name, own);
      if (
        url === undefined &&
        entry.origin === "registry" &&
        !record.character.settings.mcpServers.includes(name) &&
        // A server of the catalog an approved request_tool added to the agent.
        !own.some((server) => server.name === name)
      ) {
        throw new NotFoundError(
          `agent "${agentId}" does not use the MCP server "${name}"; name it in settings.mcpServers`,
        );
      }
      const [view] = await describeServers(platform, agentId, [entry], {
        probe: true,
        startAuthorization: true,
        now: Date.now,
      });
      return c.json(view!, status);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/tools/{name}",
      summary: "Remove an MCP server from the agent, with its stored authorization",
      ...guard("tools:write"),
      request: {
        params: z.object({
          agentId: AgentIdParam,
          name: ServerName.openapi({ param: { name: "name", in: "path" } }),
        }),
      },
      responses: {
        204: { description: "Removed" },
        404: errorContent("No such agent or server"),
        409: errorContent("The server comes from mcp-servers.json and the character names it"),
      },
    }),
    async (c) => {
      const { agentId, name } = c.req.valid("param");
      const record = await stores(c.env).agents.get(agentId);
      if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
      const platform = mcpPlatform(c.env);
      if (!(await platform.servers.remove(agentId, name))) {
        if (record.character.settings.mcpServers.includes(name)) {
          throw new ConflictError(
            `the character names "${name}" in settings.mcpServers; remove it there (PUT /agents/${agentId})`,
          );
        }
        throw new NotFoundError(`agent "${agentId}" has no MCP server named "${name}"`);
      }
      await platform.credentials?.remove(agentId, name);
      await stores(c.env).agents.touch(agentId, Date.now());
      return c.body(null, 204);
    },
  );
  return app;
}
