// Every range and name docs/security.md lists as never fetched (src/net/url-safety.ts), at its
// edges: the first and last address and one inside are refused, as a literal and as a DNS answer,
// while the neighbours just outside (when no other listed range holds them) pass. Ranges are IANA's
// special-purpose registries (RFC 6890); names RFC 6761, 6762 and 8375 and common private suffixes.
import { describe, expect, it } from "vitest";
import { isPublicAddress, urlRefusal, type UrlPolicy } from "../../src/net/url-safety.ts";

/** IPv4: what docs/security.md lists ("224/4 and above" is 224.0.0.0/3). */
const REFUSED_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/3",
];

/** IPv6: everything outside 2000::/3, and within it the listed blocks. */
const REFUSED_V6 = [
  "::/3",
  "4000::/2",
  "8000::/1",
  "2001::/23",
  "2001:db8::/32",
  "2002::/16",
  "3fff::/20",
  // Named inside the ranges above, listed for their own edges.
  "::ffff:0:0/96",
  "64:ff9b::/96",
  "100::/64",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
];

interface Range {
  cidr: string;
  v6: boolean;
  first: bigint;
  last: bigint;
}

function v4Value(text: string): bigint {
  return text.split(".").reduce((value, octet) => (value << 8n) | BigInt(octet), 0n);
}

function v6Value(text: string): bigint {
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [
    ...left,
    ...new Array<string>(8 - left.length - right.length).fill("0"),
    ...right,
  ];
  return groups.reduce((value, group) => (value << 16n) | BigInt(`0x${group}`), 0n);
}

function parseRange(cidr: string): Range {
  const [address = "", bits = ""] = cidr.split("/");
  const v6 = address.includes(":");
  const width = v6 ? 128n : 32n;
  const first = v6 ? v6Value(address) : v4Value(address);
  return { cidr, v6, first, last: first + (1n << (width - BigInt(bits))) - 1n };
}

const RANGES = [...REFUSED_V4, ...REFUSED_V6].map(parseRange);

function v4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join(".");
}

function v6Text(value: bigint): string {
  return [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n]
    .map((shift) => ((value >> shift) & 0xffffn).toString(16))
    .join(":");
}

const text = (v6: boolean, value: bigint) => (v6 ? v6Text(value) : v4Text(value));
const urlHost = (v6: boolean, value: bigint) => (v6 ? `[${v6Text(value)}]` : v4Text(value));
const refusedBySome = (v6: boolean, value: bigint) =>
  RANGES.some((range) => range.v6 === v6 && range.first <= value && value <= range.last);

/** First, last and middle of each range. */
const edges = RANGES.flatMap((range) =>
  [range.first, range.last, (range.first + range.last) / 2n].map((value) => ({
    cidr: range.cidr,
    v6: range.v6,
    value,
  })),
);

/** The addresses just outside each range that no listed range holds: these must pass. */
const neighbours = RANGES.flatMap((range) =>
  [range.first - 1n, range.last + 1n]
    .filter((value) => value >= 0n && value < 1n << (range.v6 ? 128n : 32n))
    .filter((value) => !refusedBySome(range.v6, value))
    .map((value) => ({ cidr: range.cidr, v6: range.v6, value })),
);

/** Every name resolves to a public address, so only the rule under test can refuse. */
function resolvingTo(addresses: string[]): UrlPolicy {
  return { allowLoopback: false, resolve: async () => addresses };
}
const EVERY_NAME_PUBLIC = resolvingTo(["93.184.216.34"]);

