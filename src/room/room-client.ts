// How the worker reaches a room: one RPC on the stub named `<agentId>:<roomId>`. The cast lives
// here, once: workers-types maps RPC results through its Serializable type, which collapses on
// `unknown` fields (tool arguments, error details) although they are plain JSON at runtime.
import type { Env } from "../config.ts";
import type { HistoryPage, HistoryQuery } from "../memory/message-history.ts";
import type { SubmitTurnRequest, TurnResult } from "./agent-room.ts";

export function roomName(agentId: string, roomId: string): string {
  return `${agentId}:${roomId}`;
}

export async function submitTurn(env: Env, request: SubmitTurnRequest): Promise<TurnResult> {
  const stub = env.ROOMS.getByName(roomName(request.input.agentId, request.input.roomId));
  const result: unknown = await stub.submitTurn(request);
  return result as TurnResult;
}

export async function readHistory(env: Env, query: HistoryQuery): Promise<HistoryPage> {
  const stub = env.ROOMS.getByName(roomName(query.agentId, query.roomId));
  const page: unknown = await stub.readHistory(query);
  return page as HistoryPage;
}
