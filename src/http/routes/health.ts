// Liveness and what backs this deployment: which model backend serves turns (and with which
// models), and that D1 answers. Public (no token): it names backends, never keys or URLs with
// credentials.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { loadConfig, type Env } from "../../config.ts";
import { databaseReachable } from "../stores.ts";

const Health = z
  .object({
    status: z.enum(["ok", "degraded"]),
    model: z.object({
      backend: z.enum(["openai", "workers-ai", "none"]),
      primary: z.string().nullable(),
      fallbacks: z.array(z.string()),
      small: z.string().nullable(),
    }),
    database: z.enum(["ok", "unavailable"]),
  })
  .openapi("Health");

export function healthRoutes(): OpenAPIHono<{ Bindings: Env }> {
  const app = new OpenAPIHono<{ Bindings: Env }>();
  app.openapi(
    createRoute({
      method: "get",
      path: "/health",
      summary: "Liveness and active backends",
      responses: {
        200: { description: "Healthy", content: { "application/json": { schema: Health } } },
        503: { description: "A backend is unavailable", content: { "application/json": { schema: Health } } },
      },
    }),
    async (c) => {
      const config = loadConfig(c.env);
      const database = (await databaseReachable(c.env)) ? ("ok" as const) : ("unavailable" as const);
      const configured = config.model.kind !== "none";
      const body = {
        status: database === "ok" ? ("ok" as const) : ("degraded" as const),
        model: {
          backend: config.model.kind,
          primary: configured ? config.models.primary : null,
          fallbacks: configured ? config.models.fallbacks : [],
          small: configured ? config.models.small : null,
        },
        database,
      };
      return c.json(body, database === "ok" ? 200 : 503);
    },
  );
  return app;
}
