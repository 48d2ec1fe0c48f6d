// The `chat` tool: one turn with the agent along the path of POST /agents/:agentId/messages: the
// one check on the user and room it speaks as, the same per-user rate bucket, one RPC to the
// room (whose daily spend ceiling applies), source "rest". The reply is the text content; the
// turn id, room, user and usage are the structured content, with the memories the prompt held for
// a token that may read memories (as over REST).
import { apiTurnInput, enforcePersonRate, roomRestarted } from "../../api-turn.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { z } from "zod";
import { submitTurn } from "../../../objects/conversation/room-client.ts";
import type { TurnResult } from "../../../objects/conversation/room-types.ts";
import { authorize, decide } from "../../../runtime/access/index.ts";
import { fromSerialized } from "../../../runtime/util/errors.ts";
import type { Principal } from "../../app-env.ts";
import { defaultRoomOf } from "../../namespaces.ts";
import { EXTERNAL_ID, TurnUsageCounts } from "../../schemas.ts";
import { MAX_MESSAGE_CHARS } from "../messages.ts";
import type { McpCallContext } from "./context.ts";

const Id = z
  .string()
  .regex(EXTERNAL_ID, "1-128 letters, digits or . _ : @ -, starting with a letter or digit");

export const ChatInput = z.strictObject({
  message: z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(MAX_MESSAGE_CHARS)
    .describe("What to say to the agent"),
  userId: Id.optional().describe(
    "Who is speaking (within the token's user prefix, if it has one); defaults to one user per token",
  ),
  roomId: Id.optional().describe(
    "The conversation; defaults to `user:<userId>`, so calls without it continue one conversation",
  ),
});

export const ChatOutput = z.object({
  turnId: z.string(),
  roomId: z.string(),
  userId: z.string(),
  reply: z.string().nullable().describe("The agent's reply (null: it did not reply)"),
  model: z.string().nullable(),
  stopReason: z.string(),
  usage: TurnUsageCounts,
  memories: z
    .array(
      z.object({
        id: z.string(),
        type: z.string(),
        text: z.string(),
        score: z.number().nullable(),
      }),
    )
    .optional()
    .describe("What the prompt held from long-term memory; only for a token with memories:read"),
});

/**
 * The user a call without `userId` speaks as: one per token, inside its user prefix, so a host
 * that never names a user still holds one conversation that the agent remembers.
 */
export function defaultMcpUserOf(principal: Principal): string {
  return `${principal.userPrefix ?? ""}mcp-${principal.id}`;
}

export async function chat(
  ctx: McpCallContext,
  args: z.infer<typeof ChatInput>,
): Promise<CallToolResult> {
  const { env, principal, agentId } = ctx;
  const userId = args.userId ?? defaultMcpUserOf(principal);
  authorize(principal, "message.send", { agentId, userId, roomId: args.roomId });
  // The REST route's bucket: a person's turns over REST and over MCP draw from one.
  await enforcePersonRate(env, agentId, userId, ctx.keepAlive);
  const roomId = args.roomId ?? defaultRoomOf(userId);
  const showMemories = decide(principal, "memory.read", { agentId }).allowed;
  const input = apiTurnInput({
    agentId,
    roomId,
    userId,
    text: args.message,
    source: "rest",
    principal,
  });
  let result: TurnResult;
  try {
    result = await submitTurn(env, { input, showMemories });
  } catch (error) {
    throw roomRestarted(
      { agentId, roomId },
      error,
      "the turn will still complete (see the room's history)",
    );
  }
  if (!result.ok) throw fromSerialized(result.error);
  const { outcome } = result;
  const structured: z.infer<typeof ChatOutput> = {
    turnId: outcome.turnId,
    roomId,
    userId,
    reply: outcome.reply?.text ?? null,
    model: outcome.model,
    stopReason: outcome.stopReason,
    usage: {
      promptTokens: outcome.usage.promptTokens,
      completionTokens: outcome.usage.completionTokens,
      modelCalls: outcome.usage.modelCalls,
    },
    ...(showMemories
      ? {
          memories: (outcome.memories ?? []).map((m) => ({
            id: m.id,
            type: m.type,
            text: m.text,
            score: m.score,
          })),
        }
      : {}),
  };
  return {
    content: [{ type: "text", text: outcome.reply?.text ?? "(the agent did not reply)" }],
    structuredContent: structured,
  };
}
