// Where a turn or task step came from, for the plugins (shared/plugin-port.ts): the surface's
// name, and, when the request came through a surface that can post (Discord), how to show a
// proposal the agent files there. Used by the turn queue and the agent's task object.
import type { Proposal } from "../../db/stores/proposal-store.ts";
import type { DeliveryTarget, ReplySurface } from "./reply-surface.ts";

/**
 * Declared here, as the rooms' port; the plugin API re-exports it (src/plugins/plugin-services.ts),
 * since objects import no plugin and src/durable-objects.ts hands one to the other.
 */
export interface TurnOrigin {
  /** "rest", "discord", "task", ... */
  surface: string;
  /** Posts a new proposal where the turn came from (Discord: with Approve / Deny); best effort. */
  announce?(proposal: Proposal, agentName: string): Promise<void>;
}

export function turnOrigin(
  source: string,
  surface: ReplySurface,
  delivery: DeliveryTarget | null,
): TurnOrigin {
  const post = surface.postProposal?.bind(surface);
  if (!delivery || !post) return { surface: source };
  return {
    surface: source,
    announce: (proposal, agentName) => post(delivery, { proposal, agentName }),
  };
}
