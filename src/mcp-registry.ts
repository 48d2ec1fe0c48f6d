// Which MCP servers exist and which an agent uses. Two sources: the checked-in registry
// (mcp-servers.json, bundled with the worker, for every agent whose character names a server) and
// servers added to one agent at runtime (POST /agents/:agentId/tools, kept in D1 by
// src/db/stores/agent-server-store.ts). An agent uses the servers its character names plus the ones
// added to it. The registry also says where each bearer secret may go (`secretOrigins`, and its
// own servers' origins); nowhere else.
import { z } from "zod";
import registryFile from "../mcp-servers.json";
import { NotConfiguredError, NotFoundError, ValidationError } from "./runtime/util/errors.ts";

/** Lower-case, no underscores: `__` separates server and tool in the model's tool names. */
export const SERVER_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;
export const SERVER_NAME_RULE =
  "1-32 lower-case letters, digits or '-', starting with a letter or digit";
/**
 * Worker secrets a server may use as its bearer token. Only MCP_* names: anyone who may add a
 * server must not be able to send OPENAI_API_KEY or ADMIN_TOKEN to a server of their choosing.
 */
const SECRET_NAME = /^MCP_[A-Z0-9_]{1,60}$/;
/** Credentials go through `auth`, where they are kept out of D1 (bearer) or encrypted (oauth). */
const FORBIDDEN_HEADERS = new Set([
  "authorization",
  "cookie",
  "proxy-authorization",
  "host",
  "content-length",
  "mcp-session-id",
]);

export const McpAuth = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("none") }),
  z.strictObject({
    type: z.literal("bearer"),
    secret: z
      .string()
      .regex(
        SECRET_NAME,
        "the name of a worker secret starting with MCP_ (e.g. MCP_GITHUB_TOKEN), not the token itself",
      ),
  }),
  z.strictObject({
    type: z.literal("oauth"),
    scopes: z
      .array(z.string().regex(/^[\x21-\x7e]{1,100}$/))
      .max(20)
      .optional(),
    /**
     * Credentials registered with the server's authorization server beforehand, for one that
     * neither registers clients (RFC 7591) nor takes metadata documents. The secret is a worker
     * secret's name, sent only to a token endpoint at an origin declared for it (secretOrigins).
     */
    client: z
      .strictObject({
        id: z.string().regex(/^[\x21-\x7e]{1,200}$/, "printable ASCII, 1-200 characters"),
        secret: z
          .string()
          .regex(SECRET_NAME, "the name of a worker secret starting with MCP_, not the secret")
          .optional(),
      })
      .optional(),
  }),
]);

export const McpServerConfig = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).max(2_000),
  /** `streamable-http` falls back to the older HTTP+SSE transport when the server lacks the new one. */
  transport: z.enum(["streamable-http", "sse"]).default("streamable-http"),
  headers: z
    .record(
      z
        .string()
        .regex(/^[A-Za-z0-9-]{1,64}$/, "a header name")
        .refine(
          (name) => !FORBIDDEN_HEADERS.has(name.toLowerCase()),
          "set credentials with `auth`, not as a header",
        ),
      z
        .string()
        .max(1_000)
        .regex(/^[\x20-\x7e]*$/, "printable ASCII"),
    )
    .refine((headers) => Object.keys(headers).length <= 20, "at most 20 headers")
    .optional(),
  auth: McpAuth.default({ type: "none" }),
  /** Per tool call; default MCP_TOOL_TIMEOUT_MS. */
  timeoutMs: z.int().min(1_000).max(120_000).optional(),
});
export type McpServerConfig = z.infer<typeof McpServerConfig>;

export interface McpServerEntry {
  name: string;
  config: McpServerConfig;
  /** `registry` (mcp-servers.json) or `agent` (added at runtime). */
  origin: "registry" | "agent";
}

