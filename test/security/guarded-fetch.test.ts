import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import type { Env } from "../../src/env.ts";
import {
  createGuardedFetch,
  OutboundRequestError,
  type FetchCaps,
} from "../../src/net/guarded-fetch.ts";
import { urlRefusal, type UrlPolicy } from "../../src/net/url-safety.ts";
import { requiredBindings } from "../helpers/bindings.ts";

const CAPS: FetchCaps = { timeoutMs: 2_000, maxBytes: 1_000, streams: false };

/** A network that records what reached it and answers with `respond`. */
function recordingNetwork(
  respond: (url: URL, init: RequestInit) => Response | Promise<Response> = () => new Response("ok"),
) {
  const seen: Array<{ url: string; method: string; headers: Headers; body: string | null }> = [];
  const fetchFn: typeof fetch = async (input, init = {}) => {
    const url = new URL(String(input));
    seen.push({
      url: url.href,
      method: init.method ?? "GET",
      headers: new Headers(init.headers),
      body: typeof init.body === "string" ? init.body : init.body ? String(init.body) : null,
    });
    return respond(url, init);
  };
  return { fetch: fetchFn, seen };
}

const publicNames: Record<string, string[]> = {
  "public.example": ["93.184.216.34"],
  "other.example": ["93.184.216.35", "2606:4700::1111"],
};

function policy(
  names: Record<string, string[]> = {},
  overrides: Partial<UrlPolicy> = {},
): UrlPolicy {
  return {
    allowLoopback: false,
    resolve: async (host) => ({ ...publicNames, ...names })[host] ?? [],
    ...overrides,
  };
}

function guarded(
  respond?: Parameters<typeof recordingNetwork>[0],
  caps: FetchCaps = CAPS,
  rules: UrlPolicy = policy(),
) {
  const network = recordingNetwork(respond);
  return {
    fetch: createGuardedFetch({ fetch: network.fetch, policy: rules, caps }),
    seen: network.seen,
  };
}

// --- Generated spellings of private addresses ---------------------------------------------------

const byte = fc.integer({ min: 0, max: 255 });
/** An IPv4 address in a range that is never public (edges: url-safety-ranges.test.ts). */
const privateV4 = fc.oneof(
  fc.tuple(fc.constant(10), byte, byte, byte),
  fc.tuple(fc.constant(127), byte, byte, byte),
  fc.tuple(fc.constant(0), byte, byte, byte),
  fc.tuple(fc.constant(169), fc.constant(254), byte, byte),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), byte, byte),
  fc.tuple(fc.constant(192), fc.constant(168), byte, byte),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), byte, byte),
  fc.tuple(fc.integer({ min: 224, max: 255 }), byte, byte, byte),
  fc.tuple(fc.constant(192), fc.constant(0), fc.constantFrom(0, 2), byte),
  fc.tuple(fc.constant(192), fc.constant(88), fc.constant(99), byte),
  fc.tuple(fc.constant(198), fc.constantFrom(18, 19), byte, byte),
  fc.tuple(fc.constant(198), fc.constant(51), fc.constant(100), byte),
  fc.tuple(fc.constant(203), fc.constant(0), fc.constant(113), byte),
);
type V4 = [number, number, number, number];
const num = (octets: V4) =>
  ((octets[0] << 24) >>> 0) + (octets[1] << 16) + (octets[2] << 8) + octets[3];

/** What the WHATWG URL parser accepts as IPv4 (and normalises): every form must still be refused. */
function v4Spellings([a, b, c, d]: V4): string[] {
  const whole = num([a, b, c, d]);
  return [
    `${a}.${b}.${c}.${d}`,
    String(whole),
    `0x${whole.toString(16)}`,
    `0${whole.toString(8)}`,
    [a, b, c, d].map((x) => `0x${x.toString(16)}`).join("."),
    [a, b, c, d].map((x) => `0${x.toString(8)}`).join("."),
    `${a}.${(b << 16) + (c << 8) + d}`,
    `${a}.${b}.${(c << 8) + d}`,
    `${a}.${b}.${c}.${d}.`,
  ];
}

