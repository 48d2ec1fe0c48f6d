// The Durable Object classes wrangler.toml binds, assembled where the worker knows its surfaces:
// the room and the task object (src/objects/) take the reply surface and attachment ingest as
// interfaces, and get Discord's (src/clients/discord/) here, so src/objects/ never imports a client.
import {
  createDiscordAttachmentIngest,
  createDiscordSurface,
} from "./clients/discord/discord-surface.ts";
import { AgentRoomBase } from "./objects/conversation/agent-room.ts";
import { AgentTasksBase } from "./objects/tasks/agent-tasks.ts";
import type { ReplySurface, RoomPlatform } from "./objects/shared/reply-surface.ts";

export { DiscordGateway } from "./clients/discord/gateway/discord-gateway.ts";
export { PostPublisher } from "./clients/instagram/post-publisher.ts";
export { RateLimiter } from "./rate-limits/rate-limiter.ts";
export { SchemaGate } from "./db/schema-gate.ts";

export class AgentRoom extends AgentRoomBase {
  protected override platform(): RoomPlatform {
    return {
      surface: createDiscordSurface(this.env),
      attachments: createDiscordAttachmentIngest(this.env),
    };
  }
}

export class AgentTasks extends AgentTasksBase {
  protected override replySurface(): ReplySurface {
    return createDiscordSurface(this.env);
  }
}
