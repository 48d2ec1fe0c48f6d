// One streamed turn as server-sent events: the room writes what the turn does (memories used,
// text as the model writes it, tool calls) and the worker passes the bytes on; the last event,
// the bare outcome, the worker turns into the client's `done` (src/http/turn-body.ts). The
// turn never depends on the stream: a client that goes away only makes writes fail quietly, and
// the reply is still journalled and stored. Event names and shapes are in docs/streaming.md.
// The memories a turn used (a person's facts among them) are told only to a caller allowed to read
// memories: for anyone else the `memories` event and field are left out.
import type { SerializedError } from "../../runtime/util/errors.ts";
import type {
  ToolCallRecord,
  TurnObserver,
  TurnOutcome,
  UsedMemory,
} from "../../runtime/turn/turn-types.ts";
import { log } from "../../log.ts";
import { TURN_OUTCOME_EVENT } from "./room-types.ts";

/** A comment line this often keeps proxies and browsers from closing a quiet stream. */
export const KEEP_ALIVE_MS = 15_000;

export class TurnStream {
  readonly readable: ReadableStream<Uint8Array>;
  /** Resolves when the turn has started answering (its memories are known), so headers can go; never for a turn that fails first. */
  readonly started: Promise<void>;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly encoder = new TextEncoder();
  private markStarted!: () => void;
  private closed = false;
  private readonly keepAlive: ReturnType<typeof setInterval>;

  private readonly turnId: string;
  private readonly showMemories: boolean;

  constructor(turnId: string, roomId: string, showMemories: boolean) {
    this.turnId = turnId;
    this.showMemories = showMemories;
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    this.readable = pipe.readable;
    this.writer = pipe.writable.getWriter();
    this.started = new Promise((resolve) => (this.markStarted = resolve));
    this.send("turn", { turnId, roomId });
    this.keepAlive = setInterval(() => this.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
  }

  /** What the turn reports as it runs. */
  readonly observer: TurnObserver = {
    memories: (used: UsedMemory[]) => {
      if (this.showMemories) this.send("memories", { memories: used });
      this.markStarted();
    },
    text: (delta: string) => this.send("delta", { text: delta }),
    toolCall: (call) => this.send("tool_call", call),
    toolResult: (record: ToolCallRecord) =>
      this.send("tool_result", {
        id: record.id,
        name: record.name,
        ok: record.ok,
        output: record.output,
        durationMs: record.durationMs,
        cached: record.cached,
      }),
  };

  /** The last event: the outcome, which the worker turns into the client's `done`; then the end. */
  done(outcome: TurnOutcome): void {
    this.send(TURN_OUTCOME_EVENT, outcome);
    this.close();
  }

  /** The turn failed after the stream began: say why (as the JSON error body would), then end. */
  fail(error: SerializedError): void {
    this.send("error", { error: { code: error.code, message: error.message } });
    this.close();
  }

  /** Ends the stream without a last event (the caller answers in another way). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    this.writer.close().catch(() => {});
  }

  private send(event: string, data: unknown): void {
    // JSON.stringify escapes line breaks, so one `data:` line always holds the whole event.
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private write(text: string): void {
    if (this.closed) return;
    // Not awaited: the turn never waits for a slow reader, and a reader that left only makes
    // this write fail, which changes nothing for the turn.
    this.writer.write(this.encoder.encode(text)).catch(() => {
      if (!this.closed) {
        this.closed = true;
        clearInterval(this.keepAlive);
        log.info("stream_client_gone", { turnId: this.turnId });
      }
    });
  }
}