const hex4 = (n: number) => n.toString(16);
/** The embedded IPv4 as IPv6 in hex and dotted forms: mapped, compatible, translated, NAT64, 6to4. */
function v6Embeddings([a, b, c, d]: V4): string[] {
  const high = hex4((a << 8) | b);
  const low = hex4((c << 8) | d);
  const dotted = `${a}.${b}.${c}.${d}`;
  return [
    `::ffff:${high}:${low}`,
    `::ffff:${dotted}`,
    `::${high}:${low}`,
    `::${dotted}`,
    `0:0:0:0:0:ffff:${dotted}`,
    `0000:0000:0000:0000:0000:FFFF:${high.padStart(4, "0").toUpperCase()}:${low.padStart(4, "0")}`,
    `::ffff:0:${high}:${low}`,
    `64:ff9b::${high}:${low}`,
    `64:ff9b::${dotted}`,
    `2002:${high}:${low}::1`,
    `2002:${high}:${low}:0:0:0:0:1`,
  ];
}

const group = fc.integer({ min: 0, max: 0xffff });
/** IPv6 ranges that are never public, with random remaining groups. */
const privateV6Groups = fc.oneof(
  fc.tuple(
    fc.integer({ min: 0xfc00, max: 0xfdff }),
    group,
    group,
    group,
    group,
    group,
    group,
    group,
  ), // ULA
  fc.tuple(
    fc.integer({ min: 0xfe80, max: 0xfebf }),
    group,
    group,
    group,
    group,
    group,
    group,
    group,
  ), // link-local
  fc.tuple(
    fc.integer({ min: 0xfec0, max: 0xfeff }),
    group,
    group,
    group,
    group,
    group,
    group,
    group,
  ), // site-local
  fc.tuple(
    fc.integer({ min: 0xff00, max: 0xffff }),
    group,
    group,
    group,
    group,
    group,
    group,
    group,
  ), // multicast
  fc.tuple(fc.constant(0x2001), fc.constant(0), group, group, group, group, group, group), // Teredo
  fc.tuple(fc.constant(0x2001), fc.constant(0xdb8), group, group, group, group, group, group), // documentation
  fc.tuple(
    fc.constant(0x2001),
    fc.integer({ min: 0, max: 0x1ff }),
    group,
    group,
    group,
    group,
    group,
    group,
  ), // 2001::/23
  fc.tuple(fc.constant(0x2002), group, group, group, group, group, group, group), // 6to4
  fc.tuple(
    fc.constant(0x3fff),
    fc.integer({ min: 0, max: 0xfff }),
    group,
    group,
    group,
    group,
    group,
    group,
  ), // documentation 3fff::/20
  fc.tuple(
    fc.integer({ min: 0x4000, max: 0xfbff }),
    group,
    group,
    group,
    group,
    group,
    group,
    group,
  ), // outside 2000::/3
  fc.tuple(
    fc.constant(0x100),
    fc.constant(0),
    fc.constant(0),
    fc.constant(0),
    group,
    group,
    group,
    group,
  ), // discard
  fc.tuple(
    fc.constant(0),
    fc.constant(0),
    fc.constant(0),
    fc.constant(0),
    fc.constant(0),
    fc.constant(0),
    group,
    group,
  ), // ::/96
);

/** Full, zero-padded, upper-case and compressed spellings of 8 groups. */
function v6Spellings(groups: number[]): string[] {
  const full = groups.map(hex4).join(":");
  const padded = groups.map((g) => hex4(g).padStart(4, "0")).join(":");
  let compressed = full;
  const zeros = /(^|:)0(:0)+(:|$)/.exec(full);
  if (zeros)
    compressed = `${full.slice(0, zeros.index)}::${full.slice(zeros.index + zeros[0].length)}`;
  return [full, padded, padded.toUpperCase(), compressed];
}

