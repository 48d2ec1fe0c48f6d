// Lifecycle events of a turn go to subscribers (the room, future streaming clients) and to the log
// as one JSON line each, so a deployed worker's `wrangler tail` shows what every turn did. Event
// payloads never carry message text, tool arguments or secrets.
import type { EventSink, RuntimeEvent } from "../ports/events.ts";

export type EventListener = (event: RuntimeEvent) => void;

export interface EventBus extends EventSink {
  subscribe(listener: EventListener): () => void;
}

export interface EventBusOptions {
  /** Where structured log lines go; `null` turns logging off (benchmarks). */
  log?: ((line: string) => void) | null;
  /** More fields for an event's log line (its trace id, from a tracer). */
  fields?: (event: RuntimeEvent) => Record<string, string>;
}

export function createEventBus(options: EventBusOptions = {}): EventBus {
  const listeners = new Set<EventListener>();
  const log = options.log === undefined ? (line: string) => console.log(line) : options.log;
  return {
    emit(event) {
      if (log)
        log(
          JSON.stringify({
            level: levelOf(event),
            msg: "runtime_event",
            ...event,
            ...options.fields?.(event),
          }),
        );
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (error) {
          // A broken subscriber must not break the turn that emitted the event.
          if (log)
            log(
              JSON.stringify({
                level: "error",
                msg: "event_listener_failed",
                event: event.type,
                error: String(error),
              }),
            );
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * A failed evaluator loses what the turn should have remembered (facts, a summary) while the
 * reply looks fine, e.g. a SMALL_MODEL the endpoint does not serve: a warning, not news.
 */
function levelOf(event: RuntimeEvent): "info" | "warn" {
  return event.type === "evaluator_failed" ? "warn" : "info";
}
