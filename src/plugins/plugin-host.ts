// Runs the registered plugins for one agent inside the runtime's interfaces: their tools behind a
// ToolHost (offered only when the character turns the plugin on and the tool says it is
// available), their providers and evaluators as the runtime's own (each checks the turn's
// character). `prepare` is called before every turn or task step, like the MCP connections', with
// the character of that turn and where it came from.
import { errorField, log } from "../log.ts";
import type { Character } from "../runtime/character.ts";
import type { Evaluator } from "../runtime/after-reply/evaluators.ts";
import type { Provider } from "../runtime/context/compose-state.ts";
import type { Clock } from "../runtime/ports/events.ts";
import type { MemoryStore } from "../runtime/ports/memory.ts";
import type { ToolDefinition, ToolHost } from "../runtime/ports/tools.ts";
import type { Plugin, PluginDeployment, PluginScope, PluginTool } from "./plugin-api.ts";
import type { PluginServices, TurnOrigin } from "./plugin-services.ts";
import { type ActivePlugin, resolvePlugins } from "./plugin-settings.ts";

export interface PluginHostOptions {
  agentId: string;
  plugins: readonly Plugin[];
  deployment: PluginDeployment;
  memory: MemoryStore;
  clock: Clock;
  /** The guarded fetch plugins get. */
  fetch: typeof fetch;
  /** A deployment variable by name; asked only for names a plugin declared. */
  secret(name: string): string | undefined;
  /** The host's services bound to this agent and this character (cached by the caller). */
  services(character: Character): PluginServices;
}

export interface PluginHost {
  tools: ToolHost;
  providers: Provider[];
  evaluators: Evaluator[];
  /** Before a turn or task step: the character of this turn, and where the turn came from. */
  prepare(character: Character, origin: TurnOrigin): void;
}

interface Offered {
  tool: PluginTool<unknown>;
  scope: PluginScope<unknown>;
}

export function createPluginHost(options: PluginHostOptions): PluginHost {
  const resolved = new WeakMap<Character, ActivePlugin[]>();
  const activeFor = (character: Character): ActivePlugin[] => {
    let active = resolved.get(character);
    if (!active) {
      const result = resolvePlugins(character, options.plugins, options.deployment);
      active = result.active;
      resolved.set(character, active);
      // Checked when the agent is written; a stored one may predate a plugin's schema change.
      if (result.report.issues.length > 0)
        log.warn("plugin_settings_invalid", {
          agentId: options.agentId,
          paths: result.report.issues.map((issue) => issue.path),
        });
    }
    return active;
  };
  const scopeFor = (entry: ActivePlugin, character: Character): PluginScope<unknown> => ({
    agent: { id: options.agentId, name: character.name },
    settings: entry.settings,
    secrets: Object.fromEntries(
      entry.plugin.secrets.flatMap((name) => {
        const value = options.secret(name);
        return value ? [[name, value]] : [];
      }),
    ),
    clock: options.clock,
    fetch: options.fetch,
    memory: options.memory,
    services: options.services(character),
  });

  let current: { character: Character; origin: TurnOrigin } | null = null;
  let offered = new Map<string, Offered>();

  const list = async (): Promise<ToolDefinition[]> => {
    if (!current) return [];
    const next = new Map<string, Offered>();
    const definitions: ToolDefinition[] = [];
    for (const entry of activeFor(current.character)) {
      const scope = scopeFor(entry, current.character);
      for (const tool of entry.plugin.tools) {
        if (next.has(tool.name) || !(await isAvailable(tool, scope, entry.plugin.name))) continue;
        next.set(tool.name, { tool, scope });
        definitions.push({
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          source: `plugin:${entry.plugin.name}`,
          ...(tool.timeoutMs !== undefined ? { timeoutMs: tool.timeoutMs } : {}),
        });
      }
    }
    offered = next;
    return definitions;
  };

  const tools: ToolHost = {
    list,
    async call(name, args, context) {
      if (!current) return { ok: false, error: `unknown tool "${name}"` };
      if (!offered.has(name)) await list();
      const entry = offered.get(name);
      if (!entry) return { ok: false, error: `unknown tool "${name}"` };
      return entry.tool.call(args, {
        ...entry.scope,
        roomId: context.roomId,
        userId: context.userId,
        turnId: context.turnId,
        callId: context.callId,
        signal: context.signal,
        origin: current.origin,
      });
    },
  };

  const find = (character: Character, plugin: Plugin) =>
    activeFor(character).find((entry) => entry.plugin === plugin);

  const providers: Provider[] = options.plugins.flatMap((plugin) =>
    plugin.providers.map(
      (provider): Provider => ({
        name: `${plugin.name}:${provider.name}`,
        position: provider.position,
        slot: provider.slot ?? "system",
        async get(context) {
          const entry = find(context.character, plugin);
          if (!entry) return null;
          const text = await provider.get({
            ...scopeFor(entry, context.character),
            roomId: context.input.roomId,
            userId: context.input.userId,
            text: context.input.text,
            signal: context.signal,
          });
          return text ? { text } : null;
        },
      }),
    ),
  );

  const evaluators: Evaluator[] = options.plugins.flatMap((plugin) =>
    plugin.evaluators.map((evaluator): Evaluator => {
      const contextFor = (context: Parameters<Evaluator["run"]>[0]) => {
        const entry = find(context.character, plugin);
        return entry
          ? {
              ...scopeFor(entry, context.character),
              roomId: context.input.roomId,
              userId: context.input.userId,
              turnId: context.input.turnId,
              text: context.input.text,
              reply: context.outcome.reply?.text ?? null,
            }
          : null;
      };
      return {
        name: `${plugin.name}:${evaluator.name}`,
        shouldRun(context) {
          const own = contextFor(context);
          if (!own) return false;
          return evaluator.shouldRun
            ? evaluator.shouldRun(own)
            : context.outcome.status === "replied";
        },
        async run(context) {
          const own = contextFor(context);
          if (own) await evaluator.run(own);
        },
      };
    }),
  );

  return {
    tools,
    providers,
    evaluators,
    prepare(character, origin) {
      current = { character, origin };
      offered = new Map();
    },
  };
}

/** A failing availability check hides the tool for this turn instead of failing it. */
async function isAvailable(
  tool: PluginTool<unknown>,
  scope: PluginScope<unknown>,
  plugin: string,
): Promise<boolean> {
  try {
    return await tool.available(scope);
  } catch (error) {
    log.warn("plugin_tool_unavailable", { plugin, tool: tool.name, error: errorField(error) });
    return false;
  }
}
