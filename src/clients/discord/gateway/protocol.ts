// The Discord Gateway's wire format (API v10, JSON encoding) as far as the bot reads it: opcodes,
// intents and close codes come from discord-api-types; what arrives is checked with zod here
// (payloads from the socket are outside input), and what goes out is typed by discord-api-types.
// Reference: discord.com/developers/docs/events/gateway and topics/opcodes-and-status-codes.
import type {
  GatewayCloseCodes as CloseCodes,
  GatewayHeartbeat,
  GatewayIdentify,
  GatewayIntentBits as Intents,
  GatewayOpcodes as Opcodes,
  GatewayResume,
} from "discord-api-types/v10";
import { z } from "zod";

// The numbers are written here and checked against discord-api-types' enums at compile time (the
// package is types only for us: its CommonJS entry does not load in workerd's test runner).
export const GatewayOpcodes = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  Resume: 6,
  Reconnect: 7,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const satisfies {
  Dispatch: Opcodes.Dispatch;
  Heartbeat: Opcodes.Heartbeat;
  Identify: Opcodes.Identify;
  Resume: Opcodes.Resume;
  Reconnect: Opcodes.Reconnect;
  InvalidSession: Opcodes.InvalidSession;
  Hello: Opcodes.Hello;
  HeartbeatAck: Opcodes.HeartbeatAck;
};

export const GatewayCloseCodes = {
  AuthenticationFailed: 4004,
  InvalidSeq: 4007,
  SessionTimedOut: 4009,
  InvalidShard: 4010,
  ShardingRequired: 4011,
  InvalidAPIVersion: 4012,
  InvalidIntents: 4013,
  DisallowedIntents: 4014,
} as const satisfies {
  AuthenticationFailed: CloseCodes.AuthenticationFailed;
  InvalidSeq: CloseCodes.InvalidSeq;
  SessionTimedOut: CloseCodes.SessionTimedOut;
  InvalidShard: CloseCodes.InvalidShard;
  ShardingRequired: CloseCodes.ShardingRequired;
  InvalidAPIVersion: CloseCodes.InvalidAPIVersion;
  InvalidIntents: CloseCodes.InvalidIntents;
  DisallowedIntents: CloseCodes.DisallowedIntents;
};

const GatewayIntentBits = {
  Guilds: 1 << 0,
  GuildMessages: 1 << 9,
  DirectMessages: 1 << 12,
  MessageContent: 1 << 15,
} as const satisfies {
  Guilds: Intents.Guilds;
  GuildMessages: Intents.GuildMessages;
  DirectMessages: Intents.DirectMessages;
  MessageContent: Intents.MessageContent;
};

export const GATEWAY_VERSION = 10;

/**
 * What the bot subscribes to. MESSAGE_CONTENT is privileged (switched on in the developer portal);
 * without it Discord still sends content for messages that mention the bot and for DMs.
 */
export const GATEWAY_INTENTS =
  GatewayIntentBits.Guilds |
  GatewayIntentBits.GuildMessages |
  GatewayIntentBits.DirectMessages |
  GatewayIntentBits.MessageContent;

/** Close codes after which Discord says not to reconnect: the configuration must change first. */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([
  GatewayCloseCodes.AuthenticationFailed,
  GatewayCloseCodes.InvalidShard,
  GatewayCloseCodes.ShardingRequired,
  GatewayCloseCodes.InvalidAPIVersion,
  GatewayCloseCodes.InvalidIntents,
  GatewayCloseCodes.DisallowedIntents,
]);

/** Close codes after which the session is gone: reconnect with a fresh IDENTIFY, not a RESUME. */
export const SESSION_ENDING_CLOSE_CODES: ReadonlySet<number> = new Set([
  GatewayCloseCodes.InvalidSeq,
  GatewayCloseCodes.SessionTimedOut,
]);

/** What we close with to reconnect and resume: 1000 and 1001 would end the session on Discord's side. */
export const RESUMABLE_CLOSE_CODE = 4_900;

/** Every payload: an opcode, its data, and for dispatches the sequence number and event name. */
export const GatewayPayload = z.object({
  op: z.number().int(),
  // Absent in some payloads (an ACK may come as just {"op": 11}).
  d: z.unknown().optional(),
  s: z.number().int().nullish(),
  t: z.string().nullish(),
});
export type GatewayPayload = z.infer<typeof GatewayPayload>;

export const HelloData = z.object({ heartbeat_interval: z.number().positive() });

const Snowflake = z.string().regex(/^\d{1,20}$/);

export const ReadyData = z.object({
  session_id: z.string().min(1).max(200),
  resume_gateway_url: z.string().min(1).max(2_000),
  user: z.object({ id: Snowflake, username: z.string() }),
});
export type ReadyData = z.infer<typeof ReadyData>;

/** `GET /gateway/bot`: where to connect and how many sessions may still be started. */
export const GatewayBotInfo = z.object({
  url: z.string().min(1).max(2_000),
  shards: z.number().int().min(1).optional(),
  session_start_limit: z
    .object({
      total: z.number().int(),
      remaining: z.number().int(),
      reset_after: z.number().int().min(0),
      max_concurrency: z.number().int().min(1),
    })
    .optional(),
});
export type GatewayBotInfo = z.infer<typeof GatewayBotInfo>;

/** The connection URL with the version and encoding Discord wants as query parameters. */
export function gatewayUrl(base: string): string {
  const url = new URL(base);
  url.searchParams.set("v", String(GATEWAY_VERSION));
  url.searchParams.set("encoding", "json");
  return url.toString();
}

/** `shard: [index, count]`: which of the bot's shards this connection is (Discord routes by it). */
export function identifyPayload(
  token: string,
  shard: { index: number; count: number } = { index: 0, count: 1 },
): GatewayIdentify {
  return {
    op: GatewayOpcodes.Identify,
    d: {
      token,
      intents: GATEWAY_INTENTS,
      shard: [shard.index, shard.count],
      properties: { os: "cloudflare-workers", browser: "edge-agents", device: "edge-agents" },
    },
  };
}

export function resumePayload(token: string, sessionId: string, seq: number): GatewayResume {
  return { op: GatewayOpcodes.Resume, d: { token, session_id: sessionId, seq } };
}

export function heartbeatPayload(seq: number | null): GatewayHeartbeat {
  return { op: GatewayOpcodes.Heartbeat, d: seq };
}