const LOCAL_NAMES = [
  "localhost",
  "LOCALHOST",
  "foo.localhost",
  "printer.local",
  "metadata.google.internal",
  "x.internal",
  "router.home.arpa",
  "metadata",
  "intranet",
  "printer.lan",
  "box.localdomain",
  "wiki.intranet",
  "NAS.LAN",
];

const everyNamePublic = policy({}, { resolve: async () => ["93.184.216.34"] });

const privateHost = fc.oneof(
  privateV4.chain((octets) => fc.constantFrom(...v4Spellings(octets as V4))),
  privateV4.chain((octets) =>
    fc.constantFrom(...v6Embeddings(octets as V4).map((text) => `[${text}]`)),
  ),
  privateV6Groups.chain((groups) =>
    fc.constantFrom(...v6Spellings(groups).map((text) => `[${text}]`)),
  ),
  fc.constantFrom(...LOCAL_NAMES).chain((name) => fc.constantFrom(name, `${name}.`)),
);

/** A public-looking name whose DNS answer is private (any single answer among public ones suffices). */
const privatelyResolvingName = fc.tuple(
  privateV4.map((octets) => octets.join(".")),
  privateV6Groups.map((groups) => groups.map(hex4).join(":")),
  fc.boolean(),
  fc.boolean(),
);

describe("the guard refuses every spelling of a private address", () => {
  it("no generated spelling of a private or local host passes, over https or http, with or without a port", async () => {
    await fc.assert(
      fc.asyncProperty(
        privateHost,
        fc.constantFrom("https", "http"),
        fc.constantFrom("", ":443", ":8080"),
        async (host, scheme, port) => {
          let url: URL;
          try {
            url = new URL(`${scheme}://${host}${port}/x`);
          } catch {
            return; // the URL parser refuses it: nothing could be fetched
          }
          // Every name resolves to a public address here, so a local name is refused by its
          // own rule, not because it happens not to resolve.
          const { fetch, seen } = guarded(undefined, CAPS, everyNamePublic);
          await expect(fetch(url)).rejects.toBeInstanceOf(OutboundRequestError);
          expect(seen).toEqual([]);
        },
      ),
      { numRuns: 600, seed: 22 },
    );
  });

  it("no name whose DNS answer includes a private address passes, whatever the other answers", async () => {
    await fc.assert(
      fc.asyncProperty(privatelyResolvingName, async ([v4, v6, useV6, withPublic]) => {
        const answers = [...(withPublic ? ["93.184.216.34"] : []), useV6 ? v6 : v4];
        const reason = await urlRefusal(
          new URL("https://looks-public.example/"),
          policy({ "looks-public.example": answers }),
        );
        expect(reason).toMatch(/not public/);
        const trailing = await urlRefusal(
          new URL("https://looks-public.example./"),
          policy({ "looks-public.example": answers }),
        );
        expect(trailing).toMatch(/not public/);
      }),
      { numRuns: 300, seed: 22 },
    );
  });

  it("the loopback switch lets loopback through and nothing else private", async () => {
    const dev = policy({}, { allowLoopback: true });
    for (const url of [
      "http://127.0.0.1:8788/mcp",
      "http://localhost:8788/",
      "http://localhost.:8788/",
      "http://[::1]/",
      "http://127.1/",
    ]) {
      expect(await urlRefusal(new URL(url), dev), url).toBeNull();
    }
    for (const url of [
      "http://10.0.0.1/",
      "http://[::ffff:127.0.0.1]/",
      "http://[::127.0.0.1]/",
      "http://169.254.169.254/",
      "http://public.example/",
    ]) {
      expect(await urlRefusal(new URL(url), dev), url).not.toBeNull();
    }
  });

  it("public addresses and names pass, over https only; DNS failures fail closed", async () => {
    for (const url of [
      "https://93.184.216.34/",
      "https://[2606:4700::1111]/",
      "https://public.example/",
      "https://other.example./",
      "https://PUBLIC.example:8443/x",
    ]) {
      expect(await urlRefusal(new URL(url), policy()), url).toBeNull();
    }
    expect(await urlRefusal(new URL("http://public.example/"), policy())).toBe(
      "only https is allowed",
    );
    expect(await urlRefusal(new URL("https://nowhere.example/"), policy())).toMatch(
      /does not resolve/,
    );
    const failing: UrlPolicy = {
      allowLoopback: false,
      resolve: async () => Promise.reject(new Error("503")),
    };
    expect(await urlRefusal(new URL("https://public.example/"), failing)).toMatch(
      /could not be resolved/,
    );
  });

  it("an operator-trusted origin is accepted as configured, and only that origin", async () => {
    const rules = policy({}, { trustedOrigins: ["http://discord.test"] });
    expect(await urlRefusal(new URL("http://discord.test/cdn/a.png"), rules)).toBeNull();
    expect(await urlRefusal(new URL("http://discord.test:8080/"), rules)).not.toBeNull();
    expect(await urlRefusal(new URL("https://discord.test/"), rules)).not.toBeNull();
  });
});

