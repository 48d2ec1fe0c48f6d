// The memory API: store memories (embedded inline, in batches), list them with filters and a
// cursor, search them with the same hybrid retrieval the runtime uses, delete by filter (vectors
// go too; deleting a user's memories is the "forget me" path), statistics, and a backfill that
// embeds memories still waiting for a vector. User and room ids in bodies and filters follow the
// namespace rules of ../namespaces.ts. Listing, search and statistics read over a D1 session from
// the caller's D1-Bookmark; storing and deleting answer with one (../bookmarks.ts).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { assertMayActFor, guard } from "../auth.ts";
import { assertMayFilterMemories, assertMayWriteMemory } from "../namespaces.ts";
import { describeEmbedder } from "../../model/embedder.ts";
import { MEMORY_TYPES } from "../../db/schema.ts";
import { agentData, agentDataIn } from "../../db/stores/index.ts";
import { answerBookmarks, sessionsOf } from "../bookmarks.ts";
import {
  deleteMemories,
  insertMemories,
  listMemories,
  memoryStats,
} from "../../db/memory/memory-repo.ts";
import { forgetRoomHistory } from "../../objects/conversation/room-client.ts";
import { ValidationError } from "../../runtime/util/errors.ts";
import type { Memory, MemoryType } from "../../runtime/ports/memory.ts";
import type {
  MemoryRetriever,
  RetrievalQuery,
  SearchTimings,
} from "../../runtime/ports/retrieval.ts";
import type { Env } from "../../env.ts";
import { pathNestedDeeperThan } from "../json-depth.ts";
import { assertAgentExists } from "../known-agents.ts";
import { AGENT_ID, errorContent, ExternalId, jsonBody, jsonContent } from "../schemas.ts";
import { errorField, log } from "../../log.ts";
import { boundedEmbedding } from "../../runtime/retrieval/query-embedding.ts";

export const MAX_MEMORY_TEXT_CHARS = 8_000;
export const MAX_MEMORIES_PER_REQUEST = 500;
const MAX_METADATA_CHARS = 8_192;
/**
 * The text index's triggers read `metadata` with SQLite's JSON functions, which refuse nesting
 * past 1,000 levels: deeper metadata fits in 8 KiB but failed the insert with a D1 error (a 500).
 * Checked before the size, whose JSON.stringify would overflow the stack on deeper nesting still.
 */
const MAX_METADATA_DEPTH = 32;
/** Documents and fragments come from POST /agents/:agentId/knowledge, which chunks and links them. */
const WRITABLE_TYPES = ["message", "fact", "description", "lore", "summary"] as const;

const AgentId = z.string().regex(AGENT_ID, "agent ids are 1-64 letters, digits, '-' or '_'");
const TypeList = z
  .string()
  .transform((value) => value.split(",").map((t) => t.trim()))
  .pipe(z.array(z.enum(MEMORY_TYPES)).min(1))
  .optional()
  .openapi({ description: "One type or a comma-separated list", example: "fact,description" });

const MemoryInput = z
  .strictObject({
    agentId: AgentId,
    type: z.enum(WRITABLE_TYPES),
    text: z.string().trim().min(1, "must not be empty").max(MAX_MEMORY_TEXT_CHARS),
    roomId: ExternalId.optional(),
    userId: ExternalId.optional(),
    userName: z.string().trim().min(1).max(100).optional(),
    role: z.enum(["user", "agent"]).optional(),
    metadata: z
      .record(z.string(), z.unknown())
      .refine((m) => pathNestedDeeperThan(m, MAX_METADATA_DEPTH) === null, {
        message: `must not be nested more than ${MAX_METADATA_DEPTH} levels deep`,
        abort: true,
      })
      .refine(
        (m) => JSON.stringify(m).length <= MAX_METADATA_CHARS,
        `must be at most ${MAX_METADATA_CHARS} characters as JSON`,
      )
      .optional(),
    createdAt: z
      .int()
      .min(0)
      .max(8.64e15)
      .optional()
      .openapi({ description: "Milliseconds since the epoch; now when omitted" }),
    id: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$/, "1-64 letters, digits or . _ : @ -")
      .optional()
      .openapi({
        description:
          "Your id for it, unique within the agent (another agent's memory may have the same id); sending the same id again stores nothing new",
      }),
    shared: z
      .boolean()
      .optional()
      .openapi({ description: "A fact every user may be told (not only its user)" }),
  })
  .superRefine((input, ctx) => {
    if (input.type === "message" && !input.roomId)
      ctx.addIssue({ code: "custom", path: ["roomId"], message: "a message needs a roomId" });
    if ((input.type === "fact" || input.type === "description") && !input.userId) {
      ctx.addIssue({
        code: "custom",
        path: ["userId"],
        message: `a ${input.type} needs the userId it is about`,
      });
    }
  })
  .openapi("MemoryInput");

