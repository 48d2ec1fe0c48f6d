// The worker entry of `npm run bench -- --d1-ms N --do-ms N`: the real worker (src/index.ts) and
// its Durable Object classes, each given an env whose D1 and object calls are delayed and recorded
// (instrument.ts). Two routes of its own, reached only in this bundle: `POST /__bench/delays` sets
// the delays, `GET /__bench/trips` waits until the worker is idle and hands over the trips.
/// <reference path="../../src/wasm.d.ts" />
import worker from "../../src/index.ts";
import { instrumentedObjects } from "../instrumented-objects.ts";
import type { Env } from "../../src/env.ts";
import {
  countObjectSql,
  instrumentEnv,
  instrumentFetch,
  quiescent,
  setDelays,
  takeTrips,
  trip,
} from "./instrument.ts";

instrumentFetch();

export const {
  AgentRoom,
  AgentTasks,
  DiscordGateway,
  DiscordRestLimiter,
  PostPublisher,
  RateLimiter,
  SchemaGate,
} = instrumentedObjects({ env: instrumentEnv, state: countObjectSql });

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/delays" && request.method === "POST") {
      setDelays((await request.json()) as { d1Ms: number; doMs: number });
      return new Response(null, { status: 204 });
    }
    if (url.pathname === "/__bench/trips") {
      await quiescent(Number(url.searchParams.get("quietMs") ?? 150), 10_000);
      return Response.json(takeTrips());
    }
    return trip("request", `${request.method} ${url.pathname}`, async () =>
      worker.fetch(request, instrumentEnv(env), ctx),
    );
  },
  scheduled(controller, env, ctx) {
    return worker.scheduled(controller, instrumentEnv(env), ctx);
  },
} satisfies ExportedHandler<Env>;
