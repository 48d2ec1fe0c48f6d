// How the worker reaches the Gateway: the coordinating object (named by the application id), and
// only when DISCORD_GATEWAY=true with a bot token. `startGateway` runs once per isolate from the
// first request (and from every cron run): the coordinator starts every shard that is not running.
import { loadConfig } from "../../../config.ts";
import type { Env } from "../../../env.ts";
import { errorField, log } from "../../../log.ts";
import type { DiscordGatewayRpc } from "../../../rpc.ts";

let startedInIsolate = false;

export function gatewayObject(env: Env): DurableObjectStub<DiscordGatewayRpc> | null {
  try {
    if (!env.GATEWAY || !env.DISCORD_BOT_TOKEN || !loadConfig(env).discordGateway) return null;
  } catch {
    // A configuration error is reported by the request itself.
    return null;
  }
  return env.GATEWAY.getByName(coordinatorName(env));
}

/** The object that plans the shards; the shards themselves are `shard:<i>/<n>` (shard-plan.ts). */
export function coordinatorName(env: Env): string {
  return env.DISCORD_APPLICATION_ID || "discord";
}

/** Makes sure the connection is up; `always` for the cron (the isolate's flag is for requests). */
export function startGateway(env: Env, ctx: ExecutionContext, always = false): void {
  if (startedInIsolate && !always) return;
  const gateway = gatewayObject(env);
  if (!gateway) return;
  startedInIsolate = true;
  ctx.waitUntil(
    gateway.start().then(
      () => undefined,
      (error: unknown) => {
        startedInIsolate = false;
        log.error("gateway_start_failed", { error: errorField(error) });
      },
    ),
  );
}
