// The fuzz test's requests: the route list comes from the worker's own /openapi.json (so a route
// added later is fuzzed without touching the test), plus the routes the document leaves out. Each
// generated request breaks something: method, path parameters, query, Authorization,
// Content-Type, Idempotency-Key, body, or for Discord's webhook the signature and its timestamp.
import fc from "fast-check";
import { APP_ID } from "./discord.ts";
import {
  deepJsonText,
  HUGE_LENGTHS,
  malformedJson,
  mutate,
  mutation,
  oddString,
  schemaValue,
  withDeepField,
  type JsonSchema,
  type ValueContext,
} from "./fuzz-values.ts";

interface OpenApiParameter {
  name: string;
  in: string;
  schema?: JsonSchema;
}

interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface FuzzRoute {
  method: string;
  /** OpenAPI template, e.g. `/agents/{agentId}/messages`. */
  path: string;
  params: OpenApiParameter[];
  body?: JsonSchema;
  /** Discord's webhook: authenticated by an Ed25519 signature, not the bearer token. */
  signed?: true;
}

/** Routes the worker serves that its OpenAPI document does not describe. */
const UNDOCUMENTED_ROUTES: FuzzRoute[] = [
  { method: "POST", path: "/discord/interactions", params: [], signed: true },
  { method: "GET", path: "/docs", params: [] },
  { method: "GET", path: "/openapi.json", params: [] },
];

export function fuzzRoutes(doc: OpenApiDocument): FuzzRoute[] {
  const routes: FuzzRoute[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      routes.push({
        method: method.toUpperCase(),
        path,
        params: operation.parameters ?? [],
        body: operation.requestBody?.content?.["application/json"]?.schema,
      });
    }
  }
  for (const extra of UNDOCUMENTED_ROUTES) {
    if (!routes.some((route) => route.method === extra.method && route.path === extra.path))
      routes.push(extra);
  }
  return routes;
}

export type SignatureMode =
  | "valid"
  | "absent"
  | "other-body"
  | "other-timestamp"
  | "truncated"
  | "random"
  | "garbage";
export type TimestampMode = "now" | "absent" | "stale" | "future" | "raw";

/** How to sign a Discord request; the signature itself is computed when it is sent. */
export interface DiscordSigning {
  signature: SignatureMode;
  timestamp: TimestampMode;
  /** The header's value when `timestamp` is "raw", or the signature for "random" and "garbage". */
  raw: string;
}

export interface FuzzRequest {
  route: string;
  method: string;
  /** Path and query, as sent (already encoded, or deliberately not). */
  target: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  discord?: DiscordSigning;
}

const ADMIN_AUTHORIZATION_WEIGHT = 20;
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];

export interface RequestContext extends ValueContext {
  adminToken: string;
  /** A Discord channel served by the seeded agent, so a signed command can reach its handler. */
  channelId: string;
  discordUserId: string;
}

export function fuzzRequest(routes: FuzzRoute[], ctx: RequestContext): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    ...routes.map((route) => ({ weight: routeWeight(route), arbitrary: routeRequest(route, ctx) })),
  );
}

/** The routes' weights added up: a route of weight 1 gets about runs / total of the requests. */
export function totalWeight(routes: FuzzRoute[]): number {
  return routes.reduce((sum, route) => sum + routeWeight(route), 0);
}

/** Discord's webhook has the most ways to be wrong; a route without inputs has the fewest. */
function routeWeight(route: FuzzRoute): number {
  if (route.signed) return 8;
  return route.params.length > 0 || route.body ? 2 : 1;
}

