// POST /plugins/web/read: what an agent's read_url would read from a URL (the same guarded fetch
// and markdown), for people choosing whether to give an agent the web plugin. It reaches out to
// the URL on the caller's behalf, so it needs `tools:write`, like adding a tool to an agent.
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/app-env.ts";
import { OUTBOUND_CAPS, outboundFetch } from "../../net/outbound.ts";
import { ValidationError } from "../../runtime/util/errors.ts";
import type { PluginRouteKit } from "../plugin-api.ts";
import { readUrl } from "./read-url.ts";

const ReadBody = z
  .strictObject({
    url: z.string().max(2_000).openapi({ example: "https://example.com/article" }),
    maxChars: z.int().min(500).max(100_000).default(12_000),
  })
  .openapi("WebReadRequest");

const ReadView = z
  .object({
    url: z.string(),
    contentType: z.string(),
    title: z.string().nullable(),
    byline: z.string().nullable(),
    siteName: z.string().nullable(),
    text: z
      .string()
      .openapi({ description: "Markdown for HTML; the text itself for plain text and JSON" }),
    totalChars: z.int(),
    truncated: z.boolean(),
  })
  .openapi("WebPage");

export function webRoutes(
  app: OpenAPIHono<AppEnv>,
  { guard, errorContent, jsonContent }: PluginRouteKit,
): void {
  app.openapi(
    createRoute({
      method: "post",
      path: "/read",
      summary: "Read a web page as an agent's read_url would (clean markdown)",
      ...guard("tools:write"),
      request: { body: { required: true, content: { "application/json": { schema: ReadBody } } } },
      responses: {
        200: jsonContent(ReadView, "The page's text"),
        400: errorContent(
          "Not a URL, or a page read_url refuses (not https, not public, too large, not text)",
        ),
      },
    }),
    async (c) => {
      const { url, maxChars } = c.req.valid("json");
      const read = await readUrl(outboundFetch(c.env, OUTBOUND_CAPS.web), url, maxChars);
      if (!read.ok) throw new ValidationError(`the page cannot be read: ${read.error}`);
      return c.json(read.page, 200);
    },
  );
}