describe("IP literals: every listed range is refused at its edges, its neighbours pass", () => {
  it("refuses the first, last and middle address of each range", async () => {
    for (const { cidr, v6, value } of edges) {
      const host = urlHost(v6, value);
      expect(isPublicAddress(text(v6, value)), `${host} in ${cidr}`).toBe(false);
      expect(
        await urlRefusal(new URL(`https://${host}/`), EVERY_NAME_PUBLIC),
        `${host} in ${cidr}`,
      ).toMatch(/is not a public address/);
    }
  });

  it("lets through the public neighbours just outside each range", async () => {
    // Only ranges inside the refused catch-alls lack a public neighbour; a test of none proves nothing.
    const withNeighbours = new Set(neighbours.map((n) => n.cidr));
    expect(RANGES.map((r) => r.cidr).filter((cidr) => !withNeighbours.has(cidr))).toEqual([
      "8000::/1",
      "::ffff:0:0/96",
      "64:ff9b::/96",
      "100::/64",
      "fc00::/7",
      "fe80::/10",
      "fec0::/10",
      "ff00::/8",
    ]);
    for (const { cidr, v6, value } of neighbours) {
      const host = urlHost(v6, value);
      expect(isPublicAddress(text(v6, value)), `${host} next to ${cidr}`).toBe(true);
      expect(
        await urlRefusal(new URL(`https://${host}/`), EVERY_NAME_PUBLIC),
        `${host} next to ${cidr}`,
      ).toBeNull();
    }
  });

  it("names the neighbours that matter for the ranges most easily got wrong", () => {
    for (const address of [
      "192.0.1.0",
      "192.0.3.0",
      "192.0.78.9",
      "192.88.98.255",
      "192.88.100.0",
      "198.17.255.255",
      "198.20.0.0",
      "198.51.99.255",
      "198.51.101.0",
      "203.0.112.255",
      "203.0.114.0",
      "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
      "3fff:1000::",
      "2001:200::",
      "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
      "2001:db9::",
      "2003::",
    ])
      expect(isPublicAddress(address), address).toBe(true);
  });
});

describe("DNS answers: a name that resolves into a listed range is refused", () => {
  it("refuses a name whose only answer is at any range's edge, and one with that answer among public ones", async () => {
    for (const { cidr, v6, value } of edges) {
      for (const answers of [[text(v6, value)], ["93.184.216.34", text(v6, value)]]) {
        expect(
          await urlRefusal(new URL("https://looks-public.example/"), resolvingTo(answers)),
          `${answers.join(", ")} (${cidr})`,
        ).toMatch(/resolves to an address that is not public/);
      }
    }
  });

  it("lets a name through whose answers are the public neighbours", async () => {
    for (const { cidr, v6, value } of neighbours) {
      expect(
        await urlRefusal(new URL("https://looks-public.example/"), resolvingTo([text(v6, value)])),
        `${text(v6, value)} next to ${cidr}`,
      ).toBeNull();
    }
  });
});

describe("local names are refused before any lookup, their look-alikes are not", () => {
  /** The suffixes docs/security.md lists; `localhost` and `metadata` are refused bare as well. */
  const LOCAL_SUFFIXES = [
    "localhost",
    "local",
    "internal",
    "home.arpa",
    "localdomain",
    "lan",
    "intranet",
  ];

  it("refuses every listed suffix, nested, in capitals, with a trailing dot", async () => {
    const hosts = [
      "localhost",
      "metadata",
      ...LOCAL_SUFFIXES.flatMap((suffix) => [
        `x.${suffix}`,
        `a.b.${suffix}`,
        `X.${suffix.toUpperCase()}`,
        `x.${suffix}.`,
      ]),
    ];
    for (const host of hosts) {
      expect(await urlRefusal(new URL(`https://${host}/`), EVERY_NAME_PUBLIC), host).toMatch(
        /is a local name/,
      );
    }
  });

  it("lets through public names that only contain a local suffix as a label or a prefix", async () => {
    const hosts = [
      ...LOCAL_SUFFIXES.flatMap((suffix) => [`${suffix}.example`, `x.${suffix}.example`]),
      "metadata.example",
      "wiki.plan",
      "x.ilan",
      "x.mylocaldomain",
      "x.myintranet",
      "x.notlocal",
    ];
    for (const host of hosts) {
      expect(await urlRefusal(new URL(`https://${host}/`), EVERY_NAME_PUBLIC), host).toBeNull();
    }
  });

  it("refuses a name without a dot, which only a local resolver could answer", async () => {
    for (const host of ["intranet", "lan", "localdomain", "router"]) {
      expect(await urlRefusal(new URL(`https://${host}/`), EVERY_NAME_PUBLIC), host).toMatch(
        /not a public name/,
      );
    }
  });
});
