// POST /v1/chat/completions: one turn of an agent (`model` = agent id) for an OpenAI client,
// handed to the room's Durable Object with one RPC like the REST turn (routes/messages.ts): the
// same principal check, user and room rules (../../namespaces.ts), per-user rate limit, daily
// spend ceiling (in the room) and idempotency (the room's journal; chat-keys.ts says which
// requests are one turn). `stream: true` answers with OpenAI's chunks (chat-response.ts).
import { admitTurn, apiTurnInput } from "../../api-turn.ts";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { SubmitTurnRequest } from "../../../objects/conversation/room-types.ts";
import { authorize } from "../../../runtime/access/index.ts";
import type { AppEnv } from "../../app-env.ts";
import { guardTurn } from "../../auth.ts";
import { assertAgentExists } from "../../known-agents.ts";
import { assertMayNameRoom, assertMayNameUser } from "../../namespaces.ts";
import { EXTERNAL_ID, ExternalId } from "../../schemas.ts";
import { writeTurn } from "../../turn-writer.ts";
import {
  defaultUserOf,
  derivedKeyOf,
  derivedRoomOf,
  REPLAY_WINDOW_MS,
  requestFingerprint,
} from "./chat-keys.ts";
import { ChatCompletionRequest, invalidParam, readChatTurn } from "./chat-request.ts";
import { completionBody, completionStream } from "./chat-response.ts";
import { aboutParam, namingParam, openAIErrorContent } from "./openai-errors.ts";

/** Whole conversations are sent every time; they outgrow a single message's limit. */
export const MAX_CHAT_COMPLETION_BODY_BYTES = 1024 * 1024;

const ChatCompletion = z
  .object({
    id: z.string().openapi({ description: "`chatcmpl-<turnId>`: a replayed retry has the same" }),
    object: z.literal("chat.completion"),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal("assistant"),
          content: z.string(),
          refusal: z.null(),
        }),
        logprobs: z.null(),
        finish_reason: z.literal("stop"),
      }),
    ),
    usage: z.object({
      prompt_tokens: z.number(),
      completion_tokens: z.number(),
      total_tokens: z.number(),
    }),
  })
  .openapi("ChatCompletion");

const RequestHeaders = z.object({
  "idempotency-key": z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, "1-255 visible ASCII characters")
    .optional()
    .openapi({
      param: { name: "idempotency-key", in: "header" },
      description:
        "Retries with the same key return the same turn. Without one, the same request within two minutes of its reply (or while it runs) is the same turn",
    }),
  "x-room-id": ExternalId.optional().openapi({
    param: { name: "x-room-id", in: "header" },
    description: "The room, when the body's `metadata.room_id` does not name it",
  }),
});

export function registerChatCompletionRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/chat/completions",
      summary: "Talk to an agent as an OpenAI-compatible chat model (`model` = agent id)",
      ...guardTurn("messages:write"),
      request: {
        headers: RequestHeaders,
        body: {
          required: true,
          content: { "application/json": { schema: ChatCompletionRequest } },
        },
      },
      responses: {
        200: {
          description:
            "The reply as a `chat.completion`; with `stream: true`, `chat.completion.chunk` events ending with `data: [DONE]` (docs/clients.md)",
          content: {
            "application/json": { schema: ChatCompletion },
            "text/event-stream": { schema: z.string() },
          },
        },
        400: openAIErrorContent(
          "Invalid request: no user message last, client-side tools, unsupported content",
        ),
        401: openAIErrorContent("No valid bearer token"),
        403: openAIErrorContent(
          "The token may not use this agent, speak as this user or in this room",
        ),
        404: openAIErrorContent("No such agent"),
        409: openAIErrorContent("The Idempotency-Key was used for a different request"),
        429: openAIErrorContent("A rate limit or the daily spend ceiling"),
        502: openAIErrorContent("The model API failed"),
        503: openAIErrorContent("No model is configured, or the room restarted while answering"),
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const headers = c.req.valid("header");
      const principal = c.get("principal");
      const agentId = body.model;
      const turn = readChatTurn(body);
      aboutParam("model", () => authorize(principal, "message.send", { agentId }));
      const userId = body.user ?? defaultUserOf(principal);
      aboutParam("user", () => assertMayNameUser(principal, userId));
      const named = namedRoom(body.metadata?.room_id, headers["x-room-id"]);
      const roomId = named?.roomId ?? (await derivedRoomOf(principal, userId, turn.opening));
      aboutParam(named?.param ?? "messages", () => assertMayNameRoom(principal, roomId));
      await assertAgentExists(c.env, agentId).catch((error: unknown) => {
        throw namingParam("model", error);
      });
      // The token's bucket and the REST turn's person bucket, in one admission: one person has
      // one allowance, whichever surface they use.
      await admitTurn(c, agentId, userId);

      const fingerprint = await requestFingerprint(principal, body, roomId, userId);
      const chosenKey = headers["idempotency-key"];
      const request: SubmitTurnRequest = {
        input: apiTurnInput({
          agentId,
          roomId,
          userId,
          userName: turn.userName,
          text: turn.text,
          attachments: turn.attachments,
          source: "openai",
          principal,
        }),
        idempotencyKey: chosenKey ?? derivedKeyOf(fingerprint),
        fingerprint,
        showMemories: false,
        ...(chosenKey ? {} : { replayWindowMs: REPLAY_WINDOW_MS }),
      };
      c.header("x-room-id", roomId);
      const meta = { model: agentId, created: Math.floor(Date.now() / 1000) };
      const includeUsage = body.stream_options?.include_usage === true;
      return writeTurn(c, {
        request,
        stream: body.stream === true,
        format: {
          body: (outcome) => completionBody(outcome, meta),
          stream: (room) => completionStream(room, { ...meta, includeUsage }),
        },
        // The room's journal resumes the turn, and the same request (the SDKs retry a 503 on
        // their own) finds it.
        afterRestart: "send the same request again to get the reply",
      });
    },
  );
}

/** The room the client names: `metadata.room_id` first, else the `X-Room-Id` header. */
function namedRoom(
  fromMetadata: string | undefined,
  fromHeader: string | undefined,
): { roomId: string; param: string } | null {
  if (fromMetadata !== undefined) {
    if (!EXTERNAL_ID.test(fromMetadata))
      throw invalidParam(
        "metadata.room_id",
        "metadata.room_id: 1-128 letters, digits or . _ : @ -, starting with a letter or digit",
      );
    return { roomId: fromMetadata, param: "metadata.room_id" };
  }
  return fromHeader === undefined ? null : { roomId: fromHeader, param: "x-room-id" };
}
