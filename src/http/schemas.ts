// Schemas shared by several routes: ids in paths and bodies, the error envelope, and the
// OpenAPI security scheme. Defined with @hono/zod-openapi's `z` so they appear in /openapi.json.
import { z } from "@hono/zod-openapi";

export const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Room and user ids: Discord snowflakes, REST callers' own ids, `user:<id>` DM rooms. */
export const EXTERNAL_ID = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

/** A room or user id in a body or query string. */
export const ExternalId = z
  .string()
  .regex(EXTERNAL_ID, "1-128 letters, digits or . _ : @ -, starting with a letter or digit");

export const AgentIdParam = z
  .string()
  .regex(AGENT_ID, "agent ids are 1-64 letters, digits, '-' or '_'")
  .openapi({ param: { name: "agentId", in: "path" }, example: "ada" });

export const RoomIdParam = z
  .string()
  .regex(EXTERNAL_ID, "room ids are 1-128 letters, digits or . _ : @ -")
  .openapi({ param: { name: "roomId", in: "path" }, example: "user:alice" });

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "validation" }),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  })
  .openapi("Error");

export const errorContent = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorResponse } },
});

/** A JSON response of `schema` for a route's OpenAPI definition. */
export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A required JSON request body of `schema` for a route's OpenAPI definition. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true as const,
  content: { "application/json": { schema } },
});

/**
 * The body of a webhook route that is documented, not validated by the route schema: its
 * signature covers the raw bytes, so the route reads and verifies them before parsing.
 */
export const signedBody = (contentType: string, schema: z.ZodType) => ({
  required: true,
  content: { [contentType]: { schema } },
});

/** A JSON object of any fields (a platform's payload, parsed by the route after its signature). */
export const anyJsonObject = (description: string) =>
  z.record(z.string(), z.unknown()).openapi({ description });

/** What a turn spent, as a reply's history and the MCP server's `chat` give it. */
export const TurnUsageCounts = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  modelCalls: z.number(),
});
