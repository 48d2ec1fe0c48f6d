// Talking to an agent over REST, and reading a room's history. A turn is handed to the room's
// Durable Object with one RPC; the worker never runs it inline. `Idempotency-Key` makes a retried
// POST return the first answer (the room dedupes, even for concurrent repeats). Who the caller may
// speak as and where is checked in ../namespaces.ts; the memories a turn used (a person's facts)
// are shown only to a token that may read memories, and in the history (../history-body.ts) only
// those of users and rooms it may name.
import { admitTurn, apiTurnInput } from "../api-turn.ts";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { guard, guardTurn, hasScope } from "../auth.ts";
import {
  assertMayNameRoom,
  assertMayNameUser,
  defaultRoomOf,
  mayBeShownMemory,
} from "../namespaces.ts";
import { stableStringify } from "../../runtime/util/stable-json.ts";
import { readHistory } from "../../objects/conversation/room-client.ts";
import { clientTurnStream, turnBody } from "../turn-body.ts";
import { historyBody } from "../history-body.ts";
import { writeTurn } from "../turn-writer.ts";
import { memoriesByIds } from "../../db/memory/memory-repo.ts";
import { agentData } from "../../db/stores/index.ts";
import { AgentIdParam, errorContent, ExternalId, RoomIdParam } from "../schemas.ts";
import { assertAgentExists } from "../known-agents.ts";
import { sha256Hex } from "../../runtime/util/hashing.ts";

export const MAX_MESSAGE_CHARS = 8_000;
export const MAX_ATTACHMENTS = 10;

const MessageBody = z
  .strictObject({
    roomId: ExternalId.optional().openapi({
      description: "Defaults to `user:<userId>`, a private room per user",
    }),
    userId: ExternalId.openapi({ example: "alice" }),
    userName: z.string().trim().min(1).max(100).optional(),
    text: z.string().trim().min(1, "must not be empty").max(MAX_MESSAGE_CHARS),
    attachments: z
      .array(
        z.strictObject({
          url: z.url({ protocol: /^https?$/ }),
          contentType: z.string().max(100).optional(),
          title: z.string().max(200).optional(),
        }),
      )
      .max(MAX_ATTACHMENTS)
      .optional(),
  })
  .openapi("MessageRequest");

const ToolCallOut = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  ok: z.boolean(),
  output: z.string(),
  cached: z.boolean(),
  durationMs: z.number(),
  model: z.string(),
});

/** A memory a turn's prompt held, as the stream's `memories` event and the answer's field give it. */
const UsedMemoryView = z
  .object({
    id: z.string(),
    type: z.string(),
    text: z.string(),
    score: z.number().nullable(),
  })
  .openapi("UsedMemory");

const TurnUsage = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  cachedPromptTokens: z.number().optional().openapi({
    description:
      "Of promptTokens, those the provider read from its prompt cache; absent when it did not say",
  }),
  modelCalls: z.number(),
});

const TurnResponse = z
  .object({
    turnId: z.string(),
    roomId: z.string(),
    reply: z.object({ text: z.string() }).nullable(),
    actions: z.array(z.string()),
    toolCalls: z.array(ToolCallOut),
    usage: TurnUsage,
    model: z.string().nullable(),
    stopReason: z.string(),
    memories: z.array(UsedMemoryView).optional().openapi({
      description:
        "What the prompt held from long-term memory: the person's facts (score null), knowledge and older messages (fused score). Only for a token with `memories:read` (or admin)",
    }),
  })
  .openapi("TurnResponse");

const HistoryTurn = z
  .object({
    turnId: z.string(),
    model: z.string().nullable().optional(),
    usage: TurnUsage.optional(),
    stopReason: z.string().optional(),
    memories: z.array(UsedMemoryView).optional().openapi({
      description:
        "What the prompt held from long-term memory, as the turn's `memories` event said, with each memory's text as it is now: one deleted since, or of a user or room this token may not name, is left out. Absent for replies stored before it was kept",
    }),
    error: z
      .object({ code: z.string(), message: z.string() })
      .optional()
      .openapi({ description: "The turn failed: why, as the stream's `error` event said" }),
  })
  .openapi("HistoryTurn", {
    description:
      "The turn behind an agent's entry: model, usage and stop reason of a reply, as the turn's `done` event gave them; or the error of a turn that failed (kept 24 hours)",
  });

const HistoryMessage = z
  .object({
    id: z.string(),
    role: z.enum(["user", "agent"]),
    userId: z.string().nullable(),
    userName: z.string().nullable(),
    text: z.string().openapi({ description: "Empty for a failed turn's entry" }),
    actions: z.array(z.string()).optional(),
    createdAt: z.number().int(),
    turn: HistoryTurn.optional(),
  })
  .openapi("HistoryMessage");

const IdempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, "1-255 visible ASCII characters")
  .optional()
  .openapi({
    param: { name: "idempotency-key", in: "header" },
    description: "Retries with the same key return the same turn",
  });

/** Whether the client asked for server-sent events (a media range in Accept with q > 0). */
export function wantsEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(",").some((range) => {
    const [type, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    if (type !== "text/event-stream") return false;
    const q = params.find((param) => param.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

export function messageRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/messages",
      summary: "Send a message and get the agent's reply",
      ...guardTurn("messages:write"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        headers: z.object({ "idempotency-key": IdempotencyKey }),
        body: { required: true, content: { "application/json": { schema: MessageBody } } },
      },
      responses: {
        200: {
          description:
            "The turn's outcome; with `Accept: text/event-stream`, a stream of server-sent events ending in the same outcome (see docs/streaming.md)",
          content: {
            "application/json": { schema: TurnResponse },
            "text/event-stream": {
              schema: z.string().openapi({
                description:
                  "events turn, memories (only with `memories:read`), delta, tool_call, tool_result, then done or error",
              }),
            },
          },
        },
        400: errorContent("Invalid request"),
        403: errorContent(
          "The token may not speak as this user or in this room (reserved namespace or outside its userPrefix)",
        ),
        404: errorContent("No such agent"),
        409: errorContent("The Idempotency-Key was used for a different request"),
        502: errorContent("The model API failed"),
        503: errorContent("No model is configured (the message is still stored)"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.valid("json");
      const idempotencyKey = c.req.valid("header")["idempotency-key"];
      const principal = c.get("principal");
      assertMayNameUser(principal, body.userId);
      if (body.roomId !== undefined) assertMayNameRoom(principal, body.roomId);
      const showMemories = hasScope(principal, "memories:read");
      await assertAgentExists(c.env, agentId);
      // The token's bucket and the person's, in one admission (the guard left the token's here).
      await admitTurn(c, agentId, body.userId);
      const roomId = body.roomId ?? defaultRoomOf(body.userId);
      const input = apiTurnInput({
        agentId,
        roomId,
        userId: body.userId,
        userName: body.userName,
        text: body.text,
        attachments: body.attachments,
        source: "rest",
        principal,
      });
      const fingerprint = idempotencyKey
        ? await sha256Hex(stableStringify({ roomId, ...body }))
        : undefined;
      return writeTurn(c, {
        request: { input, idempotencyKey, fingerprint, showMemories },
        stream: wantsEventStream(c.req.header("accept")),
        format: {
          body: (outcome) => turnBody(outcome, roomId, showMemories),
          stream: (room) => clientTurnStream(room, roomId, showMemories),
        },
        afterRestart: idempotencyKey
          ? "retry with the same Idempotency-Key to get the reply"
          : "the turn will still complete (see the room's history)",
      });
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/rooms/{roomId}/messages",
      summary: "A room's conversation, newest first",
      ...guard("memories:read"),
      request: {
        params: z.object({ agentId: AgentIdParam, roomId: RoomIdParam }),
        query: z.strictObject({
          limit: z.coerce.number().int().min(1).max(200).default(50),
          before: z.coerce
            .number()
            .int()
            .positive()
            .optional()
            .openapi({ description: "Cursor: `nextBefore` of the previous page" }),
        }),
      },
      responses: {
        200: {
          description:
            "Messages; an agent's reply carries the `turn` behind it, and a failed turn shows as an agent entry with `turn.error`",
          content: {
            "application/json": {
              schema: z.object({
                messages: z.array(HistoryMessage),
                nextBefore: z.number().nullable(),
              }),
            },
          },
        },
        403: errorContent(
          "The token may not name this room (reserved namespace or outside its userPrefix)",
        ),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId, roomId } = c.req.valid("param");
      const { limit, before } = c.req.valid("query");
      const principal = c.get("principal");
      assertMayNameRoom(principal, roomId, "memory.read");
      await assertAgentExists(c.env, agentId);
      const page = await readHistory(c.env, { agentId, roomId, limit, before });
      // The stream's rule (a token that may read memories), then each memory's user and room.
      const showMemories = hasScope(principal, "memories:read");
      const body = await historyBody(page, {
        memories: showMemories
          ? async (ids) =>
              (await memoriesByIds((await agentData(c.env, agentId)).db, agentId, ids)).filter(
                (memory) => mayBeShownMemory(principal, memory),
              )
          : null,
      });
      return c.json(body, 200);
    },
  );

  return app;
}
