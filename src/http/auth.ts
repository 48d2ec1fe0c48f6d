// Bearer-token authentication and scope checks. Every protected route spreads `guard(scope)` into
// its createRoute definition, so the scope it declares in /openapi.json and the scope it enforces
// are one value. Each authenticated request then draws from its token's rate bucket (admitted at
// once, charged after: src/rate-limits/admission.ts; a turn's route draws it with the person's,
// guardTurn). ADMIN_TOKEN is compared as SHA-256 digests in constant time; minted tokens are looked up by hash, cached per isolate for a short time
// (known-tokens.ts). Error messages never echo the presented token.
import type { Context, MiddlewareHandler } from "hono";
import { loadConfig } from "../config.ts";
import { stores } from "../db/stores/index.ts";
import {
  LAST_USED_RESOLUTION_MS,
  TOKEN_PREFIX,
  type Scope,
  type TokenRecord,
} from "../db/stores/token-store.ts";
import { findToken, noteTokenUse } from "./known-tokens.ts";
import { ForbiddenError, NotConfiguredError, UnauthorizedError } from "../runtime/util/errors.ts";
import { parseRateRule } from "../rate-limits/token-bucket.ts";
import type { AppEnv, Principal } from "./app-env.ts";
import { admit, type KeepAlive } from "../rate-limits/admission.ts";
import { tokenBucket } from "../rate-limits/buckets.ts";
import { errorField, log } from "../log.ts";
import { sha256 } from "../runtime/util/hashing.ts";
import {
  ADMIN_TOKEN_ID,
  hasScope as tokenHasScope,
  mayActFor as tokenMayActFor,
} from "../runtime/access/index.ts";

export const ADMIN_PRINCIPAL_ID = ADMIN_TOKEN_ID;

/** What a route needs: the OpenAPI security requirement and the middleware enforcing it. */
export function guard(scope: Scope) {
  return {
    security: [{ bearerAuth: [scope] }],
    middleware: [requireScope(scope)],
  };
}

/**
 * As guard, for a route that starts a turn: the token's bucket is not drawn from here but with
 * the person's, in one admission before the turn (admitTurn in api-turn.ts).
 */
export function guardTurn(scope: Scope) {
  return {
    security: [{ bearerAuth: [scope] }],
    middleware: [checkScope(async () => null, [scope], false)],
  };
}

/**
 * For a route whose scope depends on what it acts on (deciding a proposal: `agents:write` for a
 * skill, `tools:write` for a tool): any of `scopes` passes here, and the handler checks the one it
 * needs with assertScope. The document lists each as an alternative, the first being the usual.
 */
export function guardAnyOf(scopes: readonly [Scope, ...Scope[]]) {
  return {
    security: scopes.map((scope) => ({ bearerAuth: [scope] })),
    middleware: [requireScope(...scopes)],
  };
}

export function assertScope(principal: Principal, scope: Scope, why: string): void {
  if (!hasScope(principal, scope))
    throw new ForbiddenError(
      `this token lacks the \`${scope}\` scope, which ${why} needs (it has: ${principal.scopes.join(", ")})`,
    );
}

export function requireScope(...scopes: [Scope, ...Scope[]]): MiddlewareHandler<AppEnv> {
  return requireScopeWith(async () => null, ...scopes);
}

/**
 * As requireScope, for a route that also takes credentials of its own (the MCP server's OAuth
 * access tokens): `resolve` names the principal they stand for, or null to read the header as an
 * API token. Either way the principal then passes the same rate bucket, scope and agent checks.
 */
export function requireScopeWith(
  resolve: (c: Context<AppEnv>) => Promise<Principal | null>,
  ...scopes: [Scope, ...Scope[]]
): MiddlewareHandler<AppEnv> {
  return checkScope(resolve, scopes, true);
}

