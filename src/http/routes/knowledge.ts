// Knowledge documents of an agent: text or markdown, chunked by tokens with overlap, stored as a
// document and its fragments, embedded in batches. Ingesting a document with the same id (or the
// same title) again replaces it; deleting removes it with its fragments and their vectors.
// Knowledge reaches every user of the agent, so a token limited to a user prefix may not change it.
// Both write over a D1 session and answer with its D1-Bookmark (../bookmarks.ts).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { assertMayWriteAgentWide } from "../namespaces.ts";
import {
  deleteDocument,
  DOCUMENT_ID_PATTERN,
  ingestDocument,
  MAX_DOCUMENT_CHARS,
} from "../../db/memory/knowledge.ts";
import { agentDataIn } from "../../db/stores/index.ts";
import { answerBookmarks, sessionsOf } from "../bookmarks.ts";
import { NotFoundError } from "../../runtime/util/errors.ts";
import { loadTokenCounter } from "../../runtime/util/tokens.ts";
import { assertAgentExists } from "../known-agents.ts";
import { AgentIdParam, errorContent } from "../schemas.ts";

const DocumentId = z
  .string()
  .regex(
    DOCUMENT_ID_PATTERN,
    "1-128 letters, digits or . _ : @ -, starting with a letter or digit",
  );

const KnowledgeBody = z
  .strictObject({
    text: z.string().trim().min(1, "must not be empty").max(MAX_DOCUMENT_CHARS),
    title: z.string().trim().min(1).max(200).optional(),
    documentId: DocumentId.optional().openapi({
      description: "Defaults to a slug of the title, else a hash of the text",
    }),
    format: z.enum(["text", "markdown"]).default("text"),
  })
  .openapi("KnowledgeDocument");

const IngestResult = z
  .object({
    documentId: z.string(),
    fragments: z.number().int(),
    embedded: z.number().int(),
    replaced: z.boolean(),
    embeddingError: z.string().optional().openapi({
      description:
        "Why some fragments are not embedded yet (they are still found by text and embedded later)",
    }),
  })
  .openapi("IngestResult");

export function knowledgeRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/knowledge",
      summary: "Ingest a document into the agent's knowledge",
      ...guard("memories:write"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        body: { required: true, content: { "application/json": { schema: KnowledgeBody } } },
      },
      responses: {
        201: { description: "Stored", content: { "application/json": { schema: IngestResult } } },
        400: errorContent("Invalid document"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.valid("json");
      assertMayWriteAgentWide(c.get("principal"), "knowledge");
      await assertAgentExists(c.env, agentId);
      const sessions = sessionsOf(c);
      const { db, pipeline } = await agentDataIn(c.env, agentId, sessions, "write");
      const result = await ingestDocument(db, pipeline, await loadTokenCounter(), {
        agentId,
        ...body,
        source: "api",
        now: Date.now(),
      });
      answerBookmarks(c, sessions);
      return c.json(result, 201);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/knowledge/{documentId}",
      summary: "Delete a document and its fragments",
      ...guard("memories:write"),
      request: {
        params: z.object({
          agentId: AgentIdParam,
          documentId: DocumentId.openapi({ param: { name: "documentId", in: "path" } }),
        }),
      },
      responses: {
        204: { description: "Deleted" },
        404: errorContent("No such agent or document"),
      },
    }),
    async (c) => {
      const { agentId, documentId } = c.req.valid("param");
      assertMayWriteAgentWide(c.get("principal"), "knowledge");
      await assertAgentExists(c.env, agentId);
      const sessions = sessionsOf(c);
      const { db, pipeline } = await agentDataIn(c.env, agentId, sessions, "write");
      const removed = await deleteDocument(db, agentId, documentId);
      if (removed === 0)
        throw new NotFoundError(`agent "${agentId}" has no document "${documentId}"`);
      await pipeline.sweepDeletions().catch(() => undefined);
      answerBookmarks(c, sessions);
      return c.body(null, 204);
    },
  );

  return app;
}
