// Builds the data-access objects a request needs from its bindings. Routes call these, never
// `env.DB` directly, so D1 access stays in src/memory/.
import { drizzle } from "drizzle-orm/d1";
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { createAgentStore, type AgentStore } from "../memory/agent-store.ts";
import { databaseReachable as ping } from "../memory/ping.ts";
import { createSecretBox } from "../memory/secret-box.ts";

export function agentStore(env: Env): AgentStore {
  const { secretsKey } = loadConfig(env);
  return createAgentStore(drizzle(env.DB), secretsKey ? createSecretBox(secretsKey) : null);
}

export function databaseReachable(env: Env): Promise<boolean> {
  return ping(drizzle(env.DB));
}