function routeRequest(route: FuzzRoute, ctx: RequestContext): fc.Arbitrary<FuzzRequest> {
  const pathParams = route.params.filter((p) => p.in === "path");
  const query = route.params.filter((p) => p.in === "query");
  const segments = fc.tuple(...pathParams.map((p) => pathParam(p, ctx)));
  const base = route.body
    ? schemaValue(route.body, ctx)
    : route.signed
      ? interaction(ctx)
      : fc.jsonValue({ maxDepth: 2 });
  const headers = fc.record({
    authorization: route.signed
      ? fc.option(authorization(ctx.adminToken), { freq: 2, nil: undefined })
      : authorization(ctx.adminToken),
    "content-type": contentType,
    "idempotency-key": fc.option(idempotencyKey, { freq: 2, nil: undefined }),
    extra: fc.option(
      fc.constantFrom(
        ["accept", "text/html"],
        ["x-http-method-override", "DELETE"],
        ["origin", "https://evil.test"],
        ["cookie", "a=b"],
      ),
      { nil: undefined },
    ),
  });
  return fc
    .record({
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constant(route.method) },
        { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
      ),
      segments,
      pathTweak: fc.oneof(
        { weight: 12, arbitrary: fc.constant("") },
        {
          weight: 1,
          arbitrary: fc.constantFrom("/", "//", "/x", "%2F", ";x", ".json", "?", "#x", "UPPER"),
        },
      ),
      query: queryString(query, ctx),
      headers,
      body: requestBody(base),
      discord: route.signed ? discordSigning : fc.constant(undefined),
    })
    .map(({ method, segments, pathTweak, query, headers, body, discord }) => {
      let i = 0;
      let path = route.path.replace(/\{[^}]+\}/g, () => segments[i++] ?? "");
      path = pathTweak === "UPPER" ? path.toUpperCase() : path + pathTweak;
      const sent: Record<string, string> = {};
      for (const [name, value] of Object.entries(headers)) {
        if (name === "extra" && Array.isArray(value)) sent[value[0]!] = value[1]!;
        else if (typeof value === "string") sent[name] = value;
      }
      const request: FuzzRequest = {
        route: `${route.method} ${route.path}`,
        method,
        target: path + query,
        headers: sent,
        body: method === "GET" || method === "HEAD" ? undefined : body,
        discord,
      };
      return Object.assign(request, { [fc.toStringMethod]: () => describeRequest(request) });
    });
}

/** For fast-check's failure report: the request without megabytes of body. */
export function describeRequest(r: FuzzRequest): string {
  const body =
    r.body === undefined
      ? "(none)"
      : typeof r.body === "string"
        ? JSON.stringify(r.body.slice(0, 300))
        : `bytes[${r.body.join(",").slice(0, 300)}]`;
  const size = r.body === undefined ? 0 : r.body.length;
  return `${r.method} ${r.target.slice(0, 300)} (route ${r.route}) headers=${JSON.stringify(r.headers).slice(0, 400)} discord=${JSON.stringify(r.discord)} body(${size})=${body}`;
}

function requestBody(base: fc.Arbitrary<unknown>): fc.Arbitrary<string | Uint8Array | undefined> {
  return fc.oneof(
    // One broken field (sometimes two), so the rest of the body gets past the validator too.
    {
      weight: 12,
      arbitrary: fc
        .tuple(
          base,
          fc.oneof({ weight: 3, arbitrary: fc.tuple(mutation) }, fc.tuple(mutation, mutation)),
        )
        .map(([value, ms]) => JSON.stringify(mutate(value, ms)) ?? ""),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          base,
          fc.nat(),
          fc.constantFrom("replace" as const, "add-key" as const),
          deepJsonText,
        )
        .map(([value, at, kind, deep]) => withDeepField(value, at, kind, deep)),
    },
    // As the schema allows: valid by chance, unless the path, query or headers are not.
    { weight: 1, arbitrary: base.map((value) => JSON.stringify(value) ?? "") },
    { weight: 3, arbitrary: malformedJson(base) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
    { weight: 2, arbitrary: deepJsonText },
    { weight: 1, arbitrary: fc.constantFrom(...HUGE_LENGTHS).map((n) => "x".repeat(n)) },
    // Not UTF-8.
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/**
 * Printable ASCII: fetch refuses NUL, CR and LF in a header, and workerd would send anything
 * beyond ASCII as UTF-8 (with a warning each time), which a real client's Latin-1 bytes are not.
 */
const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});

