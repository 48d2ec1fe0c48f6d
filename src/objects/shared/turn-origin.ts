// Where a turn or task step came from, for the plugins (src/plugins/plugin-services.ts): the
// surface's name, and, when the request came through a surface that can post (Discord), how to
// show a proposal the agent files there. Used by the turn queue and the agent's task object.
import type { TurnOrigin } from "../../plugins/plugin-services.ts";
import type { DeliveryTarget, ReplySurface } from "./reply-surface.ts";

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
