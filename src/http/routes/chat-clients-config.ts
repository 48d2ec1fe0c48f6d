// `GET`/`POST /clients/telegram/config` and `/clients/slack/config`: the agent that answers in a
// webhook chat client's chats and the chats (Telegram) or channels (Slack) it may answer in, with
// the same scope (admin) and validation as Discord's client config. Mounted before Discord's
// `/clients/{clientId}/config`, whose path would otherwise take these.
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { z } from "zod";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { stores, type Stores } from "../../db/stores/index.ts";
import {
  type ChatClient,
  type ChatClientStore,
  SLACK_CLIENT,
  TELEGRAM_CLIENT,
} from "../../db/stores/chat-client-store.ts";
import { NotFoundError } from "../../runtime/util/errors.ts";
import { errorContent } from "../schemas.ts";

export function chatClientConfigRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  register(app, TELEGRAM_CLIENT, (s) => s.telegram);
  register(app, SLACK_CLIENT, (s) => s.slack);
  return app;
}

function register<T extends { defaultAgentId: string | null }>(
  app: OpenAPIHono<AppEnv>,
  client: ChatClient<T>,
  storeOf: (all: Stores) => ChatClientStore<T>,
): void {
  const path = `/clients/${client.clientId}/config`;
  // The schema is a zod object: typed loosely here so one function serves each client's.
  const schema = client.schema as z.ZodType<T> & Parameters<typeof jsonBody>[0];
  const what = `the default agent and the allowed ${client.allowed}`;
  app.openapi(
    createRoute({
      method: "get",
      path,
      summary: `${client.name}'s settings: ${what}`,
      ...guard("admin"),
      responses: {
        200: { description: "The settings", content: jsonBody(schema) },
      },
    }),
    async (c) => c.json(await storeOf(stores(c.env)).readConfig(), 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path,
      summary: `Set ${client.name}'s settings: ${what}`,
      ...guard("admin"),
      request: { body: { required: true, content: jsonBody(schema) } },
      responses: {
        200: { description: "The settings as stored", content: jsonBody(schema) },
        400: errorContent("Invalid settings"),
        404: errorContent("The default agent does not exist"),
      },
    }),
    async (c) => {
      // Validated against the client's schema by the route (400 names every bad path).
      const config = c.req.valid("json") as T;
      if (
        config.defaultAgentId &&
        (await stores(c.env).agents.version(config.defaultAgentId)) === null
      )
        throw new NotFoundError(`no agent with id "${config.defaultAgentId}"`);
      await storeOf(stores(c.env)).writeConfig(config, Date.now());
      return c.json(config, 200);
    },
  );
}

function jsonBody<S extends z.ZodType>(schema: S) {
  return { "application/json": { schema } };
}
