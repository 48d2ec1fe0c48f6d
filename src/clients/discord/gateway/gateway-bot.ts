// Where to connect: `GET {DISCORD_API_BASE}/gateway/bot` with the bot token answers the Gateway
// URL, the recommended shard count and the session-start budget. The base is the operator's own
// setting, so this is a plain fetch; the URL it answers must be wss:// (ws:// only to loopback in
// development and tests, where ALLOW_LOOPBACK_FETCH is on).
import type { Env } from "../../../env.ts";
import { DEFAULT_DISCORD_API_BASE } from "../rest.ts";
import { GatewayBotInfo } from "./protocol.ts";

const GATEWAY_BOT_TIMEOUT_MS = 10_000;

export class GatewayBotError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "GatewayBotError";
    this.status = status;
  }
}

export async function fetchGatewayBot(env: Env): Promise<GatewayBotInfo> {
  const base = (env.DISCORD_API_BASE || DEFAULT_DISCORD_API_BASE).replace(/\/+$/, "");
  const response = await fetch(`${base}/gateway/bot`, {
    headers: { authorization: `Bot ${env.DISCORD_BOT_TOKEN ?? ""}` },
    signal: AbortSignal.timeout(GATEWAY_BOT_TIMEOUT_MS),
  });
  if (!response.ok) {
    await response.body?.cancel();
    // The body is Discord's; only the status goes into the error (and the logs).
    throw new GatewayBotError(response.status, `GET /gateway/bot answered ${response.status}`);
  }
  const parsed = GatewayBotInfo.safeParse(await response.json());
  if (!parsed.success) throw new GatewayBotError(502, "GET /gateway/bot answered an unknown shape");
  return parsed.data;
}

export function gatewayUrlAllowed(url: string, allowLoopback: boolean): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol === "wss:") return true;
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
  return allowLoopback && parsed.protocol === "ws:" && loopback;
}
