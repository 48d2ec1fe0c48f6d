// How the worker reaches a room: one RPC on the stub named `<agentId>:<roomId>`. The cast lives
// here, once: workers-types maps RPC results through its Serializable type, which collapses on
// `unknown` fields (tool arguments, error details) although they are plain JSON at runtime.
import type { Env } from "../../env.ts";
import type { HistoryQuery } from "../../db/memory/message-history.ts";
import type {
  ApprovalAnswer,
  ApprovalAnswerResult,
  EnqueueTurnRequest,
  RoomHistoryPage,
  StreamedTurnResult,
  SubmitTurnRequest,
  TurnResult,
} from "./room-types.ts";
import { errorField, log } from "../../log.ts";
import { currentTraceparent } from "../../trace-context.ts";

/** The request with the current trace context, so the room's spans join the worker's trace. */
function traced<T extends { traceparent?: string }>(request: T): T {
  const traceparent = request.traceparent ?? currentTraceparent();
  return traceparent ? { ...request, traceparent } : request;
}

export function roomName(agentId: string, roomId: string): string {
  return `${agentId}:${roomId}`;
}

export async function submitTurn(env: Env, request: SubmitTurnRequest): Promise<TurnResult> {
  const stub = env.ROOMS.getByName(roomName(request.input.agentId, request.input.roomId));
  const result: unknown = await stub.submitTurn(traced(request));
  return result as TurnResult;
}

/** The streamed variant of submitTurn: resolves once the turn has started (or failed before). */
export async function streamTurn(
  env: Env,
  request: SubmitTurnRequest,
): Promise<StreamedTurnResult> {
  const stub = env.ROOMS.getByName(roomName(request.input.agentId, request.input.roomId));
  const result: unknown = await stub.streamTurn(traced(request));
  return result as StreamedTurnResult;
}

export async function readHistory(env: Env, query: HistoryQuery): Promise<RoomHistoryPage> {
  const stub = env.ROOMS.getByName(roomName(query.agentId, query.roomId));
  const page: unknown = await stub.readHistory(query);
  return page as RoomHistoryPage;
}

/**
 * Tells rooms that their messages changed outside them (deleted or added through the memory
 * API), so they drop the history they keep in memory. Best effort per room: a room that cannot
 * be reached has no warm cache to drop.
 */
export async function forgetRoomHistory(
  env: Env,
  agentId: string,
  roomIds: string[],
): Promise<void> {
  await Promise.all(
    [...new Set(roomIds)].map(async (roomId) => {
      try {
        await env.ROOMS.getByName(roomName(agentId, roomId)).forgetHistory();
      } catch (error) {
        log.warn("forget_history_failed", { agentId, roomId, error: errorField(error) });
      }
    }),
  );
}

/** Hands a webhook turn to its room; resolves once it is journalled, long before the reply. */
export async function enqueueTurn(
  env: Env,
  request: EnqueueTurnRequest,
): Promise<{ turnId: string; duplicate: boolean }> {
  const stub = env.ROOMS.getByName(roomName(request.input.agentId, request.input.roomId));
  return await stub.enqueueTurn(traced(request));
}

/** Hands a click on an approval button to the room whose turn is waiting for it. */
export async function resolveApproval(
  env: Env,
  agentId: string,
  roomId: string,
  answer: ApprovalAnswer,
): Promise<ApprovalAnswerResult> {
  return await env.ROOMS.getByName(roomName(agentId, roomId)).resolveApproval(answer);
}
