// Property-based fuzzing of every route the worker serves (read from its own /openapi.json, plus
// the routes the document leaves out): thousands of malformed requests, with and without the admin
// token, signed and mis-signed for Discord. Whatever arrives, the worker never answers 5xx, every
// refusal is the documented `{"error":{code,message,details?}}`, and a refused request leaves D1 and
// R2 exactly as they were. The seed is fixed; fast-check prints it with the shrunk request on failure.
import { env, exports } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, api } from "../helpers/api.ts";
import { command, post, sign, useDiscordStandIns } from "../helpers/discord.ts";
import {
  describeRequest,
  fuzzRequest,
  fuzzRoutes,
  totalWeight,
  type FuzzRequest,
  type OpenApiDocument,
} from "../helpers/fuzz-requests.ts";
import {
  createStorageSnapshotter,
  storageChanges,
  type StorageSnapshotter,
} from "../helpers/storage-snapshot.ts";

/** Change it to explore other requests; keep the one that found a bug in a regression test. */
const FUZZ_SEED = 20_261_122;
/** The default; the full tier (`npm run test:full`) runs more through FUZZ_RUNS. */
const FUZZ_RUNS = Number(env.TEST_FUZZ_RUNS) > 0 ? Number(env.TEST_FUZZ_RUNS) : 2_100;
/** Runs grow with the routes (by weight), so each keeps at least MIN_REQUESTS_PER_ROUTE as routes are added. */
const RUNS_PER_WEIGHT = 45;
const MIN_REQUESTS = 2_000;
const MIN_REQUESTS_PER_ROUTE = 25;
const AGENT_ID = "fuzz-agent";
const CHANNEL_ID = "800000000000000777";
const DISCORD_USER_ID = "700000000000000777";
/** Methods whose success starts no background work (every write route is POST, PUT or DELETE). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** Background work a successful turn leaves (reply, evaluators, embeddings) must be done by then. */
const SETTLE_TIMEOUT_MS = 3_000;
const SETTLE_POLL_MS = 20;

// The model answers every turn a request happens to start, and Discord's REST API every reply.
useDiscordStandIns();

interface ErrorEnvelope {
  error: { code: unknown; message: unknown; details?: unknown };
}

/**
 * The agent agent-scoped routes name, with knowledge and lore to delete, serving one channel;
 * made again when a request happened to delete it (its channel goes with it, by cascade).
 */
async function seed(): Promise<void> {
  const channel = await env.DB.prepare(
    "SELECT agent_id AS agentId FROM discord_channels WHERE channel_id = ?1",
  )
    .bind(CHANNEL_ID)
    .first<{ agentId: string }>();
  if (channel?.agentId === AGENT_ID) return;
  if ((await api("GET", `/agents/${AGENT_ID}`)).status === 404) {
    const created = await api("POST", "/agents", {
      body: {
        id: AGENT_ID,
        name: "Fuzz",
        bio: ["Receives odd requests."],
        lore: ["Seeded for the fuzz test."],
        knowledge: ["Fuzzing sends malformed input to find crashes."],
        settings: { memory: { factsEvery: 1_000, summarizeAfter: 10_000 } },
      },
    });
    expect(created.status).toBe(201);
  }
  const bound = await post(
    command("agent", {
      channel: CHANNEL_ID,
      user: DISCORD_USER_ID,
      options: [{ name: "name", type: 3, value: AGENT_ID }],
    }),
  );
  expect(bound.status).toBe(200);
}

async function send(request: FuzzRequest): Promise<Response> {
  const headers = new Headers(request.headers);
  if (request.discord) await signInto(headers, request);
  return exports.default.fetch(
    new Request(`https://agents.test${request.target}`, {
      method: request.method,
      headers,
      body: request.body,
    }),
  );
}

