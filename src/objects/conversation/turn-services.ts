// What the room's turn queue needs from the platform, as interfaces: the runtime's turn runner,
// the room's message history, the agent's character and its tools. Built once per room runtime;
// the MCP servers an agent added at runtime are read once per character version and isolate
// (src/mcp/agent-servers.ts), and the character's delegates (ask_agent) are set before every turn.
import type { McpServerEntry } from "../../mcp-registry.ts";
import { agentServersOf } from "../../mcp/agent-servers.ts";
import { effectiveServers } from "../../mcp-registry.ts";
import type { TurnOrigin } from "../shared/turn-origin.ts";
import type { Character } from "../../runtime/character.ts";
import type { TurnRunner } from "../../runtime/turn/turn-runner.ts";
import { createCharacterSource, type CharacterSource } from "../shared/character-source.ts";
import type { RoomHistoryStore } from "./history-cache.ts";
import type { RoomRuntime } from "../shared/agent-wiring.ts";

/** Connects the tools an agent's turn may use (its MCP servers, its plugins) before the turn runs. */
export interface ToolPreparer {
  prepare(agentId: string, character: Character, origin: TurnOrigin): Promise<void>;
}

export interface TurnServices {
  runner: Pick<TurnRunner, "receive" | "respondOrPause" | "afterReply" | "placeBudgetUsed">;
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
    async prepare(agentId, character, origin) {
      plugins.prepare(character, origin);
      // ask_agent is offered, with the agents it may ask, only when the character lists delegates.
      delegation.configure(character);
      const servers = await agentServersOf(character, () => agentServers(agentId));
      await mcp.prepare(effectiveServers(character.settings.mcpServers, servers));
    },
  };
}