describe("redirects are followed by the guard, each target checked", () => {
  const redirect = (status: number, location: string) =>
    new Response(null, { status, headers: { location } });

  it("a redirect to a private address is refused, and the target never asked", async () => {
    const { fetch, seen } = guarded((url) =>
      url.hostname === "public.example"
        ? redirect(302, "http://169.254.169.254/latest/meta-data")
        : new Response("secret"),
    );
    await expect(fetch("https://public.example/start")).rejects.toMatchObject({
      failure: "refused",
      message: expect.stringMatching(/^redirect to http:\/\/169\.254\.169\.254 refused/),
    });
    expect(seen.map((request) => request.url)).toEqual(["https://public.example/start"]);
  });

  it("follows a few redirects between public hosts, then stops", async () => {
    const hops = guarded((url) =>
      url.pathname === "/5"
        ? new Response("done")
        : redirect(301, `https://other.example/${Number(url.pathname.slice(1)) + 1}`),
    );
    await expect(hops.fetch("https://public.example/2")).resolves.toBeInstanceOf(Response);
    expect(await (await hops.fetch("https://public.example/3")).text()).toBe("done");
    const endless = guarded((url) => redirect(302, `https://public.example${url.pathname}x`));
    await expect(endless.fetch("https://public.example/")).rejects.toMatchObject({
      failure: "redirects",
    });
    expect(endless.seen).toHaveLength(4);
  });

  it("hands a redirect back untouched to a caller that asked for manual, and refuses one where redirects are an error", async () => {
    const { fetch, seen } = guarded(() => redirect(302, "http://10.0.0.1/"));
    const response = await fetch("https://public.example/", { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(seen).toHaveLength(1);
    await expect(fetch("https://public.example/", { redirect: "error" })).rejects.toMatchObject({
      failure: "redirects",
    });
  });

  it("keeps method and body on 307, turns a POST into a GET on 303, and drops credentials across origins", async () => {
    const { fetch, seen } = guarded((url) => {
      if (url.pathname === "/a") return redirect(307, "/b");
      if (url.pathname === "/b") return redirect(303, "https://other.example/c");
      return new Response("ok");
    });
    await fetch("https://public.example/a", {
      method: "POST",
      body: "grant_type=x",
      headers: { authorization: "Bearer t", "content-type": "application/x-www-form-urlencoded" },
    });
    expect(
      seen.map((request) => [
        request.url,
        request.method,
        request.body,
        request.headers.get("authorization"),
      ]),
    ).toEqual([
      ["https://public.example/a", "POST", "grant_type=x", "Bearer t"],
      ["https://public.example/b", "POST", "grant_type=x", "Bearer t"],
      ["https://other.example/c", "GET", null, null],
    ]);
  });
});

describe("size and time caps hold while the answer is read", () => {
  const chunks = (sizes: number[], delayMs = 0, headers: Record<string, string> = {}) =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          for (const size of sizes) {
            if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
            controller.enqueue(new TextEncoder().encode("x".repeat(size)));
          }
          controller.close();
        },
      }),
      { headers },
    );

  it("an answer larger than the cap fails while reading, whatever Content-Length claims", async () => {
    const lying = guarded(() => chunks([600, 600], 0, { "content-length": "10" }));
    const response = await lying.fetch("https://public.example/");
    await expect(response.text()).rejects.toMatchObject({ failure: "too_large" });
    const declared = guarded(
      () => new Response("x".repeat(10), { headers: { "content-length": "5000" } }),
    );
    await expect(declared.fetch("https://public.example/")).rejects.toMatchObject({
      failure: "too_large",
    });
    const fits = guarded(() => chunks([500, 500]));
    expect((await (await fits.fetch("https://public.example/")).text()).length).toBe(1_000);
  });

  it("no answer within the time cap is a timeout; a body that stalls is one too", async () => {
    const caps = { ...CAPS, timeoutMs: 100 };
    const silent = guarded(
      (_url, init) =>
        new Promise<Response>((_, reject) =>
          init.signal?.addEventListener("abort", () => reject(init.signal!.reason)),
        ),
      caps,
    );
    await expect(silent.fetch("https://public.example/")).rejects.toMatchObject({
      failure: "timeout",
    });
    const stalling = guarded(() => chunks([10, 10], 300), caps);
    const response = await stalling.fetch("https://public.example/");
    await expect(response.text()).rejects.toMatchObject({ failure: "timeout" });
  });

  it("the caller's signal still cancels, with the caller's reason", async () => {
    const hanging = guarded(
      (_url, init) =>
        new Promise<Response>((_, reject) =>
          init.signal?.addEventListener("abort", () => reject(init.signal!.reason)),
        ),
    );
    const controller = new AbortController();
    const pending = hanging.fetch("https://public.example/", { signal: controller.signal });
    controller.abort(new Error("the turn was cancelled"));
    await expect(pending).rejects.toThrow("the turn was cancelled");
  });

  it("an MCP event stream may stay open past the time cap, but no single event may exceed the size cap", async () => {
    const caps: FetchCaps = { timeoutMs: 100, maxBytes: 100, streams: true };
    const sse = { "content-type": "text/event-stream" };
    const event = (size: number) => `data: ${"x".repeat(size)}\n\n`;
    const long = guarded(() => chunks([0, 0, 0], 80, sse), caps);
    const streamed = guarded(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            async start(controller) {
              for (let i = 0; i < 4; i++) {
                await new Promise((resolve) => setTimeout(resolve, 60));
                controller.enqueue(new TextEncoder().encode(event(80)));
              }
              controller.close();
            },
          }),
          { headers: sse },
        ),
      caps,
    );
    // 4 events of ~88 bytes, 240 ms in all: over both caps in total, within them per event.
    expect(
      (await (await streamed.fetch("https://public.example/")).text()).match(/data:/g),
    ).toHaveLength(4);
    expect(await (await long.fetch("https://public.example/")).text()).toBe("");
    const huge = guarded(() => new Response(event(500), { headers: sse }), caps);
    await expect((await huge.fetch("https://public.example/")).text()).rejects.toMatchObject({
      failure: "too_large",
    });
  });
});

describe("the development switch", () => {
  it("is ALLOW_LOOPBACK_FETCH, and the old MCP_ALLOW_LOOPBACK still works as its alias", () => {
    const base: Env = requiredBindings();
    expect(loadConfig({ ...base, ALLOW_LOOPBACK_FETCH: "true" }).allowLoopbackFetch).toBe(true);
    expect(loadConfig({ ...base, MCP_ALLOW_LOOPBACK: "true" }).allowLoopbackFetch).toBe(true);
    expect(
      loadConfig({ ...base, ALLOW_LOOPBACK_FETCH: "false", MCP_ALLOW_LOOPBACK: "true" })
        .allowLoopbackFetch,
    ).toBe(false);
    expect(loadConfig(base).allowLoopbackFetch).toBe(false);
  });
});