const MemoryView = z
  .object({
    id: z.string(),
    type: z.enum(MEMORY_TYPES),
    agentId: z.string(),
    roomId: z.string().nullable(),
    userId: z.string().nullable(),
    parentId: z.string().nullable(),
    text: z.string(),
    role: z.enum(["user", "agent"]).optional(),
    userName: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()),
    createdAt: z.number().int(),
    embedded: z.boolean(),
  })
  .openapi("Memory");

const ScoredMemory = MemoryView.extend({
  score: z.number().openapi({ description: "Fused rank score, 0..1" }),
  similarity: z
    .number()
    .nullable()
    .openapi({ description: "Cosine similarity to the query when the vector search found it" }),
  matchedBy: z
    .array(z.enum(["text", "vector", "neighbour"]))
    .openapi({ description: "neighbour: the message before or after a hit in its room" }),
}).openapi("ScoredMemory");

/** At most this many ids in one `id` filter (one D1 statement binds at most 100 values). */
const MAX_FILTER_IDS = 50;

const IdList = z
  .string()
  .transform((value) => [...new Set(value.split(",").map((id) => id.trim()))])
  .pipe(z.array(ExternalId).min(1).max(MAX_FILTER_IDS, `at most ${MAX_FILTER_IDS} ids`))
  .optional()
  .openapi({ description: "One memory id or a comma-separated list", example: "mem-1,mem-2" });

const FilterQuery = z.strictObject({
  agentId: AgentId,
  roomId: ExternalId.optional(),
  userId: ExternalId.optional(),
  type: TypeList,
  id: IdList,
});

function view(memory: Memory & { embedded: boolean }): z.infer<typeof MemoryView> {
  return {
    id: memory.id,
    type: memory.type,
    agentId: memory.agentId,
    roomId: memory.roomId,
    userId: memory.userId,
    parentId: memory.parentId ?? null,
    text: memory.content.text,
    ...(memory.content.role ? { role: memory.content.role } : {}),
    ...(memory.content.userName ? { userName: memory.content.userName } : {}),
    metadata: memory.metadata,
    createdAt: memory.createdAt,
    embedded: memory.embedded,
  };
}

export type ScoredMemoryView = z.infer<typeof ScoredMemory>;
export type MemorySearchQuery = Pick<
  RetrievalQuery,
  "agentId" | "text" | "types" | "roomId" | "userId" | "threshold" | "limit"
>;

/**
 * The search behind POST /memories/similar, and the MCP server's `search_memories`: the runtime's
 * hybrid retrieval, best first. The caller has checked who may read what it filters by.
 */
export async function searchMemories(
  env: Env,
  query: MemorySearchQuery,
  timings?: SearchTimings,
  /** The query's vector as a turn waits for it (a budget); undefined: embedded and waited for. */
  vector?: Promise<Float32Array | null>,
): Promise<ScoredMemoryView[]> {
  return scoredSearch((await agentData(env, query.agentId)).retriever, query, timings, vector);
}

async function scoredSearch(
  retriever: MemoryRetriever,
  query: MemorySearchQuery,
  timings?: SearchTimings,
  vector?: Promise<Float32Array | null>,
): Promise<ScoredMemoryView[]> {
  const hits = await retriever.search(query, vector, timings);
  return hits.map((hit) => ({
    ...view({ ...hit.memory, embedded: hit.embedded }),
    score: round(hit.score),
    similarity: hit.similarity === null ? null : round(hit.similarity),
    matchedBy: hit.matchedBy,
  }));
}

