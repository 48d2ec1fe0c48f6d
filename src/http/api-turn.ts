// What every API surface that starts a turn shares (the REST messages route, the OpenAI-compatible
// route, the MCP server's `chat`): one person's rate bucket, whichever of them they use; the turn
// input of a person writing straight to the agent; and what a caller is told when the room was
// reset while answering.
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { errorField, log } from "../log.ts";
import { enforceRate, type KeepAlive } from "../rate-limits/admission.ts";
import type { Attachment } from "../runtime/ports/memory.ts";
import type { TurnInput } from "../runtime/turn/turn-types.ts";
import { AppError } from "../runtime/util/errors.ts";
import { type Principal, tokenPrincipalOf } from "./app-env.ts";

/** One person's turns draw from one bucket (RATE_LIMIT_PER_USER), over any API surface. */
export function enforcePersonRate(
  env: Env,
  agentId: string,
  userId: string,
  keepAlive: KeepAlive | undefined,
): Promise<void> {
  return enforceRate(
    env,
    `user:rest:${agentId}:${userId}`,
    loadConfig(env).rateLimits.perUser,
    `user "${userId}"`,
    keepAlive,
  );
}

/** A turn a person asked for through the API: written to the agent directly, always answered. */
export function apiTurnInput(fields: {
  agentId: string;
  roomId: string;
  userId: string;
  userName?: string;
  text: string;
  attachments?: Attachment[];
  /** "rest", "openai", ... */
  source: string;
  principal: Principal;
}): TurnInput {
  return {
    turnId: crypto.randomUUID(),
    agentId: fields.agentId,
    roomId: fields.roomId,
    userId: fields.userId,
    ...(fields.userName ? { userName: fields.userName } : {}),
    text: fields.text,
    attachments: fields.attachments ?? [],
    source: fields.source,
    isDirect: true,
    mentioned: false,
    fromBot: false,
    receivedAt: Date.now(),
    principal: tokenPrincipalOf(fields.principal),
  };
}

/**
 * The room was reset mid-turn (a deploy, an eviction): its journal resumes the turn. Logged, and
 * a 503 telling the caller `whatToDo`.
 */
export function roomRestarted(
  ids: { agentId: string; roomId: string },
  error: unknown,
  whatToDo: string,
): AppError {
  log.error("room_rpc_failed", { ...ids, error: errorField(error) });
  return new AppError("upstream", 503, `the room restarted while answering; ${whatToDo}`);
}
