// The guarded fetch bound to the worker's environment: the loopback switch from
// ALLOW_LOOPBACK_FETCH, names resolved with DNS over HTTPS (remembered for a minute per binding),
// and the caps of each use. Every outbound request whose URL comes from outside is made through
// `outboundFetch`; new features (a web reader) choose their caps here.
import { loadConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { createGuardedFetch, type FetchCaps } from "./guarded-fetch.ts";
import { cachedResolver, dohResolver, type UrlPolicy } from "./url-safety.ts";

const DNS_CACHE_MS = 60_000;

export const OUTBOUND_CAPS = {
  /**
   * MCP transports. A JSON answer must be complete within the longest tool timeout (120 s) plus a
   * margin; an event stream must send its headers in that time, then stays open for the session.
   */
  mcp: { timeoutMs: 130_000, maxBytes: 8 * 1024 * 1024, streams: true },
  /** OAuth discovery, registration, code exchange and refresh: small JSON documents. */
  oauth: { timeoutMs: 10_000, maxBytes: 256 * 1024, streams: false },
  /** The web plugin (read_url, web_search): a page or a search answer, read whole. */
  web: { timeoutMs: 10_000, maxBytes: 2 * 1024 * 1024, streams: false },
} as const satisfies Record<string, FetchCaps>;

export interface OutboundOptions {
  /** Origins the operator configured for this use (a stand-in's DISCORD_API_BASE): not checked. */
  trustedOrigins?: readonly string[];
  /** The network (tests inject one); default globalThis.fetch, looked up at call time. */
  fetch?: typeof fetch;
}

/** globalThis.fetch looked up at call time, so tests that replace it are honoured. */
export const network: typeof fetch = (input, init) => fetch(input, init);

/** The rules for one binding: the loopback switch, DNS over HTTPS (cached), trusted origins. */
export function outboundPolicy(env: Env, options: OutboundOptions = {}): UrlPolicy {
  return {
    allowLoopback: loadConfig(env).allowLoopbackFetch,
    resolve: cachedResolver(dohResolver(options.fetch ?? network), DNS_CACHE_MS),
    trustedOrigins: options.trustedOrigins ?? [],
  };
}

export function outboundFetch(
  env: Env,
  caps: FetchCaps,
  options: OutboundOptions = {},
): typeof fetch {
  return createGuardedFetch({
    fetch: options.fetch ?? network,
    policy: outboundPolicy(env, options),
    caps,
  });
}
