// A turn's spans, from the events the runtime emits (src/runtime/ports/events.ts), so the pure
// runtime knows nothing of tracing: the turn (`invoke_agent`), each model call (`chat <model>`,
// with OpenTelemetry's GenAI attributes) and each tool call (`execute_tool <tool>`). The turn
// continues the trace of the request that asked for it: the worker hands the room a traceparent
// (carryTrace), since a Durable Object RPC has no headers. Turns nobody asked over HTTP (a Discord
// Gateway message, a replay after an eviction) start a trace of their own. When the turn ends, its
// spans join the isolate's next export (otlp.ts), kept alive by waitUntil.
import type { ObservedModelCall } from "../runtime/turn/model-session.ts";
import type { D1Trip } from "../db/shared-trips.ts";
import type { RuntimeEvent } from "../runtime/ports/events.ts";
import { queueSpans, type TraceConfig } from "./otlp.ts";
import { endSpan, type Span, SpanBatch } from "./spans.ts";
import { hashedId, parseTraceparent, type SpanContext } from "../trace-context.ts";

/** Turns handed a traceparent that have not started yet, per isolate; the oldest go first. */
const carried = new Map<string, string>();
const MAX_CARRIED = 1_000;
const MAX_ENDED = 1_000;

/** The worker's traceparent for a turn the room will run (SubmitTurnRequest.traceparent). */
export function carryTrace(turnId: string, traceparent: string | undefined): void {
  if (!traceparent) return;
  carried.set(turnId, traceparent);
  if (carried.size > MAX_CARRIED) carried.delete(carried.keys().next().value as string);
}

interface OpenTurn {
  batch: SpanBatch;
  span: Span;
  /** Model calls' content, waiting for their `model_called` event (content capture only). */
  content: ObservedModelCall[];
}

export interface TurnTracer {
  /** Every runtime event of the room's turns. */
  record(event: RuntimeEvent): void;
  /** Log fields for an event: the trace id of its turn. */
  fieldsFor(event: RuntimeEvent): Record<string, string>;
  /** For the model session: each call's content, when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. */
  observe: ((call: ObservedModelCall) => void) | undefined;
  /** A round trip to D1 the room made (src/db/shared-trips.ts): a span in each turn under way. */
  d1Trip: (trip: D1Trip) => void;
  /** A reply handed to its channel (Discord), after its turn: a span of that turn's trace. */
  delivered: (delivery: Delivery) => void;
}

export interface Delivery {
  turnId: string;
  /** The surface: "discord". */
  surface: string;
  start: number;
  end: number;
  ok: boolean;
}