export function memoryRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/memories",
      summary: "Store memories (embedded at once, in batches)",
      ...guard("memories:write"),
      request: {
        body: jsonBody(
          z.strictObject({
            memories: z.array(MemoryInput).min(1).max(MAX_MEMORIES_PER_REQUEST),
          }),
        ),
      },
      responses: {
        201: jsonContent(
          z.object({
            memories: z.array(
              z.object({ id: z.string(), type: z.string(), createdAt: z.number() }),
            ),
            embedded: z.number().int(),
            pending: z.number().int().openapi({
              description: "Stored but not embedded yet (found by text search; embedded later)",
            }),
          }),
          "Stored",
        ),
        400: errorContent("Invalid memories"),
        403: errorContent(
          "A user or room the token may not name (reserved namespace or outside its userPrefix)",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { memories: inputs } = c.req.valid("json");
      const agentId = inputs[0]!.agentId;
      if (inputs.some((input) => input.agentId !== agentId))
        throw new ValidationError("all memories of one request must belong to one agent");
      assertMayActFor(c.get("principal"), agentId);
      for (const input of inputs) assertMayWriteMemory(c.get("principal"), input);
      await assertAgentExists(c.env, agentId);
      const sessions = sessionsOf(c);
      const backends = await agentDataIn(c.env, agentId, sessions, "write");
      const now = Date.now();
      const items: Memory[] = inputs.map((input) => ({
        id: input.id ?? crypto.randomUUID(),
        type: input.type,
        agentId,
        roomId: input.roomId ?? null,
        userId: input.userId ?? null,
        content: {
          text: input.text,
          source: "api",
          ...(input.role
            ? { role: input.role }
            : input.type === "message"
              ? { role: "user" as const }
              : {}),
          ...(input.userName ? { userName: input.userName } : {}),
        },
        metadata: { ...(input.metadata ?? {}), ...(input.shared ? { shared: true } : {}) },
        createdAt: input.createdAt ?? now,
      }));
      await insertMemories(backends.db, items);
      // Rooms cache their recent messages and newest summary (src/objects/conversation/history-cache.ts).
      const rooms = items
        .filter((m) => (m.type === "message" || m.type === "summary") && m.roomId)
        .map((m) => m.roomId!);
      if (rooms.length > 0) await forgetRoomHistory(c.env, agentId, rooms);
      let embedded = 0;
      try {
        embedded = await backends.pipeline.embed(items);
      } catch (error) {
        // Stored either way: text search finds them, and the embedding queue retries.
        log.warn("inline_embedding_failed", { agentId, error: errorField(error) });
      }
      answerBookmarks(c, sessions);
      return c.json(
        {
          memories: items.map((m) => ({ id: m.id, type: m.type, createdAt: m.createdAt })),
          embedded,
          pending: items.length - embedded,
        },
        201,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/memories",
      summary: "List memories, newest first",
      ...guard("memories:read"),
      request: {
        query: FilterQuery.extend({
          limit: z.coerce.number().int().min(1).max(200).default(50),
          cursor: z
            .string()
            .max(200)
            .optional()
            .openapi({ description: "`nextCursor` of the previous page" }),
        }),
      },
      responses: {
        200: jsonContent(
          z.object({ memories: z.array(MemoryView), nextCursor: z.string().nullable() }),
          "A page of memories",
        ),
        400: errorContent("Invalid filter"),
        403: errorContent(
          "A user or room filter the token may not name (a userPrefix token must filter by one of its users)",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId, roomId, userId, type, id, limit, cursor } = c.req.valid("query");
      assertMayActFor(c.get("principal"), agentId);
      assertMayFilterMemories(c.get("principal"), { userId, roomId });
      await assertAgentExists(c.env, agentId);
      const sessions = sessionsOf(c);
      const page = await listMemories(
        (await agentDataIn(c.env, agentId, sessions, "read")).db,
        { agentId, roomId, userId, types: type, ids: id },
        limit,
        cursor,
      );
      answerBookmarks(c, sessions);
      return c.json({ memories: page.memories.map(view), nextCursor: page.nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/memories/similar",
      summary: "Search memories (full text + vectors, fused)",
      ...guard("memories:read"),
      request: {
        body: jsonBody(
          z.strictObject({
            query: z.string().trim().min(1, "must not be empty").max(MAX_MEMORY_TEXT_CHARS),
            agentId: AgentId,
            type: z.union([z.enum(MEMORY_TYPES), z.array(z.enum(MEMORY_TYPES)).min(1)]).optional(),
            roomId: ExternalId.optional(),
            userId: ExternalId.optional(),
            threshold: z.number().min(0).max(1).optional().openapi({
              description:
                "Minimum cosine similarity; memories not embedded yet pass when their text matches, and the neighbouring messages of a hit that passes come with it",
            }),
            limit: z.int().min(1).max(100).default(10),
            embeddingBudgetMs: z.int().min(0).max(10_000).optional().openapi({
              description:
                "Wait at most this long (ms) for the query's embedding, then search by text alone, as a turn does with settings.memory.embeddingBudgetMs; unset: wait for it",
            }),
          }),
        ),
      },
      responses: {
        200: jsonContent(
          z.object({
            memories: z.array(ScoredMemory),
            queryEmbedding: z.enum(["none", "embedded", "late"]).optional().openapi({
              description:
                "With embeddingBudgetMs: whether the query's vector came in time (late: text search alone)",
            }),
          }),
          "Best first",
        ),
        400: errorContent("Invalid query"),
        403: errorContent(
          "A user or room filter the token may not name (a userPrefix token must filter by one of its users)",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      assertMayActFor(c.get("principal"), body.agentId);
      assertMayFilterMemories(c.get("principal"), body);
      await assertAgentExists(c.env, body.agentId);
      const types: MemoryType[] | undefined =
        body.type === undefined ? undefined : Array.isArray(body.type) ? body.type : [body.type];
      const timings: SearchTimings = {};
      const started = performance.now();
      const sessions = sessionsOf(c);
      const { retriever } = await agentDataIn(c.env, body.agentId, sessions, "read");
      const bounded =
        body.embeddingBudgetMs === undefined
          ? null
          : boundedEmbedding(() => retriever.embedQuery(body.query), body.embeddingBudgetMs);
      const memories = await scoredSearch(
        retriever,
        {
          agentId: body.agentId,
          text: body.query,
          types,
          roomId: body.roomId,
          userId: body.userId,
          threshold: body.threshold,
          limit: body.limit,
        },
        timings,
        bounded?.vector().then((vector) => {
          timings.embed = performance.now() - started;
          return vector;
        }),
      );
      // Where a search's time goes (the memory benchmark reads it): legs overlap, total is the whole.
      const legs = Object.entries(timings).map(([leg, ms]) => `${leg};dur=${ms.toFixed(1)}`);
      c.header(
        "Server-Timing",
        [...legs, `search;dur=${(performance.now() - started).toFixed(1)}`].join(", "),
      );
      answerBookmarks(c, sessions);
      return c.json(bounded ? { memories, queryEmbedding: bounded.outcome() } : { memories }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/memories",
      summary: "Delete memories by filter (their vectors too)",
      description:
        '`agentId` + `userId` deletes everything the agent remembers about that person: the "forget me" path. `id` deletes single memories (a wrong fact). Deleting a document deletes its fragments.',
      ...guard("memories:write"),
      request: { query: FilterQuery },
      responses: {
        200: jsonContent(z.object({ deleted: z.number().int() }), "How many were deleted"),
        400: errorContent("Invalid filter"),
        403: errorContent(
          "A user or room filter the token may not name (a userPrefix token must filter by one of its users)",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId, roomId, userId, type, id } = c.req.valid("query");
      assertMayActFor(c.get("principal"), agentId);
      assertMayFilterMemories(c.get("principal"), { userId, roomId }, "memory.write");
      await assertAgentExists(c.env, agentId);
      const sessions = sessionsOf(c);
      const backends = await agentDataIn(c.env, agentId, sessions, "write");
      const result = await deleteMemories(backends.db, {
        agentId,
        roomId,
        userId,
        types: type,
        ids: id,
      });
      if (result.rooms.length > 0) await forgetRoomHistory(c.env, agentId, result.rooms);
      // Vectorize removals are best effort here; the cron sweep retries what is left.
      await backends.pipeline.sweepDeletions().catch((error: unknown) => {
        log.warn("vector_sweep_failed", { error: errorField(error) });
      });
      answerBookmarks(c, sessions);
      return c.json({ deleted: result.deleted }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/memories/stats",
      summary: "Counts by type, embedding backlog and backends",
      ...guard("memories:read"),
      request: { query: z.strictObject({ agentId: AgentId }) },
      responses: {
        200: jsonContent(
          z.object({
            agentId: z.string(),
            total: z.number().int(),
            byType: z.record(z.string(), z.number().int()),
            pendingEmbedding: z.number().int(),
            embedder: z.object({
              backend: z.string(),
              id: z.string(),
              dimensions: z.number().int(),
            }),
            vectors: z.object({
              backend: z.enum(["local", "vectorize"]),
              dimensions: z.number().int().nullable(),
            }),
          }),
          "Statistics",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("query");
      assertMayActFor(c.get("principal"), agentId);
      await assertAgentExists(c.env, agentId);
      const sessions = sessionsOf(c);
      const backends = await agentDataIn(c.env, agentId, sessions, "read");
      const [stats, dimensions] = await Promise.all([
        memoryStats(backends.db, agentId),
        backends.index.dimensions(),
      ]);
      await backends.embedder.ready?.();
      answerBookmarks(c, sessions);
      return c.json(
        {
          agentId,
          ...stats,
          embedder: describeEmbedder(backends.embedder),
          vectors: { backend: backends.index.kind, dimensions },
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/memories/embed",
      summary:
        "Embed memories still waiting for a vector (a backfill step; call until pending is false)",
      ...guard("memories:write"),
      request: {
        body: {
          required: true,
          content: { "application/json": { schema: z.strictObject({ agentId: AgentId }) } },
        },
      },
      responses: {
        200: jsonContent(
          z.object({ embedded: z.number().int(), pending: z.boolean() }),
          "Progress",
        ),
        404: errorContent("No such agent"),
        502: errorContent("The embedding service failed"),
        503: errorContent("The embedder does not fit the vector index"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("json");
      assertMayActFor(c.get("principal"), agentId);
      await assertAgentExists(c.env, agentId);
      const result = await (await agentData(c.env, agentId)).pipeline.embedPending({
        agentId,
        maxBatches: 5,
      });
      return c.json(result, 200);
    },
  );

  return app;
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
