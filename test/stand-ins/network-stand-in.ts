// A small stand-in for "the internet" behind globalThis.fetch, for the SSRF tests: DNS over HTTPS
// answers from a table of names, hosts answered by handlers, and every request recorded. Like the
// real fetch, it follows redirects itself unless the caller asked for `redirect: "manual"`, so a
// caller that does not check redirect targets is caught following one.

export interface RecordedRequest {
  method: string;
  url: string;
  host: string;
  headers: Record<string, string>;
  body: string;
}

export type HostHandler = (request: Request, url: URL) => Response | Promise<Response>;

export interface NetworkStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** DNS answers (A or AAAA by the address's form); an unknown name has none. */
  names: Map<string, string[]>;
  /** By host (`name[:port]`, or a literal address, IPv6 in brackets). */
  hosts: Map<string, HostHandler>;
  /** Every request that reached a host (DNS lookups not included). */
  readonly requests: readonly RecordedRequest[];
  /** Requests that reached one of these hosts. */
  requestsTo(...hosts: string[]): RecordedRequest[];
  dnsLookups: string[];
  reset(): void;
}

export const DOH_HOST = "cloudflare-dns.com";
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** `fallback` gets whatever no handler claims (loopback peers, the model stand-in). */
export function createNetworkStandIn(fallback: typeof fetch): NetworkStandIn {
  const requests: RecordedRequest[] = [];
  const standIn: NetworkStandIn = {
    names: new Map(),
    hosts: new Map(),
    dnsLookups: [],
    get requests() {
      return requests;
    },
    requestsTo: (...hosts) => requests.filter((request) => hosts.includes(request.host)),
    reset() {
      requests.length = 0;
      standIn.dnsLookups.length = 0;
      standIn.names.clear();
      standIn.hosts.clear();
    },
    async fetch(input, init) {
      let request = new Request(input, init);
      for (let hop = 0; hop <= 20; hop++) {
        const url = new URL(request.url);
        if (url.host === DOH_HOST) return dns(standIn, url);
        const handler = standIn.hosts.get(url.host);
        if (!handler) return fallback(request);
        const body =
          request.method === "GET" || request.method === "HEAD" ? "" : await request.clone().text();
        requests.push({
          method: request.method,
          url: url.href,
          host: url.host,
          headers: Object.fromEntries(request.headers),
          body,
        });
        const response = await handler(request, url);
        const location = response.headers.get("location");
        if (!REDIRECTS.has(response.status) || !location || request.redirect === "manual")
          return response;
        if (request.redirect === "error") throw new TypeError("redirect refused (redirect: error)");
        // What fetch does: 303 (and 301/302 after a POST) become a GET without a body.
        const toGet =
          response.status === 303 ||
          ((response.status === 301 || response.status === 302) && request.method === "POST");
        request = new Request(new URL(location, url), {
          method: toGet ? "GET" : request.method,
          headers: request.headers,
          body: toGet || body === "" ? undefined : body,
          redirect: request.redirect,
        });
      }
      throw new TypeError("too many redirects");
    },
  };
  return standIn;
}

function dns(standIn: NetworkStandIn, url: URL): Response {
  const name = (url.searchParams.get("name") ?? "").replace(/\.$/, "");
  const type = url.searchParams.get("type");
  standIn.dnsLookups.push(`${name} ${type}`);
  const addresses = (standIn.names.get(name) ?? []).filter(
    (address) => (type === "AAAA") === address.includes(":"),
  );
  const Answer = addresses.map((data) => ({ name, type: type === "AAAA" ? 28 : 1, TTL: 60, data }));
  return Response.json(
    { Status: 0, Answer },
    { headers: { "content-type": "application/dns-json" } },
  );
}
