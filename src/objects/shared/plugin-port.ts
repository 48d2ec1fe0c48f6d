// The agent's plugins as its objects see them: tools, context providers and evaluators, prepared
// with the character and the turn's origin before each turn or task step. The deployment's own
// (src/plugins/room-plugins.ts) are handed in by src/durable-objects.ts, so src/objects/ imports
// no plugin, nor, through one, a client.
import type { Env } from "../../env.ts";
import type { Evaluator } from "../../runtime/after-reply/evaluators.ts";
import type { Character } from "../../runtime/character.ts";
import type { Provider } from "../../runtime/context/compose-state.ts";
import type { Clock } from "../../runtime/ports/events.ts";
import type { MemoryStore } from "../../runtime/ports/memory.ts";
import type { ToolHost } from "../../runtime/ports/tools.ts";
import { combineToolHosts } from "../../runtime/turn/builtin-tools.ts";
import type { TurnOrigin } from "./turn-origin.ts";

export interface RoomPlugins {
  tools: ToolHost;
  providers: Provider[];
  evaluators: Evaluator[];
  /** Before a turn or task step: the character of this turn, and where the turn came from. */
  prepare(character: Character, origin: TurnOrigin): void;
}

/** Builds one agent's plugins over the room's memory and clock. */
export type RoomPluginsFactory = (
  env: Env,
  agentId: string,
  deps: { memory: MemoryStore; clock: Clock },
) => RoomPlugins;

/** For a runtime that runs no turn (the PostPublisher's captions): the agent gets no plugin. */
export const NO_PLUGINS: RoomPluginsFactory = () => ({
  tools: combineToolHosts([]),
  providers: [],
  evaluators: [],
  prepare: () => undefined,
});
