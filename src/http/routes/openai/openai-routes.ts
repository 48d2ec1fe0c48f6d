// The OpenAI-compatible surface (/v1/models, /v1/chat/completions), so the OpenAI SDKs and the
// tools built on them (Open WebUI, LibreChat, editors) use an agent with no code of ours. Its own
// app, for its own error shape (openai-errors.ts) on everything under /v1/, validation and the
// body limit included; the tokens, scopes and the principal check are the house's.
import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { NotFoundError, PayloadTooLargeError } from "../../../runtime/util/errors.ts";
import type { AppEnv } from "../../app-env.ts";
import { validationError } from "../../validation.ts";
import {
  MAX_CHAT_COMPLETION_BODY_BYTES,
  registerChatCompletionRoutes,
} from "./chat-completions.ts";
import { registerModelRoutes } from "./models.ts";
import { handleOpenAIError } from "./openai-errors.ts";

export function openAIRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.target, result.error.issues);
    },
  });
  app.onError(handleOpenAIError);
  app.use(
    "/v1/*",
    bodyLimit({
      maxSize: MAX_CHAT_COMPLETION_BODY_BYTES,
      onError: () => {
        throw new PayloadTooLargeError(
          `request body is larger than ${MAX_CHAT_COMPLETION_BODY_BYTES} bytes`,
        );
      },
    }),
  );
  registerModelRoutes(app);
  registerChatCompletionRoutes(app);
  // Anything else under /v1/ is not served, said in the SDKs' shape.
  app.all("/v1/*", (c) => {
    throw new NotFoundError(`no route for ${c.req.method} ${c.req.path}`);
  });
  return app;
}
