// Worker entry: the Hono app answers every request; the cron trigger runs memory upkeep
// (retention, vector deletions, leftover embeddings); the Durable Object classes are exported for
// their bindings (ROOMS: AgentRoom, LIMITS: RateLimiter, TASKS: AgentTasks, PUBLISHER:
// PostPublisher, SCHEMA: SchemaGate), as assembled in durable-objects.ts.
import type { Env } from "./env.ts";
import { createApp } from "./http/app.ts";
import { runMemoryMaintenance } from "./memory/maintenance.ts";
import { ensureSchema } from "./memory/schema-ready.ts";
import { forgetRoomHistory } from "./room/room-client.ts";

export {
  AgentRoom,
  AgentTasks,
  PostPublisher,
  RateLimiter,
  SchemaGate,
} from "./durable-objects.ts";

const app = createApp();

export default {
  fetch: app.fetch,
  scheduled(controller, env, ctx) {
    ctx.waitUntil(
      ensureSchema(env).then(() =>
        runMemoryMaintenance(env, controller.scheduledTime, {
          forgetRoomHistory: (agentId, roomIds) => forgetRoomHistory(env, agentId, roomIds),
        }),
      ),
    );
  },
} satisfies ExportedHandler<Env>;
