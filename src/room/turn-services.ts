// What the room's turn driver needs from the platform, as interfaces: the runtime's turn runner,
// the room's message history, the agent's character and its tools. Built once per room runtime;
// the MCP servers an agent added at runtime are read once per agent version and isolate (shared by
// its rooms), and the character's delegates (ask_agent) are set before every turn.
import type { McpServerEntry } from "../mcp/registry.ts";
import { effectiveServers } from "../mcp/registry.ts";
import type { TurnOrigin } from "../plugins/plugin-services.ts";
import type { Character } from "../runtime/character.ts";
import type { TurnRunner } from "../runtime/turn-runner.ts";
import { createCharacterSource, type CharacterSource } from "./character-source.ts";
import type { RoomHistoryStore } from "./room-history.ts";
import type { RoomRuntime } from "./room-runtime.ts";

/** Connects the tools an agent's turn may use (its MCP servers, its plugins) before the turn runs. */
export interface ToolPreparer {
  prepare(
    agentId: string,
    version: number | null,
    character: Character,
    origin: TurnOrigin,
  ): Promise<void>;
}

export interface TurnServices {
  runner: Pick<TurnRunner, "receive" | "respondOrPause" | "afterReply">;
  history: Pick<RoomHistoryStore, "remember">;
  characters: CharacterSource;
  tools: ToolPreparer;
}

const built = new WeakMap<RoomRuntime, TurnServices>();

/** The turn services over a room runtime: the same object (and caches) for the same runtime. */
export function turnServicesFor(runtime: RoomRuntime): TurnServices {
  let services = built.get(runtime);
  if (!services) {
    const servers = (agentId: string) => runtime.mcpPlatform.servers.list(agentId);
    services = {
      runner: runtime.runner,
      history: runtime.history,
      characters: createCharacterSource(runtime.agents),
      tools: createToolPreparer(runtime.mcp, runtime.plugins, servers, runtime.delegation),
    };
    built.set(runtime, services);
  }
  return services;
}

/** The servers the character lists plus those added at runtime, as of the agent's version. */
function createToolPreparer(
  mcp: { prepare(servers: readonly McpServerEntry[]): Promise<void> },
  plugins: Pick<RoomRuntime["plugins"], "prepare">,
  agentServers: (agentId: string) => Promise<McpServerEntry[]>,
  delegation: { configure(character: Character): void },
): ToolPreparer {
  return {
    async prepare(agentId, version, character, origin) {
      plugins.prepare(character, origin);
      // ask_agent is offered, with the agents it may ask, only when the character lists delegates.
      delegation.configure(character);
      const servers = await serversAsOf(agentId, version, agentServers);
      await mcp.prepare(effectiveServers(character.settings.mcpServers, servers));
    },
  };
}

/** Agents whose runtime-added servers an isolate keeps; the least recently read go first. */
const MAX_KNOWN_AGENTS = 200;

/**
 * Per isolate, shared by every room of an agent (a new room reads nothing): adding or removing a
 * server bumps the agent's version, and the list is only used for the version it was read at.
 * A failed read is dropped, to be made again.
 */
const serversByAgent = new Map<
  string,
  { version: number | null; servers: Promise<McpServerEntry[]> }
>();

function serversAsOf(
  agentId: string,
  version: number | null,
  read: (agentId: string) => Promise<McpServerEntry[]>,
): Promise<McpServerEntry[]> {
  const known = serversByAgent.get(agentId);
  serversByAgent.delete(agentId);
  if (known?.version === version) {
    serversByAgent.set(agentId, known);
    return known.servers;
  }
  const entry = { version, servers: read(agentId) };
  serversByAgent.set(agentId, entry);
  entry.servers.catch(() => {
    if (serversByAgent.get(agentId) === entry) serversByAgent.delete(agentId);
  });
  if (serversByAgent.size > MAX_KNOWN_AGENTS) {
    const oldest = serversByAgent.keys().next().value;
    if (oldest !== undefined) serversByAgent.delete(oldest);
  }
  return entry.servers;
}
