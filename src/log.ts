// Structured log lines: one JSON object per line (`{"level","msg",...fields}`), which `wrangler
// tail` and Workers Logs index by field. Every module outside the pure runtime logs through here;
// the runtime emits events instead (src/runtime/util/events.ts), which the room logs the same way.
// Fields must never hold message text, tokens or remote bodies: ids, counts and our own reasons.
import { currentTraceId } from "./trace-context.ts";

export type LogFields = Record<string, unknown>;
type Level = "info" | "warn" | "error";

function write(level: Level, msg: string, fields: LogFields): void {
  // Inside a traced request or turn, the line names its trace (src/telemetry/).
  const traceId = currentTraceId();
  const line = JSON.stringify({ level, msg, ...fields, ...(traceId ? { trace_id: traceId } : {}) });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}

export const log = {
  info: (msg: string, fields: LogFields = {}): void => write("info", msg, fields),
  warn: (msg: string, fields: LogFields = {}): void => write("warn", msg, fields),
  error: (msg: string, fields: LogFields = {}): void => write("error", msg, fields),
};

/** An error as a log field: its message (or, for an error worth a stack, the stack). */
export function errorField(error: unknown, withStack = false): string {
  if (error instanceof Error) return withStack && error.stack ? error.stack : error.message;
  return String(error);
}
