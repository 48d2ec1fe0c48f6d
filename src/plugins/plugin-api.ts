// The plugin API: `definePlugin` with typed helpers for tools (arguments as a zod schema, which is
// also the JSON Schema the model sees), providers (a section of the system prompt) and evaluators
// (after the reply), plus routes under /plugins/<name>/. Every hook gets a narrow context: the
// agent, its room and user, memory, the clock, the guarded fetch, the secrets the plugin declared
// and the host's services; never the worker's env. Plugins are listed in src/plugins/index.ts.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../http/app-env.ts";
import type { guard } from "../http/auth.ts";
import type { errorContent, jsonContent } from "../http/schemas.ts";
import type { Clock } from "../runtime/ports/events.ts";
import type { MemoryStore } from "../runtime/ports/memory.ts";
import type { ToolOutput } from "../runtime/ports/tools.ts";
import type { PluginServices, TurnOrigin } from "./plugin-services.ts";

/** Lower-case words joined by '-': a plugin's name in `plugins`, settings and its route prefix. */
export const PLUGIN_NAME = /^[a-z][a-z0-9-]{0,31}$/;
/** A tool's name as the model sees it (OpenAI's function-name rule, no `__`, kept for MCP). */
export const PLUGIN_TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

export interface PluginAgent {
  id: string;
  name: string;
}

/** What every hook of a plugin sees. `S` is the plugin's settings, as its schema parsed them. */
export interface PluginScope<S> {
  agent: PluginAgent;
  settings: S;
  /** The deployment secrets the plugin declared, those that are set (never another one). */
  secrets: Readonly<Record<string, string>>;
  clock: Clock;
  /** The guarded fetch: https and public addresses only, redirects re-checked, 10 s, 2 MiB. */
  fetch: typeof fetch;
  memory: MemoryStore;
  services: PluginServices;
}

export interface ToolRunContext<S> extends PluginScope<S> {
  roomId: string;
  userId: string;
  turnId: string;
  callId: string;
  signal: AbortSignal;
  /** Where the turn (or task step) came from. */
  origin: TurnOrigin;
}

export interface ProviderRunContext<S> extends PluginScope<S> {
  roomId: string;
  userId: string;
  /** The message the agent is answering. */
  text: string;
  signal: AbortSignal;
}

export interface EvaluatorRunContext<S> extends PluginScope<S> {
  roomId: string;
  userId: string;
  turnId: string;
  text: string;
  /** The agent's reply (null when it did not answer). */
  reply: string | null;
}

export interface PluginTool<S> {
  name: string;
  description: string;
  /** JSON Schema of the arguments (from the zod schema). */
  parameters: Record<string, unknown>;
  timeoutMs?: number;
  /** Whether the agent is offered the tool now (a key is configured, it has skills, ...). */
  available(scope: PluginScope<S>): Promise<boolean>;
  call(args: Record<string, unknown>, context: ToolRunContext<S>): Promise<ToolOutput>;
}

export interface PluginProvider<S> {
  name: string;
  /** Order within its slot; the core's sections sit at 0 (character) to 60 (recall). */
  position: number;
  /**
   * "system" (the default): the system message, for text that rarely changes (a list, a standing
   * rule), which the provider's prompt cache keeps from turn to turn. "context": the new message's
   * context block, for text that depends on the message or the moment (a lookup, a live value).
   * A "system" section that changes every turn makes every turn's prompt uncacheable.
   */
  slot?: "system" | "context";
  /** A section of the prompt, or null for none this turn. */
  get(context: ProviderRunContext<S>): Promise<string | null>;
}

export interface PluginEvaluator<S> {
  name: string;
  /** Default: only when the agent replied. */
  shouldRun?(context: EvaluatorRunContext<S>): boolean;
  run(context: EvaluatorRunContext<S>): Promise<void>;
}

export interface Plugin {
  name: string;
  description: string;
  /** On for every agent unless its settings say `enabled: false` (else only when listed). */
  enabledByDefault(deployment: PluginDeployment): boolean;
  /** Checks `settings.plugins.<name>` (without `enabled`); undefined when it takes none. */
  settings?: z.ZodType;
  /** Deployment secrets (worker variables) the plugin may read. */
  secrets: readonly string[];
  tools: PluginTool<unknown>[];
  providers: PluginProvider<unknown>[];
  evaluators: PluginEvaluator<unknown>[];
  /** Mounted under /plugins/<name>/; each route declares its scope with the kit's guard(). */
  routes?: PluginRoutes;
}

/**
 * What the HTTP edge lends a plugin's routes when it mounts them: the scope guard
 * (src/http/auth.ts) and the response shapes (src/http/schemas.ts) every route uses. Handed in,
 * not imported, so src/plugins/ stays below src/http/, which imports the plugins.
 */
