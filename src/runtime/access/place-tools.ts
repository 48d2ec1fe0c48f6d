// The tools a chat place allows, as a tool host: what a task's steps (and anything else that runs
// tools under a place) see and may call. Its own file so the policy itself (place-policy.ts)
// imports no port: the ports name the policy, not the other way round.
import type { ToolHost } from "../ports/tools.ts";
import { type PlacePolicy, placeAllowsTool, placeToolRefusal } from "./place-policy.ts";

/**
 * The tools a place allows, as a host: those it does not are neither listed nor callable, so a
 * model that names one anyway (it was not offered) is refused at the call, not only at the list.
 */
export function placeToolHost(host: ToolHost, place: PlacePolicy | null | undefined): ToolHost {
  if (!place || (!place.tools && !place.withheldTools)) return host;
  return {
    list: async () => (await host.list()).filter((tool) => placeAllowsTool(place, tool.name)),
    ...(host.sources ? { sources: () => host.sources?.() ?? [] } : {}),
    call: async (name, args, ctx) =>
      placeAllowsTool(place, name)
        ? host.call(name, args, ctx)
        : { ok: false, error: placeToolRefusal(name) },
  };
}