export function createTurnTracer(
  config: TraceConfig,
  waitUntil: (work: Promise<unknown>) => void,
  exportOptions: Parameters<typeof queueSpans>[3] = {},
): TurnTracer {
  const open = new Map<string, OpenTurn>();
  /** Turns that ended, for the spans of their replies' deliveries, which come after. */
  const ended = new Map<string, SpanContext>();
  const id = (value: string) => (config.plainIds ? value : hashedId(value));

  const begin = (event: Extract<RuntimeEvent, { type: "run_started" }>): OpenTurn => {
    const parent = parseTraceparent(carried.get(event.turnId));
    carried.delete(event.turnId);
    const batch = new SpanBatch();
    const span = batch.start("invoke_agent", {
      parent,
      start: event.at,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": id(event.agentId),
        "gen_ai.conversation.id": id(event.roomId),
        "user.id": id(event.userId),
        "edge_agents.turn.id": event.turnId,
        "edge_agents.source": event.source,
      },
    });
    const turn = { batch, span, content: [] };
    open.set(event.turnId, turn);
    return turn;
  };

  const record = (event: RuntimeEvent): void => {
    if (!("turnId" in event)) return;
    const turn = open.get(event.turnId);
    switch (event.type) {
      case "run_started":
        if (!turn) begin(event);
        return;
      case "model_called": {
        if (!turn) return;
        const content = turn.content.shift();
        const call = turn.batch.add(`chat ${event.model}`, {
          kind: "client",
          parent: turn.span,
          start: event.startedAt,
          end: event.at,
          attributes: {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": event.backend === "openai" ? "openai" : "cloudflare.workers_ai",
            "gen_ai.request.model": event.model,
            "gen_ai.response.model": event.responseModel,
            "gen_ai.usage.input_tokens": event.inputTokens,
            // GenAI semantic conventions: the part of input_tokens served from the provider's cache.
            "gen_ai.usage.cache_read.input_tokens": event.cachedInputTokens,
            "gen_ai.usage.output_tokens": event.outputTokens,
            "gen_ai.response.finish_reasons": event.finishReason ? [event.finishReason] : null,
            "error.type": event.error,
            "gen_ai.input.messages": content ? inputMessages(content) : null,
            "gen_ai.output.messages": content?.response ? outputMessages(content) : null,
          },
        });
        if (event.error) call.status = { ok: false, message: event.error };
        return;
      }
      case "tool_called": {
        if (!turn) return;
        const server = event.tool.includes("__") ? event.tool.split("__")[0] : null;
        const call = turn.batch.add(`execute_tool ${event.tool}`, {
          parent: turn.span,
          start: event.at - event.durationMs,
          end: event.at,
          attributes: {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "edge_agents.tool.server": server,
            "edge_agents.tool.cached": event.cached,
          },
        });
        if (!event.ok) call.status = { ok: false, message: "the tool failed" };
        return;
      }
      case "context_composed": {
        if (!turn) return;
        turn.batch.add("compose_context", {
          parent: turn.span,
          start: event.startedAt,
          end: event.at,
          attributes: {
            "edge_agents.context.memories": event.memories,
            "edge_agents.retrieval.hits.text": event.hits.text,
            "edge_agents.retrieval.hits.vector": event.hits.vector,
            "edge_agents.retrieval.hits.neighbour": event.hits.neighbour,
            "edge_agents.retrieval.query_embedding": event.queryEmbedding,
          },
        });
        return;
      }
      case "tool_approval_requested":
        if (turn) turn.span.attributes["edge_agents.approval.tool"] = event.tool;
        return;
      case "run_ended": {
        if (!turn) return;
        open.delete(event.turnId);
        ended.set(event.turnId, { traceId: turn.span.traceId, spanId: turn.span.spanId });
        if (ended.size > MAX_ENDED) ended.delete(ended.keys().next().value as string);
        turn.span.attributes["edge_agents.turn.status"] = event.status;
        turn.span.attributes["gen_ai.usage.input_tokens"] = event.usage.promptTokens;
        turn.span.attributes["gen_ai.usage.output_tokens"] = event.usage.completionTokens;
        turn.span.attributes["gen_ai.usage.cache_read.input_tokens"] =
          event.usage.cachedPromptTokens ?? 0;
        turn.span.attributes["edge_agents.model_calls"] = event.modelCalls;
        endSpan(
          turn.span,
          event.at,
          event.status === "failed" ? { ok: false, message: "the turn failed" } : undefined,
        );
        queueSpans(config, turn.batch.spans, waitUntil, exportOptions);
        return;
      }
      default:
        return;
    }
  };

  return {
    record,
    fieldsFor(event): Record<string, string> {
      if (!("turnId" in event)) return {};
      // The turn's span is made before its first log line, so even that line names the trace.
      const turn =
        open.get(event.turnId) ?? (event.type === "run_started" ? begin(event) : undefined);
      return turn ? { trace_id: turn.span.traceId } : {};
    },
    observe: config.captureContent
      ? (call) => open.get(call.turnId)?.content.push(call)
      : undefined,
    delivered(delivery) {
      const parent = ended.get(delivery.turnId) ?? open.get(delivery.turnId)?.span;
      if (!parent) return;
      const batch = new SpanBatch();
      const span = batch.add(`deliver ${delivery.surface}`, {
        kind: "client",
        parent,
        start: delivery.start,
        end: delivery.end,
        attributes: { "edge_agents.delivery.surface": delivery.surface },
      });
      if (!delivery.ok) span.status = { ok: false, message: "the delivery failed" };
      queueSpans(config, batch.spans, waitUntil, exportOptions);
    },
    d1Trip(trip) {
      // A trip started together by the room's turns under way is theirs alike; one after a
      // turn's end (its reply's write) is not in its trace.
      for (const turn of open.values()) {
        const span = turn.batch.add("batch", {
          kind: "client",
          parent: turn.span,
          start: trip.start,
          end: trip.end,
          attributes: {
            "db.system.name": "cloudflare.d1",
            "db.operation.name": "batch",
            "db.operation.batch.size": trip.statements,
          },
        });
        if (!trip.ok) span.status = { ok: false, message: "the D1 trip failed" };
      }
    },
  };
}

/** The request's messages as OpenTelemetry's GenAI conventions write them (JSON text). */
function inputMessages(call: ObservedModelCall): string {
  return JSON.stringify(
    call.messages.map((message) => ({
      role: message.role,
      parts: [
        { type: "text", content: typeof message.content === "string" ? message.content : "" },
      ],
    })),
  );
}

function outputMessages(call: ObservedModelCall): string {
  const response = call.response!;
  return JSON.stringify([
    {
      role: "assistant",
      parts: [
        ...(response.text ? [{ type: "text", content: response.text }] : []),
        ...response.toolCalls.map((toolCall) => ({
          type: "tool_call",
          id: toolCall.id,
          name: toolCall.name,
          arguments: toolCall.arguments,
        })),
      ],
      finish_reason: response.finishReason,
    },
  ]);
}
