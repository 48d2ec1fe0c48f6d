// What a client is told of a finished turn, built here at the edge: the JSON answer's body, and
// the `done` event that ends a streamed turn (docs/streaming.md). The room object streams what a
// turn does as server-sent events and ends with the bare outcome (TURN_OUTCOME_EVENT); the worker
// passes every other byte on untouched and turns that last event into `done`.
import { TURN_OUTCOME_EVENT } from "../objects/conversation/room-types.ts";
import type { TurnOutcome } from "../runtime/turn/turn-types.ts";

/** The body of a finished turn, for the JSON answer and the stream's `done` event. */
export function turnBody(outcome: TurnOutcome, roomId: string, showMemories: boolean) {
  const body = {
    turnId: outcome.turnId,
    roomId,
    reply: outcome.reply,
    actions: outcome.actions,
    toolCalls: outcome.toolCalls,
    usage: outcome.usage,
    model: outcome.model,
    stopReason: outcome.stopReason,
  };
  // Outcomes journalled before the field existed replay without it.
  return showMemories ? { ...body, memories: outcome.memories ?? [] } : body;
}

/** How the room's stream marks its last event (always at the start of an event). */
const MARKER = new TextEncoder().encode(`event: ${TURN_OUTCOME_EVENT}\ndata: `);
const NL = 10;

/**
 * The room's stream as the client gets it: every event before the outcome passes through as it
 * comes, nothing held back (first token to first byte unchanged); the outcome becomes the `done`
 * event. Only the start of an event is looked at, and only bytes that could begin the outcome's
 * marker wait for the next chunk. A stream that ends without an outcome (the turn failed after it
 * began: its `error` event came instead) passes through whole.
 */
export function clientTurnStream(
  room: ReadableStream<Uint8Array>,
  roomId: string,
  showMemories: boolean,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  /** Bytes from an event's start that may be the marker's beginning. */
  let held: Uint8Array | null = null;
  /** The previous chunk ended an event ("\n\n"), or ended with one line break of it. */
  let atEventStart = true;
  let afterLineBreak = false;
  let outcome: Uint8Array[] | null = null;
  return room.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (outcome) {
          outcome.push(chunk);
          return;
        }
        const bytes = held ? concat(held, chunk) : chunk;
        const resumed = held !== null;
        held = null;
        let start = resumed || atEventStart ? 0 : afterLineBreak && bytes[0] === NL ? 1 : -1;
        if (start < 0) start = nextEventStart(bytes, 0);
        while (start >= 0) {
          const seen = markerAt(bytes, start);
          if (seen !== "no") {
            if (start > 0) controller.enqueue(bytes.subarray(0, start));
            if (seen === "whole") outcome = [bytes.subarray(start + MARKER.length)];
            else held = bytes.slice(start);
            return;
          }
          start = nextEventStart(bytes, start);
        }
        controller.enqueue(bytes);
        const last = bytes.length - 1;
        const before = last >= 1 ? bytes[last - 1] === NL : afterLineBreak;
        atEventStart = bytes[last] === NL && before;
        afterLineBreak = bytes[last] === NL;
      },
      flush(controller) {
        if (held) controller.enqueue(held);
        if (!outcome) return;
        const data = new TextDecoder().decode(concat(...outcome)).trim();
        const body = turnBody(JSON.parse(data) as TurnOutcome, roomId, showMemories);
        controller.enqueue(encoder.encode(`event: done\ndata: ${JSON.stringify(body)}\n\n`));
      },
    }),
  );
}

/** Where the event after the one at `from` starts (after its blank line), or -1 in this chunk. */
function nextEventStart(bytes: Uint8Array, from: number): number {
  for (
    let i = bytes.indexOf(NL, from);
    i >= 0 && i + 1 < bytes.length;
    i = bytes.indexOf(NL, i + 1)
  )
    if (bytes[i + 1] === NL) return i + 2 < bytes.length ? i + 2 : -1;
  return -1;
}

/** The marker whole at `start`, only its beginning (the chunk ends first), or not there. */
function markerAt(bytes: Uint8Array, start: number): "whole" | "begun" | "no" {
  const length = Math.min(MARKER.length, bytes.length - start);
  if (length <= 0) return "no";
  for (let i = 0; i < length; i++) if (bytes[start + i] !== MARKER[i]) return "no";
  return length === MARKER.length ? "whole" : "begun";
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all;
}
