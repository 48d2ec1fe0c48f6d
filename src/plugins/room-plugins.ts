// The plugins of one agent's Durable Objects (its rooms, its task object), bound to the worker's
// environment: the registry of src/plugins/index.ts, the guarded fetch with the web caps, worker
// variables by declared name only, and the host's services over D1. Also the proposal desk the
// API and Discord decide with. This is the only file of src/plugins/ that sees the env.
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { mediaPostStore } from "../clients/instagram/platform.ts";
import { loadRegistry, registryServers } from "../mcp-registry.ts";
import { agentData, stores } from "../db/stores/index.ts";
import { OUTBOUND_CAPS, outboundFetch } from "../net/outbound.ts";
import type { Character } from "../runtime/character.ts";
import type { Clock } from "../runtime/ports/events.ts";
import type { MemoryStore } from "../runtime/ports/memory.ts";
import type { ToolDefinition } from "../runtime/ports/tools.ts";
import { createHostServices } from "./host-services.ts";
import { PLUGINS } from "./index.ts";
import type { PluginDeployment } from "./plugin-api.ts";
import { createPluginHost, type PluginHost } from "./plugin-host.ts";
import { createProposalDesk, type ProposalDesk } from "./proposal-desk.ts";

export function pluginDeployment(env: Env): PluginDeployment {
  return { instagram: loadConfig(env).instagram !== null };
}

export function createRoomPlugins(
  env: Env,
  agentId: string,
  deps: { memory: MemoryStore; clock: Clock },
): PluginHost {
  const deployment = pluginDeployment(env);
  const backends = stores(env);
  return createPluginHost({
    agentId,
    plugins: PLUGINS,
    deployment,
    memory: deps.memory,
    clock: deps.clock,
    fetch: outboundFetch(env, OUTBOUND_CAPS.web),
    secret: (name) => {
      const value = (env as unknown as Record<string, unknown>)[name];
      return typeof value === "string" && value.length > 0 ? value : undefined;
    },
    services: createHostServices({
      agentId,
      skills: backends.skills,
      servers: backends.mcpServers,
      desk: proposalDesk(env),
      catalog: loadRegistry,
      instagram: deployment.instagram
        ? {
            posts: mediaPostStore(env),
            startPublishing: (postId) => env.PUBLISHER.getByName(agentId).publishPost(postId),
          }
        : null,
    }),
  });
}

/** The plugin tools this agent is offered now (for GET /agents/:agentId/tools and Discord /tools). */
export async function pluginTools(
  env: Env,
  agentId: string,
  character: Character,
): Promise<ToolDefinition[]> {
  const host = createRoomPlugins(env, agentId, {
    memory: (await agentData(env, agentId)).memories,
    clock: { now: () => Date.now() },
  });
  host.prepare(character, { surface: "rest" });
  return host.tools.list();
}

export function proposalDesk(env: Env): ProposalDesk {
  const backends = stores(env);
  return createProposalDesk({
    proposals: backends.proposals,
    skills: backends.skills,
    servers: backends.mcpServers,
    agents: backends.agents,
    catalog: registryServers,
    now: () => Date.now(),
  });
}
