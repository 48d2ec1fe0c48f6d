// The one writer of a turn's answer for the API routes that start one (REST messages, the
// OpenAI-compatible route): one RPC to the room, streamed or whole, the replayed marker, the 503
// when the room restarted mid-turn, and the server-sent events' headers. What the client reads is
// the format's: our events (turn-body.ts) or OpenAI's chunks (routes/openai/chat-response.ts).
import type { Context } from "hono";
import { streamTurn, submitTurn } from "../objects/conversation/room-client.ts";
import type {
  StreamedTurnResult,
  SubmitTurnRequest,
  TurnResult,
} from "../objects/conversation/room-types.ts";
import type { TurnOutcome } from "../runtime/turn/turn-types.ts";
import { type AppError, fromSerialized } from "../runtime/util/errors.ts";
import { roomRestarted } from "./api-turn.ts";
import type { AppEnv } from "./app-env.ts";

/** How one surface says a turn: the finished turn's JSON body, and the room's stream re-said. */
export interface TurnFormat {
  body(outcome: TurnOutcome): unknown;
  stream(room: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
}

export interface WriteTurnOptions {
  request: SubmitTurnRequest;
  /** Server-sent events (the client asked for them) or one JSON answer. */
  stream: boolean;
  format: TurnFormat;
  /** What the 503 of a room restarted mid-turn tells the caller to do. */
  afterRestart: string;
}

const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
};

/** Runs the turn in its room and answers with it in the surface's format. */
export async function writeTurn(c: Context<AppEnv>, options: WriteTurnOptions): Promise<Response> {
  const { request, format } = options;
  const { agentId, roomId } = request.input;
  const restarted = (error: unknown): AppError =>
    roomRestarted({ agentId, roomId }, error, options.afterRestart);
  const markReplayed = (result: TurnResult | StreamedTurnResult): void => {
    // A replayed failure is marked too: the client learns that retrying this key will not help.
    if (result.replayed && (result.ok || result.error.code !== "conflict"))
      c.header("Idempotent-Replayed", "true");
  };

  if (options.stream) {
    let streamed: StreamedTurnResult;
    try {
      streamed = await streamTurn(c.env, request);
    } catch (error) {
      throw restarted(error);
    }
    markReplayed(streamed);
    if (!streamed.ok) throw fromSerialized(streamed.error);
    return c.body(format.stream(streamed.stream), 200, EVENT_STREAM_HEADERS);
  }

  // Declared, not inferred: the RPC stub's inferred type collapses on `unknown` fields.
  let result: TurnResult;
  const started = Date.now();
  try {
    result = await submitTurn(c.env, request);
    // How long the room took (journal, D1, model, tools), for clients and `npm run bench`.
    c.header("Server-Timing", `turn;dur=${Date.now() - started}`);
  } catch (error) {
    throw restarted(error);
  }
  markReplayed(result);
  if (!result.ok) throw fromSerialized(result.error);
  return c.json(format.body(result.outcome), 200);
}