async function signInto(headers: Headers, request: FuzzRequest): Promise<void> {
  const { signature, timestamp, raw } = request.discord!;
  const now = Math.floor(Date.now() / 1000);
  const stamps = {
    now: String(now),
    stale: String(now - 6 * 60),
    future: String(now + 6 * 60),
    raw,
    absent: undefined,
  };
  const stamp = stamps[timestamp];
  if (stamp !== undefined) headers.set("x-signature-timestamp", stamp);
  const body = request.body ?? "";
  const signedAt = stamp ?? String(now);
  const signatures = {
    valid: () => sign(body, signedAt),
    "other-body": () =>
      sign(typeof body === "string" ? `${body} ` : Uint8Array.of(...body, 0x20), signedAt),
    "other-timestamp": () => sign(body, String(Number(signedAt) - 1)),
    truncated: async () => (await sign(body, signedAt)).slice(0, -2),
    random: async () => raw,
    garbage: async () => raw,
    absent: async () => undefined,
  };
  const value = await signatures[signature]();
  if (value !== undefined) headers.set("x-signature-ed25519", value);
}

function expectErrorEnvelope(request: FuzzRequest, response: Response, text: string): void {
  const where = `${response.status} for ${describeRequest(request)}: ${text.slice(0, 300)}`;
  // Documented: the OAuth callback is a page a browser lands on; browsers get its errors as HTML.
  const accept =
    Object.entries(request.headers).find(([name]) => name.toLowerCase() === "accept")?.[1] ?? "";
  if (
    request.route === "GET /oauth/callback" &&
    /text\/html/.test(accept) &&
    /^text\/html/.test(response.headers.get("content-type") ?? "")
  ) {
    if (request.method !== "HEAD") expect(text, where).toContain("<h1>Not connected</h1>");
    return;
  }
  // Documented: the MCP server's consent page answers a browser with pages, and its token and
  // registration endpoints answer in the shape RFC 6749 §5.2 and RFC 7591 §3.2.2 prescribe
  // (`{"error":"<code>","error_description":…}`), which MCP hosts parse.
  if (/ \/agents\/\{agentId\}\/oauth\/authorize$/.test(request.route)) {
    const html = /^text\/html/.test(response.headers.get("content-type") ?? "");
    if (html && request.method !== "HEAD") expect(text, where).toContain("<h1>");
    if (html) return;
  }
  if (
    / \/agents\/\{agentId\}\/oauth\/(token|register)$/.test(request.route) &&
    /^application\/json/.test(response.headers.get("content-type") ?? "") &&
    (request.method === "HEAD" || typeof JSON.parse(text).error === "string")
  )
    return;
  expect(response.headers.get("content-type") ?? "", where).toMatch(/^application\/json/);
  if (request.method === "HEAD") return;
  let parsed: unknown;
  expect(() => (parsed = JSON.parse(text)), where).not.toThrow();
  expect(Object.keys(parsed as object), where).toEqual(["error"]);
  const { error } = parsed as ErrorEnvelope;
  expect(typeof error.code, where).toBe("string");
  expect(typeof error.message, where).toBe("string");
  // The OpenAI-compatible routes answer in OpenAI's shape, which adds `type` and `param`.
  const fields = / \/v1\//.test(request.route)
    ? ["code", "message", "type", "param"]
    : ["code", "message", "details"];
  expect(
    Object.keys(error).filter((key) => !fields.includes(key)),
    where,
  ).toEqual([]);
}

/** Waits until what a successful request started (a turn's reply and evaluators) stops writing. */
async function settle(storage: StorageSnapshotter): Promise<void> {
  let last = await storage.take();
  let quiet = 0;
  for (let waited = 0; waited < SETTLE_TIMEOUT_MS && quiet < 3; waited += SETTLE_POLL_MS) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    const next = await storage.take();
    quiet = storageChanges(last, next).length === 0 ? quiet + 1 : 0;
    last = next;
  }
}

class Tally {
  readonly byRoute = new Map<string, Map<number, number>>();
  total = 0;

  count(route: string, status: number): void {
    this.total += 1;
    const statuses = this.byRoute.get(route) ?? new Map<number, number>();
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    this.byRoute.set(route, statuses);
  }

