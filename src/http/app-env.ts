// The Hono environment every route shares: the worker's bindings, and the caller that the auth
// middleware identified (set on every route that declares a scope).
import type { Env } from "../env.ts";
import type { TokenPrincipal } from "../runtime/access/principal.ts";
import type { RateRule } from "../rate-limits/token-bucket.ts";

/** A REST caller: its token as a principal (src/runtime/access/), and its rate bucket. */
export interface Principal extends TokenPrincipal {
  /** The bucket its requests draw from; null: unlimited. */
  rateRule: RateRule | null;
}

/** The principal as it travels with a turn or task: plain data, without the rate rule. */
export function tokenPrincipalOf(principal: Principal): TokenPrincipal {
  const { kind, id, scopes, agents, userPrefix } = principal;
  return { kind, id, scopes: [...scopes], agents: agents ? [...agents] : null, userPrefix };
}

export type AppEnv = { Bindings: Env; Variables: { principal: Principal } };
