// The Hono environment every route shares: the worker's bindings, and the caller that the auth
// middleware identified (set on every route that declares a scope).
import type { Env } from "../env.ts";
import type { Scope } from "../memory/token-store.ts";
import type { RateRule } from "../runtime/token-bucket.ts";

export interface Principal {
  /** `admin-token` for ADMIN_TOKEN, else the minted token's id. */
  id: string;
  scopes: readonly Scope[];
  /** The agents it may act for; null means every agent. */
  agents: readonly string[] | null;
  /** The user-id prefix it may act as (see namespaces.ts); null means no prefix limit. */
  userPrefix: string | null;
  /** The bucket its requests draw from; null: unlimited. */
  rateRule: RateRule | null;
}

export type AppEnv = { Bindings: Env; Variables: { principal: Principal } };
