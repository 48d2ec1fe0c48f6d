// The request's span in the worker: one `SERVER` span per request (method, matched route, status;
// never the path, which holds agent and room ids), continuing a `traceparent` the client sent.
// While the request runs, its context is the current one (src/trace-context.ts), so the room RPC
// carries it on (src/objects/conversation/room-client.ts) and log lines carry its trace id.
// The spans are exported after the response, through waitUntil.
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Env } from "../env.ts";
import { parseTraceparent, withSpanContext } from "../trace-context.ts";
import { queueSpans, traceConfig } from "./otlp.ts";
import { endSpan, SpanBatch } from "./spans.ts";

export function traceRequests(): MiddlewareHandler<{ Bindings: Env }> {
  return async (c, next) => {
    const config = traceConfig(c.env);
    if (!config) return next();
    const batch = new SpanBatch();
    const span = batch.start(c.req.method, {
      kind: "server",
      parent: parseTraceparent(c.req.header("traceparent")),
      start: Date.now(),
      attributes: { "http.request.method": c.req.method },
    });
    try {
      await withSpanContext({ traceId: span.traceId, spanId: span.spanId }, () => next());
    } finally {
      // The last route that matched, as its pattern: /agents/:agentId/messages, not the ids.
      const route = routePath(c, -1);
      const status = c.res.status;
      span.name = `${c.req.method} ${route}`;
      span.attributes["http.route"] = route;
      span.attributes["http.response.status_code"] = status;
      endSpan(
        span,
        Date.now(),
        status >= 500 ? { ok: false, message: `HTTP ${status}` } : undefined,
      );
      queueSpans(config, batch.spans, (work) => c.executionCtx.waitUntil(work));
    }
  };
}
