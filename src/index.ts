// Worker entry: the Hono app answers every request; the cron trigger runs memory upkeep
// (retention, vector deletions, leftover embeddings); the Durable Object classes are exported for
// their bindings (ROOMS: AgentRoom, LIMITS: RateLimiter, TASKS: AgentTasks, PUBLISHER:
// PostPublisher, SCHEMA: SchemaGate, GATEWAY: DiscordGateway,
// DISCORD_LIMITS: DiscordRestLimiter), as assembled in durable-objects.ts.
// With DISCORD_GATEWAY=true the first request of an isolate, and every cron run, make sure the
// Gateway connection is up.
import type { Env } from "./env.ts";
import { createApp } from "./http/app.ts";
import { runMemoryMaintenance } from "./db/memory/maintenance.ts";
import { ensureSchema } from "./db/schema-ready.ts";
import { forgetRoomHistory } from "./objects/conversation/room-client.ts";
import { startGateway } from "./clients/discord/gateway/gateway-client.ts";

export {
  AgentRoom,
  AgentTasks,
  DiscordGateway,
  DiscordRestLimiter,
  PostPublisher,
  RateLimiter,
  SchemaGate,
} from "./durable-objects.ts";

const app = createApp();

export default {
  fetch(request, env, ctx) {
    startGateway(env, ctx);
    return app.fetch(request, env, ctx);
  },
  scheduled(controller, env, ctx) {
    startGateway(env, ctx, true);
    ctx.waitUntil(
      ensureSchema(env).then(() =>
        runMemoryMaintenance(env, controller.scheduledTime, {
          forgetRoomHistory: (agentId, roomIds) => forgetRoomHistory(env, agentId, roomIds),
        }),
      ),
    );
  },
} satisfies ExportedHandler<Env>;