export interface PluginRouteKit {
  guard: typeof guard;
  errorContent: typeof errorContent;
  jsonContent: typeof jsonContent;
}

export type PluginRoutes = (app: OpenAPIHono<AppEnv>, kit: PluginRouteKit) => void;

/** What a plugin may know about the deployment to decide whether it is on by default. */
export interface PluginDeployment {
  instagram: boolean;
}

type Items<T> = T[] | ((helpers: PluginHelpers<never>) => T[]);

export interface PluginSpec<S> {
  name: string;
  description: string;
  /** Default false: a character turns it on by listing it in `plugins`. */
  enabledByDefault?: boolean | ((deployment: PluginDeployment) => boolean);
  settings?: z.ZodType<S>;
  secrets?: readonly string[];
  tools?: PluginTool<S>[] | ((helpers: PluginHelpers<S>) => PluginTool<S>[]);
  providers?: PluginProvider<S>[] | ((helpers: PluginHelpers<S>) => PluginProvider<S>[]);
  evaluators?: PluginEvaluator<S>[] | ((helpers: PluginHelpers<S>) => PluginEvaluator<S>[]);
  routes?: PluginRoutes;
}

export interface ToolSpec<A extends z.ZodObject, S> {
  name: string;
  /** What the model reads to decide when to call it. */
  description: string;
  args: A;
  timeoutMs?: number;
  available?(scope: PluginScope<S>): boolean | Promise<boolean>;
  /** A string is a successful result; return `{ok: false, error}` for a failure the model should read. */
  run(args: z.infer<A>, context: ToolRunContext<S>): Promise<ToolOutput | string>;
}

/** The helpers bound to a plugin's settings type, for plugins that have settings. */
export interface PluginHelpers<S> {
  defineTool<A extends z.ZodObject>(spec: ToolSpec<A, S>): PluginTool<S>;
  defineProvider(spec: PluginProvider<S>): PluginProvider<S>;
  defineEvaluator(spec: PluginEvaluator<S>): PluginEvaluator<S>;
}

export function defineTool<A extends z.ZodObject, S = unknown>(
  spec: ToolSpec<A, S>,
): PluginTool<S> {
  if (!PLUGIN_TOOL_NAME.test(spec.name))
    throw new Error(`tool name "${spec.name}" must match ${PLUGIN_TOOL_NAME}`);
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(spec.args, { io: "input" });
  return {
    name: spec.name,
    description: spec.description,
    parameters,
    ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    available: async (scope) => (spec.available ? await spec.available(scope) : true),
    async call(args, context) {
      const parsed = spec.args.safeParse(args);
      if (!parsed.success) {
        const problems = parsed.error.issues
          .slice(0, 6)
          .map((issue) => `${issue.path.join(".") || "/"}: ${issue.message}`);
        return { ok: false, error: `invalid arguments for ${spec.name}: ${problems.join("; ")}` };
      }
      const output = await spec.run(parsed.data, context);
      return typeof output === "string" ? { ok: true, content: output } : output;
    },
  };
}

export function defineProvider<S = unknown>(spec: PluginProvider<S>): PluginProvider<S> {
  return spec;
}

export function defineEvaluator<S = unknown>(spec: PluginEvaluator<S>): PluginEvaluator<S> {
  return spec;
}

export function definePlugin<S = undefined>(spec: PluginSpec<S>): Plugin {
  if (!PLUGIN_NAME.test(spec.name))
    throw new Error(`plugin name "${spec.name}" must match ${PLUGIN_NAME}`);
  const helpers: PluginHelpers<S> = {
    defineTool: (tool) => defineTool(tool),
    defineProvider: (provider) => provider,
    defineEvaluator: (evaluator) => evaluator,
  };
  const items = <T>(list: T[] | ((h: PluginHelpers<S>) => T[]) | undefined): T[] =>
    typeof list === "function" ? list(helpers) : (list ?? []);
  const byDefault = spec.enabledByDefault;
  // The host parses settings with `spec.settings` before any hook sees them, so a hook typed for
  // S only ever receives an S: the erasure below is that guarantee, written once.
  return {
    name: spec.name,
    description: spec.description,
    enabledByDefault: (deployment) =>
      typeof byDefault === "function" ? byDefault(deployment) : byDefault === true,
    ...(spec.settings ? { settings: spec.settings } : {}),
    secrets: spec.secrets ?? [],
    tools: items(spec.tools) as PluginTool<unknown>[],
    providers: items(spec.providers) as PluginProvider<unknown>[],
    evaluators: items(spec.evaluators) as PluginEvaluator<unknown>[],
    ...(spec.routes ? { routes: spec.routes } : {}),
  };
}

export type { Items as PluginItems };