  sum(predicate: (status: number) => boolean, route?: string): number {
    let n = 0;
    for (const [name, statuses] of this.byRoute) {
      if (route !== undefined && name !== route) continue;
      for (const [status, count] of statuses) if (predicate(status)) n += count;
    }
    return n;
  }

  report(): string {
    return [...this.byRoute]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([route, statuses]) =>
          `${route.padEnd(48)} ${[...statuses]
            .sort(([a], [b]) => a - b)
            .map(([s, n]) => `${s}x${n}`)
            .join(" ")}`,
      )
      .join("\n");
  }
}

describe("fuzzing every route", () => {
  it("never answers 5xx, always refuses with the error envelope, and a refusal writes nothing", {
    timeout: 180_000,
  }, async () => {
    await seed();
    const spec = await (await api("GET", "/openapi.json", { token: null })).json<OpenApiDocument>();
    const routes = fuzzRoutes(spec);
    const storage = await createStorageSnapshotter();
    const tally = new Tally();
    const started = Date.now();
    const secrets = [
      ADMIN_TOKEN,
      env.OPENAI_API_KEY,
      env.DISCORD_BOT_TOKEN,
      env.SECRETS_KEY,
    ].filter((value): value is string => Boolean(value));
    const ctx = {
      schemas: spec.components?.schemas ?? {},
      agentId: AGENT_ID,
      adminToken: ADMIN_TOKEN,
      channelId: CHANNEL_ID,
      discordUserId: DISCORD_USER_ID,
    };

    // What storage held before the next request: taken after the previous one, so each request
    // costs one snapshot, and fresh after a success had its background work settle.
    let before = await storage.take();
    const property = fc.asyncProperty(fuzzRequest(routes, ctx), async (request) => {
      const response = await send(request);
      tally.count(request.route, response.status);
      const text = await response.text();
      let changes: string[] = [];
      if (response.ok) {
        // Anything but a read may have started a turn whose writes follow the response.
        if (!SAFE_METHODS.has(request.method)) await settle(storage);
        await seed();
        before = await storage.take();
      } else {
        const after = await storage.take();
        changes = storageChanges(before, after);
        before = after;
      }
      expect(response.status, `${describeRequest(request)}: ${text.slice(0, 500)}`).toBeLessThan(
        500,
      );
      for (const secret of secrets)
        expect(
          text.includes(secret),
          `a response showed a secret: ${describeRequest(request)}`,
        ).toBe(false);
      if (response.ok) return;
      expectErrorEnvelope(request, response, text);
      expect(changes, `${response.status} for ${describeRequest(request)} changed storage`).toEqual(
        [],
      );
    });
    await fc.assert(property, {
      seed: FUZZ_SEED,
      numRuns: Math.max(FUZZ_RUNS, totalWeight(routes) * RUNS_PER_WEIGHT),
    });

    console.log(
      `fuzz (seed ${FUZZ_SEED}): ${tally.total} requests in ${Date.now() - started} ms, ${routes.length} routes, tables ${storage.tables.join(", ")}\n${tally.report()}`,
    );
    expect(tally.total).toBeGreaterThanOrEqual(MIN_REQUESTS);
    for (const route of routes) {
      expect(
        tally.sum(() => true, `${route.method} ${route.path}`),
        route.path,
      ).toBeGreaterThanOrEqual(MIN_REQUESTS_PER_ROUTE);
    }
    // Malformed, not merely unauthenticated: many requests reached a validator, and of the routes
    // that take input (not /health, /docs, /openapi.json) few requests happened to be valid.
    expect(tally.sum((status) => status === 400)).toBeGreaterThan(tally.total / 4);
    const withInput = routes
      .filter((route) => route.signed || route.body || route.params.length > 0)
      .map((route) => `${route.method} ${route.path}`);
    const succeeded = withInput.reduce(
      (n, route) => n + tally.sum((status) => status < 300, route),
      0,
    );
    const sent = withInput.reduce((n, route) => n + tally.sum(() => true, route), 0);
    expect(succeeded).toBeLessThan(sent / 10);
  });
});
