// The Durable Object classes wrangler.toml binds, assembled where the worker knows its surfaces:
// the room and the task object (src/objects/) take the reply surface, attachment ingest and the
// agent's plugins as interfaces, and get the chat platforms' (src/clients/), one surface routing
// each delivery target by its kind, and src/plugins/' here, so src/objects/ never imports a
// client or a plugin.
import { createAttachmentRouter } from "./clients/chat/attachment-router.ts";
import { createSurfaceRouter } from "./clients/chat/surface-router.ts";
import {
  createDiscordAttachmentIngest,
  createDiscordSurface,
} from "./clients/discord/discord-surface.ts";
import {
  createSlackSurface,
  isSlackPosted,
  SLACK_MESSAGE_KIND,
} from "./clients/slack/slack-surface.ts";
import {
  createTelegramSurface,
  isTelegramPosted,
  TELEGRAM_MESSAGE_KIND,
} from "./clients/telegram/telegram-surface.ts";
import { isTelegramAttachment } from "./clients/telegram/message-files.ts";
import { createTelegramAttachmentIngest } from "./clients/telegram/telegram-files.ts";
import type { Env } from "./env.ts";
import { AgentRoomBase } from "./objects/conversation/agent-room.ts";
import { AgentTasksBase } from "./objects/tasks/agent-tasks.ts";
import type { RoomPluginsFactory } from "./objects/shared/plugin-port.ts";
import type { ReplySurface, RoomPlatform } from "./objects/shared/reply-surface.ts";
import { createRoomPlugins } from "./plugins/room-plugins.ts";

export { DiscordGateway } from "./clients/discord/gateway/discord-gateway.ts";
export { DiscordRestLimiter } from "./rate-limits/discord-rest-limiter.ts";
export { PostPublisher } from "./clients/instagram/post-publisher.ts";
export { RateLimiter } from "./rate-limits/rate-limiter.ts";
export { SchemaGate } from "./db/schema-gate.ts";

/** Discord's surface first: it owns the posted prompts no other surface claims. */
function chatSurface(env: Env): ReplySurface {
  return createSurfaceRouter([
    { kinds: ["discord", "discord-message"], surface: createDiscordSurface(env) },
    {
      kinds: [TELEGRAM_MESSAGE_KIND],
      surface: createTelegramSurface(env),
      ownsPosted: isTelegramPosted,
    },
    { kinds: [SLACK_MESSAGE_KIND], surface: createSlackSurface(env), ownsPosted: isSlackPosted },
  ]);
}

export class AgentRoom extends AgentRoomBase {
  protected override platform(): RoomPlatform {
    return {
      surface: chatSurface(this.env),
      attachments: createAttachmentRouter([
        { owns: isTelegramAttachment, ingest: createTelegramAttachmentIngest(this.env) },
        // Last: plain URLs, which predate the router, are Discord's.
        { owns: () => true, ingest: createDiscordAttachmentIngest(this.env) },
      ]),
    };
  }

  protected override plugins(): RoomPluginsFactory {
    return createRoomPlugins;
  }
}

export class AgentTasks extends AgentTasksBase {
  protected override replySurface(): ReplySurface {
    return chatSurface(this.env);
  }

  protected override plugins(): RoomPluginsFactory {
    return createRoomPlugins;
  }
}
