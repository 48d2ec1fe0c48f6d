// `GET`/`POST /clients/telegram/config`: the agent that answers in the bot's chats and the chats it
// may answer in, with the same scope (admin) and validation as Discord's client config. Mounted
// before Discord's `/clients/{clientId}/config`, whose path would otherwise take this one.
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env.ts";
import { guard } from "../../auth.ts";
import { stores } from "../../../db/stores/index.ts";
import { TelegramConfig } from "../../../db/stores/telegram-settings-store.ts";
import { NotFoundError } from "../../../runtime/util/errors.ts";
import { errorContent } from "../../schemas.ts";

export function telegramConfigRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: "get",
      path: "/clients/telegram/config",
      summary: "Telegram's settings: the default agent and the allowed chats",
      ...guard("admin"),
      responses: {
        200: {
          description: "The settings",
          content: { "application/json": { schema: TelegramConfig } },
        },
      },
    }),
    async (c) => c.json(await stores(c.env).telegram.readConfig(), 200),
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/clients/telegram/config",
      summary: "Set Telegram's settings: the default agent and the allowed chats",
      ...guard("admin"),
      request: {
        body: { required: true, content: { "application/json": { schema: TelegramConfig } } },
      },
      responses: {
        200: {
          description: "The settings as stored",
          content: { "application/json": { schema: TelegramConfig } },
        },
        400: errorContent("Invalid settings"),
        404: errorContent("The default agent does not exist"),
      },
    }),
    async (c) => {
      const config = c.req.valid("json");
      if (
        config.defaultAgentId &&
        (await stores(c.env).agents.version(config.defaultAgentId)) === null
      )
        throw new NotFoundError(`no agent with id "${config.defaultAgentId}"`);
      await stores(c.env).telegram.writeConfig(config, Date.now());
      return c.json(config, 200);
    },
  );
  return app;
}
