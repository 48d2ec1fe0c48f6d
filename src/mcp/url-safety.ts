// Server-side request forgery guard for MCP server URLs. In production a server must be https and
// every address its name resolves to must be public: no private, loopback, link-local, CGNAT,
// multicast or cloud-metadata address. Loopback over http is allowed only with MCP_ALLOW_LOOPBACK
// (tests and `npm run dev`). Names are resolved with DNS over HTTPS (Workers have no resolver);
// the check runs when a server is added and on every connect, and fails closed.
import { ValidationError } from "../runtime/errors.ts";

export type Resolver = (hostname: string) => Promise<string[]>;

export interface UrlPolicy {
  allowLoopback: boolean;
  resolve: Resolver;
}

const BLOCKED_NAMES = [/^localhost$/i, /\.localhost$/i, /\.local$/i, /\.internal$/i, /^metadata$/i, /\.home\.arpa$/i];

export async function assertSafeServerUrl(raw: string, policy: UrlPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse(raw, "it is not a valid URL");
  }
  if (url.username || url.password) throw refuse(raw, "credentials in the URL are not allowed; use `auth`");
  // WHATWG parsing has already turned 2130706433, 0x7f.1 and 127.1 into 127.0.0.1.
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const literal = ipVersion(host);
  if (policy.allowLoopback && (isLoopback(host) || /^localhost$/i.test(host))) return url;
  if (url.protocol !== "https:") throw refuse(raw, "MCP servers must use https");
  if (literal) {
    if (!isPublicAddress(host)) throw refuse(raw, `${host} is not a public address`);
    return url;
  }
  if (BLOCKED_NAMES.some((pattern) => pattern.test(host))) throw refuse(raw, `${host} is a local name`);
  let addresses: string[];
  try {
    addresses = await policy.resolve(host);
  } catch (error) {
    throw refuse(raw, `${host} could not be resolved (${error instanceof Error ? error.message : String(error)})`);
  }
  if (addresses.length === 0) throw refuse(raw, `${host} does not resolve`);
  const private_ = addresses.find((address) => !isPublicAddress(address));
  if (private_) throw refuse(raw, `${host} resolves to ${private_}, which is not a public address`);
  return url;
}

function refuse(raw: string, reason: string): ValidationError {
  return new ValidationError(`MCP server URL refused: ${reason}`, { issues: [{ path: "url", message: reason }], url: raw.slice(0, 200) });
}

/** DNS over HTTPS (RFC 8484 JSON form) through the given fetch: A and AAAA answers. */
export function dohResolver(fetchFn: typeof fetch, endpoint = "https://cloudflare-dns.com/dns-query"): Resolver {
  return async (hostname) => {
    const lookups = ["A", "AAAA"].map(async (type) => {
      const response = await fetchFn(`${endpoint}?name=${encodeURIComponent(hostname)}&type=${type}`, { headers: { accept: "application/dns-json" } });
      if (!response.ok) throw new Error(`DNS over HTTPS answered ${response.status}`);
      const body = (await response.json()) as { Answer?: Array<{ type: number; data: string }> };
      // Type 1 is A, 28 is AAAA; CNAME records (5) are followed by the resolver and skipped here.
      return (body.Answer ?? []).filter((answer) => answer.type === 1 || answer.type === 28).map((answer) => answer.data);
    });
    return (await Promise.all(lookups)).flat();
  };
}

function ipVersion(host: string): 4 | 6 | null {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) return 4;
  if (host.includes(":")) return 6;
  return null;
}

function isLoopback(host: string): boolean {
  return /^127\./.test(host) || host === "::1" || host === "0:0:0:0:0:0:0:1";
}

export function isPublicAddress(address: string): boolean {
  const version = ipVersion(address);
  if (version === 4) return isPublicV4(address.split(".").map(Number));
  if (version === 6) return isPublicV6(address.toLowerCase());
  return false;
}

function isPublicV4([a = 0, b = 0]: number[]): boolean {
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this network, private, loopback, multicast/reserved
  if (a === 169 && b === 254) return false; // link-local, including 169.254.169.254 metadata
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  if (a === 192 && b === 0) return false; // IETF protocol assignments, documentation
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  return true;
}

function isPublicV6(address: string): boolean {
  if (address === "::" || address === "::1") return false;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(address);
  if (mapped) return isPublicV4(mapped[1]!.split(".").map(Number));
  if (/^::ffff:/.test(address)) return false; // mapped, in hex form: refuse rather than decode
  const first = Number.parseInt(address.split(":")[0] || "0", 16);
  if ((first & 0xfe00) === 0xfc00) return false; // unique local fc00::/7
  if ((first & 0xffc0) === 0xfe80) return false; // link-local fe80::/10
  if ((first & 0xff00) === 0xff00) return false; // multicast
  if (address.startsWith("64:ff9b:") || address.startsWith("2001:db8:")) return false; // NAT64, documentation
  return true;
}