function authorization(token: string): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: ADMIN_AUTHORIZATION_WEIGHT, arbitrary: fc.constant(`Bearer ${token}`) },
    { weight: 3, arbitrary: fc.constant(undefined) },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        `bearer ${token}`,
        `Bearer\t${token}`,
        `Bearer ${token}x`,
        `Bearer ${token.slice(0, -1)}`,
        `Bearer ${token} ${token}`,
        "Bearer",
        "Bearer ",
        `Basic ${btoa(`admin:${token}`)}`,
        `Token ${token}`,
        token,
        "Bearer null",
        `Bearer ${"A".repeat(10_000)}`,
        `Bearer ${token.toUpperCase()}`,
      ),
    },
    { weight: 2, arbitrary: headerText.map((text) => `Bearer ${text}`) },
    { weight: 1, arbitrary: headerText },
  );
}

const contentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant<string | undefined>("application/json") },
  {
    weight: 4,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json;charset=latin1",
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "multipart/form-data",
      "application/octet-stream",
      "application/vnd.api+json",
      "application/jsonx",
      "json",
      "*/*",
      "",
      "application/json, text/plain",
      'application/json; boundary="',
    ),
  },
  { weight: 1, arbitrary: headerText },
);

const idempotencyKey = fc.oneof(
  fc.stringMatching(/^[\x21-\x7e]{1,255}$/),
  fc.constantFrom("", " ", "a b", "x".repeat(256), "x".repeat(10_000), "\t", "key\tkey"),
  headerText,
);

function pathParam(p: OpenApiParameter, ctx: RequestContext): fc.Arbitrary<string> {
  return fc.oneof(
    {
      weight: 5,
      arbitrary: (p.schema ? schemaValue(p.schema, ctx, p.name) : oddString).map((value) =>
        encodeSegment(String(value)),
      ),
    },
    { weight: 3, arbitrary: oddString.map(encodeSegment) },
    // Left as written: the URL parser and the router see the raw escapes and dots.
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "..",
        ".",
        "%2e%2e",
        "%2F",
        "%",
        "%ZZ",
        "%E0%A4%A",
        "%C0%AF",
        "%00",
        "",
        "a%2Fb",
        ";",
        "a;b=c",
        "%20",
        "+",
        "%25",
      ),
    },
    // Any unicode, unencoded: a `/`, `?` or `#` in it changes which route and query the worker sees.
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
    { weight: 1, arbitrary: fc.constantFrom(65, 129, 2_000, 20_000).map((n) => "a".repeat(n)) },
  );
}

function queryString(params: OpenApiParameter[], ctx: RequestContext): fc.Arbitrary<string> {
  const odd = fc.oneof(
    fc.constantFrom(
      "-1",
      "0",
      "1.5",
      "1e3",
      "1e309",
      "NaN",
      "Infinity",
      "0x10",
      " 5",
      "",
      "9007199254740993",
      "true",
      "[]",
      "a,b",
      ",",
      "fact,,lore",
      "message,bogus",
    ),
    oddString,
  );
  const pair = (p: OpenApiParameter) =>
    fc
      .option(
        fc.oneof(
          { weight: 3, arbitrary: p.schema ? schemaValue(p.schema, ctx, p.name).map(String) : odd },
          { weight: 2, arbitrary: odd },
        ),
        { freq: 3, nil: undefined },
      )
      .map((value): Array<[string, string]> => (value === undefined ? [] : [[p.name, value]]));
  const structured = fc
    .record({
      pairs: fc.tuple(...params.map(pair)),
      extra: fc.array(fc.tuple(oddString, odd), { maxLength: 2 }),
      encode: fc.boolean(),
      repeat: fc.boolean(),
    })
    .map(({ pairs, extra, encode, repeat }) => {
      const all = [...pairs.flat(), ...extra, ...(repeat ? pairs.flat() : [])];
      const part = (text: string) => (encode ? encodeSegment(text) : text);
      return all.length === 0
        ? ""
        : `?${all.map(([name, value]) => `${part(name)}=${part(value)}`).join("&")}`;
    });
  return fc.oneof(
    { weight: 6, arbitrary: structured },
    {
      weight: 1,
      arbitrary: fc.string({ unit: "binary", maxLength: 60 }).map((text) => `?${text}`),
    },
  );
}

