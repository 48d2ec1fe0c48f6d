// Which URLs the worker may fetch when the URL comes from outside (an MCP server, what its OAuth
// discovery advertises, a Discord attachment). https only, and every address the host stands for
// must be public: addresses are parsed (IPv4 dotted quads, IPv6 into its 8 groups) and checked
// against allow-lists of global ranges, names are resolved with DNS over HTTPS (Workers have no
// resolver) and fail closed. ALLOW_LOOPBACK_FETCH (development only) lets loopback through over
// http; operator-configured origins (a stand-in's DISCORD_API_BASE) can be trusted per use.
import { ValidationError } from "../runtime/util/errors.ts";

export type Resolver = (hostname: string) => Promise<string[]>;

export interface UrlPolicy {
  /** Development only: 127.0.0.0/8, ::1 and localhost, over http or https. */
  allowLoopback: boolean;
  resolve: Resolver;
  /** Origins the operator configured (e.g. `http://discord.test`): accepted without checks. */
  trustedOrigins?: readonly string[];
}

/** Names that never belong to a public service (RFC 6761, 6762, 8375, and cloud metadata names). */
const LOCAL_NAMES = [
  /^localhost$/,
  /\.localhost$/,
  /\.local$/,
  /\.internal$/,
  /^metadata$/,
  /\.home\.arpa$/,
  /\.localdomain$/,
  /\.lan$/,
  /\.intranet$/,
];

/** Why `url` may not be fetched, or null when it may. Resolves names; never throws. */
export async function urlRefusal(url: URL, policy: UrlPolicy): Promise<string | null> {
  if (policy.trustedOrigins?.includes(url.origin)) return null;
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return `${url.protocol} URLs are not allowed`;
  if (url.username || url.password) return "credentials in the URL are not allowed";
  // The WHATWG parser has already turned 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 into 127.0.0.1,
  // and compressed IPv6 (`[::ffff:127.0.0.1]` is `[::ffff:7f00:1]`).
  const host = url.hostname.replace(/^\[|\]$/g, "");
  // `localhost.` and `x.internal.` are the same names as without the dot.
  const name = host.replace(/\.+$/, "").toLowerCase();
  if (policy.allowLoopback && isLoopback(name)) return null;
  const literal = parseIPv4(name) ?? parseIPv6(name);
  if (literal && !isPublicAddress(name)) return `${host} is not a public address`;
  if (url.protocol !== "https:") return "only https is allowed";
  if (literal) return null;
  if (host.includes(":") || host.includes("%")) return `${host} is not a valid address`;
  if (LOCAL_NAMES.some((pattern) => pattern.test(name))) return `${host} is a local name`;
  if (!name.includes(".")) return `${host} is not a public name (no domain)`;
  let addresses: string[];
  try {
    addresses = await policy.resolve(name);
  } catch {
    return `${host} could not be resolved (DNS over HTTPS failed)`;
  }
  if (addresses.length === 0) return `${host} does not resolve`;
  if (addresses.some((address) => !isPublicAddress(address)))
    return `${host} resolves to an address that is not public`;
  return null;
}

/** For an MCP server's own URL, when it is added or connected: a 400 naming the reason. */
export async function assertSafeServerUrl(raw: string, policy: UrlPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse(raw, "it is not a valid URL");
  }
  if (url.username || url.password)
    throw refuse(raw, "credentials in the URL are not allowed; use `auth`");
  const reason = await urlRefusal(url, policy);
  if (reason)
    throw refuse(raw, reason === "only https is allowed" ? "MCP servers must use https" : reason);
  return url;
}

function refuse(raw: string, reason: string): ValidationError {
  return new ValidationError(`MCP server URL refused: ${reason}`, {
    issues: [{ path: "url", message: reason }],
    url: raw.slice(0, 200),
  });
}

/** DNS over HTTPS (RFC 8484 JSON form) through the given fetch: A and AAAA answers. */
export function dohResolver(
  fetchFn: typeof fetch,
  endpoint = "https://cloudflare-dns.com/dns-query",
): Resolver {
  return async (hostname) => {
    const lookups = ["A", "AAAA"].map(async (type) => {
      const response = await fetchFn(
        `${endpoint}?name=${encodeURIComponent(hostname)}&type=${type}`,
        { headers: { accept: "application/dns-json" } },
      );
      if (!response.ok) throw new Error(`DNS over HTTPS answered ${response.status}`);
      const body = (await response.json()) as {
        Status?: number;
        Answer?: Array<{ type: number; data: string }>;
      };
      // Type 1 is A, 28 is AAAA; CNAME records (5) are followed by the resolver and skipped here.
      return (body.Answer ?? [])
        .filter((answer) => answer.type === 1 || answer.type === 28)
        .map((answer) => answer.data);
    });
    return (await Promise.all(lookups)).flat();
  };
}