/** `https://host[:port]`, nothing more: where a secret may be sent is decided by origin. */
const SecretOrigin = z
  .url({ protocol: /^https?$/, error: "must be an http(s) origin" })
  .refine(
    (value) => /^https?:\/\/[^/?#]+\/?$/i.test(value),
    "an origin only (scheme, host, optional port), no path",
  )
  .transform((value) => new URL(value).origin);

const RegistryFile = z.strictObject({
  $schema: z.string().optional(),
  servers: z.record(
    z.string().regex(SERVER_NAME, SERVER_NAME_RULE),
    McpServerConfig.extend({
      /** What it offers, in one line: agents read it to ask for it (request_tool). */
      description: z.string().max(300).optional(),
    }),
  ),
  /** Where each MCP_* secret may be sent, besides the servers of this file that name it. */
  secretOrigins: z
    .record(z.string().regex(SECRET_NAME, "an MCP_* secret name"), z.array(SecretOrigin).max(20))
    .default({}),
});

export interface Registry {
  servers: Map<string, McpServerConfig>;
  /** A server's one-line description, when the file gives one. */
  descriptions: Map<string, string>;
  /** Secret name -> the origins it may be sent to (declared ones and its registry servers'). */
  secretOrigins: Map<string, Set<string>>;
}

let registry: Registry | undefined;

/** Validates a registry file; a broken file is a clear error naming each problem. */
export function parseRegistry(file: unknown): Registry {
  const parsed = RegistryFile.safeParse(file);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join(".")}: ${issue.message}`)
      .join("; ");
    throw new NotConfiguredError(`mcp-servers.json is invalid: ${problems}`);
  }
  const secretOrigins = new Map(
    Object.entries(parsed.data.secretOrigins).map(([name, origins]) => [name, new Set(origins)]),
  );
  const servers = new Map<string, McpServerConfig>();
  const descriptions = new Map<string, string>();
  for (const [name, { description, ...config }] of Object.entries(parsed.data.servers)) {
    servers.set(name, config);
    if (description) descriptions.set(name, description);
    if (config.auth.type !== "bearer") continue;
    const origins = secretOrigins.get(config.auth.secret) ?? new Set<string>();
    origins.add(new URL(config.url).origin);
    secretOrigins.set(config.auth.secret, origins);
  }
  return { servers, descriptions, secretOrigins };
}

/** The checked-in registry, validated once per isolate. */
export function loadRegistry(): Registry {
  registry ??= parseRegistry(registryFile);
  return registry;
}

/** The origins mcp-servers.json lets a worker secret go to (none when it declares none). */
export function secretOrigins(name: string, from: Registry = loadRegistry()): ReadonlySet<string> {
  return from.secretOrigins.get(name) ?? new Set<string>();
}

export function registryServers(): Map<string, McpServerConfig> {
  return loadRegistry().servers;
}

/**
 * Why this server may not be given its bearer secret, or null. A worker secret goes only to the
 * origins mcp-servers.json declares for it: anyone who may add a server must not be able to
 * send MCP_GITHUB_TOKEN to a host of their own.
 */
export function secretRefusal(
  config: McpServerConfig,
  from: Registry = loadRegistry(),
): string | null {
  if (config.auth.type !== "bearer") return null;
  const { secret } = config.auth;
  const origin = new URL(config.url).origin;
  const allowed = from.secretOrigins.get(secret) ?? new Set<string>();
  if (allowed.has(origin)) return null;
  const declared = allowed.size > 0 ? [...allowed].sort().join(", ") : "none is declared";
  return `${secret} may only be sent to the origins declared for it in mcp-servers.json (secretOrigins, or a server there that names it): ${declared}; not to ${origin}`;
}

export function assertSecretAllowed(config: McpServerConfig, from?: Registry): void {
  const refusal = secretRefusal(config, from);
  if (refusal)
    throw new ValidationError(refusal, { issues: [{ path: "auth.secret", message: refusal }] });
}

/** Refuses a character that names servers nobody configured, listing what exists. */
export function assertKnownServers(
  names: readonly string[],
  agentServers: readonly string[] = [],
): void {
  const known = new Set([...registryServers().keys(), ...agentServers]);
  const unknown = names.filter((name) => !known.has(name));
  if (unknown.length === 0) return;
  const available = [...known].sort().join(", ") || "none";
  throw new ValidationError(
    `settings.mcpServers names unknown MCP servers: ${unknown.join(", ")} (configured: ${available})`,
    {
      issues: unknown.map((name) => ({
        path: "settings.mcpServers",
        message: `no MCP server named "${name}"`,
      })),
    },
  );
}

/** The servers an agent uses: those its character names, then those added to it. */
export function effectiveServers(
  characterNames: readonly string[],
  agentServers: readonly McpServerEntry[],
): McpServerEntry[] {
  const byName = new Map<string, McpServerEntry>();
  const own = new Map(agentServers.map((entry) => [entry.name, entry]));
  for (const name of characterNames) {
    const config = registryServers().get(name);
    if (config) byName.set(name, { name, config, origin: "registry" });
    else if (own.has(name)) byName.set(name, own.get(name)!);
  }
  for (const entry of agentServers) if (!byName.has(entry.name)) byName.set(entry.name, entry);
  return [...byName.values()];
}

export function findServer(name: string, agentServers: readonly McpServerEntry[]): McpServerEntry {
  const config = registryServers().get(name);
  if (config) return { name, config, origin: "registry" };
  const own = agentServers.find((entry) => entry.name === name);
  if (!own) throw new NotFoundError(`no MCP server named "${name}"`);
  return own;
}
