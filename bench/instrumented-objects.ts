// The Durable Object classes of the worker, each built with an instrumented env and its own SQLite
// watched, for the bench entries that wrap the real worker (bench/latency/entry.ts,
// bench/compare/counting-entry.ts). An entry exports the classes this returns under their names.
import {
  AgentRoom,
  AgentTasks,
  DiscordGateway,
  DiscordRestLimiter,
  PostPublisher,
  RateLimiter,
  SchemaGate,
} from "../src/durable-objects.ts";
import type { Env } from "../src/env.ts";

export interface ObjectInstruments {
  /** The env the object sees instead of its own. */
  env(env: Env): Env;
  /** Called with the object's state before it is built (e.g. to count its SQL). */
  state(ctx: DurableObjectState): void;
}

export function instrumentedObjects(instruments: ObjectInstruments) {
  // biome-ignore lint/suspicious/noExplicitAny: TypeScript's mixin form needs any[]
  type ObjectClass = new (...args: any[]) => object;
  const wrap = <C extends ObjectClass>(Real: C): C =>
    class extends Real {
      // biome-ignore lint/suspicious/noExplicitAny: a mixin's constructor must take any[]
      constructor(...args: any[]) {
        const [ctx, env] = args as [DurableObjectState, Env];
        instruments.state(ctx);
        super(ctx, instruments.env(env));
      }
    };
  return {
    AgentRoom: wrap(AgentRoom),
    AgentTasks: wrap(AgentTasks),
    DiscordGateway: wrap(DiscordGateway),
    DiscordRestLimiter: wrap(DiscordRestLimiter),
    PostPublisher: wrap(PostPublisher),
    RateLimiter: wrap(RateLimiter),
    SchemaGate: wrap(SchemaGate),
  };
}