/** Remembers answers for `ttlMs` (a connection makes many requests to one host). Failures are not kept. */
export function cachedResolver(
  resolve: Resolver,
  ttlMs: number,
  now: () => number = Date.now,
): Resolver {
  const cache = new Map<string, { addresses: string[]; until: number }>();
  return async (hostname) => {
    const hit = cache.get(hostname);
    if (hit && hit.until > now()) return hit.addresses;
    const addresses = await resolve(hostname);
    if (cache.size >= 256) cache.clear();
    cache.set(hostname, { addresses, until: now() + ttlMs });
    return addresses;
  };
}

function isLoopback(name: string): boolean {
  if (name === "localhost") return true;
  const v4 = parseIPv4(name);
  if (v4) return v4[0] === 127;
  const v6 = parseIPv6(name);
  return !!v6 && v6.slice(0, 7).every((group) => group === 0) && v6[7] === 1;
}

/** True only for addresses in globally routable unicast space (fails closed on anything else). */
export function isPublicAddress(address: string): boolean {
  const v4 = parseIPv4(address);
  if (v4) return isPublicV4(v4);
  const v6 = parseIPv6(address.replace(/^\[|\]$/g, ""));
  return v6 ? isPublicV6(v6) : false;
}

/** Strict dotted decimal (what DNS answers and the URL parser produce); anything else is not IPv4. */
export function parseIPv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9]\d{0,2})$/.test(part))) return null;
  const octets = parts.map(Number);
  return octets.every((octet) => octet <= 255) ? octets : null;
}

/** The 8 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted IPv4 as two groups). */
export function parseIPv6(text: string): number[] | null {
  if (!text.includes(":") || !/^[0-9a-fA-F:.]+$/.test(text)) return null;
  let head = text;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    // A trailing dotted IPv4 (`::ffff:127.0.0.1`) is the last two groups.
    const v4 = parseIPv4(text.slice(lastColon + 1));
    if (!v4) return null;
    head = `${text.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === "") return [];
    const values = part
      .split(":")
      .map((group) => (/^[0-9a-fA-F]{1,4}$/.test(group) ? Number.parseInt(group, 16) : Number.NaN));
    return values.some(Number.isNaN) ? null : values;
  };
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  if (!left || !right) return null;
  const explicit = left.length + right.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return null;
  return [...left, ...new Array<number>(8 - explicit).fill(0), ...right];
}

function isPublicV4([a = 0, b = 0, c = 0]: number[]): boolean {
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this network, private, loopback, multicast, reserved, broadcast
  if (a === 169 && b === 254) return false; // link-local, including 169.254.169.254 (cloud metadata)
  if (a === 172 && b >= 16 && b <= 31) return false; // private
  if (a === 192 && b === 168) return false; // private
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  // IETF protocol assignments (192.0.0/24) and documentation (192.0.2/24), not all of 192.0/16:
  // the rest is ordinary public space (192.0.64/18 serves WordPress.com, 192.0.32/20 ICANN).
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false;
  if (a === 192 && b === 88 && c === 99) return false; // 6to4 relay anycast
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return false; // documentation
  return true;
}

function isPublicV6(groups: number[]): boolean {
  const [g0 = 0, g1 = 0] = groups;
  // Global unicast is 2000::/3. Everything else is refused: ::/8 (unspecified, loopback, IPv4-compatible
  // ::/96, IPv4-mapped ::ffff:0:0/96), 64:ff9b::/96 NAT64, 100::/64 discard, fc00::/7 ULA,
  // fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast.
  if (g0 < 0x2000 || g0 > 0x3fff) return false;
  if (g0 === 0x2001 && g1 < 0x0200) return false; // 2001::/23 IETF assignments, Teredo 2001::/32 included
  if (g0 === 0x2001 && g1 === 0x0db8) return false; // documentation
  if (g0 === 0x2002) return false; // 6to4: embeds an IPv4 address, possibly a private one
  if (g0 === 0x3fff && g1 < 0x1000) return false; // documentation 3fff::/20
  return true;
}
