// The worker's required bindings and nothing else: for tests that build a fresh env object to
// parse a handful of variables with loadConfig (which caches per env object).
import { env } from "cloudflare:workers";
import type { Env } from "../../src/env.ts";

export type RequiredBindings = Pick<
  Env,
  "DB" | "ROOMS" | "LIMITS" | "TASKS" | "PUBLISHER" | "SCHEMA" | "MEDIA" | "OAUTH_KV"
>;

export function requiredBindings(): RequiredBindings {
  return {
    DB: env.DB,
    ROOMS: env.ROOMS,
    LIMITS: env.LIMITS,
    TASKS: env.TASKS,
    PUBLISHER: env.PUBLISHER,
    SCHEMA: env.SCHEMA,
    MEDIA: env.MEDIA,
    OAUTH_KV: env.OAUTH_KV,
  };
}
