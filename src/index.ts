// Worker entry: the Hono app answers every request; the cron trigger runs memory upkeep
// (retention, vector deletions, leftover embeddings); the Durable Object classes are exported for
// their bindings (ROOMS: AgentRoom, LIMITS: RateLimiter, TASKS: AgentTasks, SCHEMA: SchemaGate).
import type { Env } from "./env.ts";
import { createApp } from "./http/app.ts";
import { runMemoryMaintenance } from "./memory/maintenance.ts";
import { ensureSchema } from "./memory/schema-ready.ts";
import { forgetRoomHistory } from "./room/room-client.ts";

export { AgentRoom } from "./room/agent-room.ts";
export { RateLimiter } from "./room/rate-limiter.ts";
export { AgentTasks } from "./room/agent-tasks.ts";
export { SchemaGate } from "./room/schema-gate.ts";

const app = createApp();

export default {
  fetch: app.fetch,
  scheduled(controller, env, ctx) {
    ctx.waitUntil(
      ensureSchema(env).then(() => runMemoryMaintenance(env, controller.scheduledTime, { forgetRoomHistory: (agentId, roomIds) => forgetRoomHistory(env, agentId, roomIds) })),
    );
  },
} satisfies ExportedHandler<Env>;