function encodeSegment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    // A lone surrogate cannot be encoded; the URL parser gets it as it is.
    return text;
  }
}

/** Interaction-shaped payloads for every type and command, before they are broken. */
function interaction(ctx: RequestContext): fc.Arbitrary<unknown> {
  const snowflake = fc.bigInt({ min: 10n ** 16n, max: 10n ** 19n }).map(String);
  const userId = fc.oneof(fc.constant(ctx.discordUserId), snowflake);
  const user = fc.record({
    id: userId,
    username: fc.string({ maxLength: 20 }),
    global_name: fc.option(fc.string({ maxLength: 20 })),
  });
  const option = fc.record(
    {
      name: fc.constantFrom("message", "fact", "query", "name", "attachment"),
      type: fc.constantFrom(3, 11),
      value: fc.oneof(fc.string({ maxLength: 40 }), fc.constant(ctx.agentId)),
      focused: fc.boolean(),
    },
    { requiredKeys: ["name", "type", "value"] },
  );
  const customId = fc.oneof(
    fc.constantFrom(
      `forget:yes:${ctx.discordUserId}:${ctx.agentId}`,
      `forget:no:${ctx.discordUserId}:${ctx.agentId}`,
      `ap:y:0123456789abcdef:${ctx.agentId}`,
      "ap:n:0123456789abcdef:ghost",
    ),
    fc.string({ maxLength: 100 }),
  );
  const common = {
    id: snowflake,
    application_id: fc.constant(APP_ID),
    token: fc.string({ minLength: 1, maxLength: 30 }),
    guild_id: snowflake,
    channel_id: fc.oneof(fc.constant(ctx.channelId), snowflake),
    member: fc.record({
      user,
      permissions: fc.constantFrom("0", "32", "8", "99999999999999999999999"),
    }),
    user,
  };
  // guild, channel, member and user come and go: a DM has no member, a PING has none of them.
  const commandData = fc.record({
    name: fc.constantFrom("chat", "remember", "recall", "forget", "tools", "agent", "nope"),
    options: fc.array(option, { maxLength: 3 }),
  });
  return fc.oneof(
    fc.record({ id: snowflake, application_id: fc.constant(APP_ID), type: fc.constant(1) }),
    fc.record(
      { ...common, type: fc.constantFrom(2, 4), data: commandData },
      { requiredKeys: ["id", "application_id", "token", "type", "data"] },
    ),
    fc.record(
      {
        ...common,
        type: fc.constant(3),
        data: fc.record({ custom_id: customId, component_type: fc.constant(2) }),
      },
      { requiredKeys: ["id", "application_id", "token", "type", "data"] },
    ),
  );
}

const discordSigning: fc.Arbitrary<DiscordSigning> = fc.record({
  signature: fc.oneof(
    { weight: 10, arbitrary: fc.constant<SignatureMode>("valid") },
    {
      weight: 6,
      arbitrary: fc.constantFrom<SignatureMode>(
        "absent",
        "other-body",
        "other-timestamp",
        "truncated",
        "random",
        "garbage",
      ),
    },
  ),
  timestamp: fc.oneof(
    { weight: 10, arbitrary: fc.constant<TimestampMode>("now") },
    { weight: 4, arbitrary: fc.constantFrom<TimestampMode>("absent", "stale", "future", "raw") },
  ),
  raw: fc.oneof(
    fc.stringMatching(/^[0-9a-f]{128}$/),
    fc.constantFrom(
      "abc",
      "",
      "-1",
      "1.5",
      "0",
      " 1700000000",
      "1700000000000",
      "99999999999",
      "0001",
    ),
    headerText,
  ),
});