function checkScope(
  resolve: (c: Context<AppEnv>) => Promise<Principal | null>,
  scopes: readonly Scope[],
  drawFromToken: boolean,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = (await resolve(c)) ?? (await authenticate(c));
    if (drawFromToken) await admit(c.env, [tokenBucket(principal)], keepAliveOf(c));
    if (!scopes.some((scope) => hasScope(principal, scope))) {
      throw new ForbiddenError(
        `this token lacks the \`${scopes.join("` or `")}\` scope (it has: ${principal.scopes.join(", ")})`,
      );
    }
    // Routes under /agents/:agentId are checked here; routes taking agentId in a body or query
    // string call assertMayActFor themselves.
    const agentId = c.req.param("agentId");
    if (agentId !== undefined) assertMayActFor(principal, agentId);
    c.set("principal", principal);
    await next();
  };
}

export function hasScope(principal: Principal, scope: Scope): boolean {
  return tokenHasScope(principal, scope);
}

export function mayActFor(principal: Principal, agentId: string): boolean {
  return tokenMayActFor(principal, agentId);
}

export function assertMayActFor(principal: Principal, agentId: string): void {
  if (!mayActFor(principal, agentId))
    throw new ForbiddenError(`this token may not act for agent "${agentId}"`);
}

/** The bearer credential of the Authorization header, if it has the RFC 6750 shape. */
export function bearerOf(c: Context<AppEnv>): string | null {
  const header = c.req.header("authorization") ?? "";
  const match = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

async function authenticate(c: Context<AppEnv>): Promise<Principal> {
  const given = bearerOf(c);
  if (!given) throw new UnauthorizedError("send an API token as `Authorization: Bearer <token>`");
  return authenticateApiToken(c, given);
}

/** An API token (ADMIN_TOKEN or a minted one) given some other way than the header: a form. */
export async function authenticateApiToken(c: Context<AppEnv>, given: string): Promise<Principal> {
  const adminToken = loadConfig(c.env).adminToken;
  if (given.startsWith(TOKEN_PREFIX)) {
    const record = await findToken(c.env, given);
    if (record || !adminToken) return fromRecord(c, record);
  }
  if (!adminToken) {
    throw new NotConfiguredError(
      "ADMIN_TOKEN is not set; set it (wrangler secret put ADMIN_TOKEN, or .dev.vars locally) to use the API",
    );
  }
  if (!(await sameSecret(given, adminToken)))
    throw new UnauthorizedError("the bearer token is not valid");
  return {
    kind: "token",
    id: ADMIN_PRINCIPAL_ID,
    scopes: ["admin"],
    agents: null,
    userPrefix: null,
    rateRule: loadConfig(c.env).rateLimits.perToken,
  };
}

function fromRecord(c: Context<AppEnv>, record: TokenRecord | null): Principal {
  if (!record) throw new UnauthorizedError("the bearer token is not valid");
  const now = Date.now();
  if (record.revokedAt !== null) throw new UnauthorizedError("the bearer token has been revoked");
  if (record.expiresAt !== null && record.expiresAt <= now)
    throw new UnauthorizedError("the bearer token has expired");
  if (record.lastUsedAt === null || now - record.lastUsedAt >= LAST_USED_RESOLUTION_MS) {
    noteTokenUse(record.id, now);
    const touched = stores(c.env)
      .tokens.touch(record.id, now)
      .catch((error: unknown) =>
        log.warn("token_touch_failed", { tokenId: record.id, error: errorField(error) }),
      );
    waitUntil(c, touched);
  }
  // The rule was validated when the token was minted.
  const rateRule =
    record.rateLimit === null
      ? loadConfig(c.env).rateLimits.perToken
      : parseRateRule(record.rateLimit);
  return {
    kind: "token",
    id: record.id,
    scopes: record.scopes,
    agents: record.agents,
    userPrefix: record.userPrefix,
    rateRule,
  };
}

function waitUntil(c: Context<AppEnv>, promise: Promise<unknown>): void {
  keepAliveOf(c)?.(promise);
}

/** The request's waitUntil; undefined without an execution context (a direct app.fetch in a script). */
export function keepAliveOf(c: Context<AppEnv>): KeepAlive | undefined {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work);
  } catch {
    return undefined;
  }
}

async function sameSecret(given: string, expected: string): Promise<boolean> {
  // Equal-length digests, so the comparison's time says nothing about the token's length.
  const [a, b] = await Promise.all([sha256(given), sha256(expected)]);
  return crypto.subtle.timingSafeEqual(a, b);
}
