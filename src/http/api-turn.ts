// What every API surface that starts a turn shares (the REST messages route, the OpenAI-compatible
// route, the MCP server's `chat`): one person's rate bucket, whichever of them they use; the turn
// input of a person writing straight to the agent; and what a caller is told when the room was
// reset while answering.
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { errorField, log } from "../log.ts";
import type { Context } from "hono";
import { admit, type KeepAlive } from "../rate-limits/admission.ts";
import { personBucket, tokenBucket } from "../rate-limits/buckets.ts";
import type { Attachment } from "../runtime/ports/memory.ts";
import type { TurnInput } from "../runtime/turn/turn-types.ts";
import { AppError } from "../runtime/util/errors.ts";
import { type AppEnv, type Principal, tokenPrincipalOf } from "./app-env.ts";
import { keepAliveOf } from "./auth.ts";

/**
 * The one admission before a REST or OpenAI-compatible turn (routes guarded by guardTurn): the
 * token's bucket and the person's, refused (429) if either is empty, drawn from together.
 */
export function admitTurn(c: Context<AppEnv>, agentId: string, userId: string): Promise<void> {
  const principal = c.get("principal");
  const person = personBucket(
    { kind: "api", agentId, userId },
    loadConfig(c.env).rateLimits.perUser,
  );
  return admit(c.env, [tokenBucket(principal), person], keepAliveOf(c));
}

/**
 * One person's turns draw from one bucket (RATE_LIMIT_PER_USER), over any API surface; for a
 * caller whose token was drawn from already (the MCP server's `chat`, one tool of a request).
 */
export function enforcePersonRate(
  env: Env,
  agentId: string,
  userId: string,
  keepAlive: KeepAlive | undefined,
): Promise<void> {
  const rule = loadConfig(env).rateLimits.perUser;
  return admit(env, [personBucket({ kind: "api", agentId, userId }, rule)], keepAlive);
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
