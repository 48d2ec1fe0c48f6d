// A plugin's turn without the worker: the runtime's turn runner over in-memory fakes, the plugin
// host with the plugins under test, and the scripted model. Services a test does not give are
// empty (no skills, nothing in the catalog) or refuse (filing a proposal). docs/plugins.md
// shows it in use.
import { combineToolHosts, createBuiltinToolHost } from "../../src/runtime/turn/builtin-tools.ts";
import { loadTokenCounter } from "../../src/runtime/util/tokens.ts";
import { createTurnRunner } from "../../src/runtime/turn/turn-runner.ts";
import {
  DEFAULT_LIMITS,
  type TurnInput,
  type TurnOutcome,
} from "../../src/runtime/turn/turn-types.ts";
import type { ChatModel } from "../../src/runtime/ports/model.ts";
import type { Plugin } from "../../src/plugins/plugin-api.ts";
import { createPluginHost } from "../../src/plugins/plugin-host.ts";
import type { PluginServices, TurnOrigin } from "../../src/plugins/plugin-services.ts";
import { character, eventRecorder, FakeMemoryStore, tickingClock, turnInput } from "./fakes.ts";

export interface PluginTurnOptions {
  plugins: Plugin[];
  model: ChatModel;
  /** Character file fields (e.g. `plugins`, `settings`). */
  character?: Record<string, unknown>;
  input?: Partial<TurnInput>;
  /** Worker variables by name (a plugin reads only those it declared). */
  variables?: Record<string, string>;
  services?: Partial<PluginServices>;
  /** The plugins' fetch; default refuses every request. */
  fetch?: typeof fetch;
  origin?: TurnOrigin;
}

export function emptyServices(): PluginServices {
  return {
    instagram: null,
    skills: { list: async () => [], get: async () => null },
    proposals: {
      file: async () => {
        throw new Error("this test gives no proposal service");
      },
    },
    catalog: { requestable: async () => [], has: () => false },
  };
}

export async function runPluginTurn(options: PluginTurnOptions): Promise<{
  outcome: TurnOutcome;
  memory: FakeMemoryStore;
  events: ReturnType<typeof eventRecorder>;
}> {
  const memory = new FakeMemoryStore();
  const clock = tickingClock();
  const events = eventRecorder();
  const services = { ...emptyServices(), ...options.services };
  const host = createPluginHost({
    agentId: "nova",
    plugins: options.plugins,
    deployment: { instagram: false },
    memory,
    clock,
    fetch:
      options.fetch ??
      (async () => {
        throw new Error("this test gives the plugin no network");
      }),
    secret: (name) => options.variables?.[name],
    services: () => services,
  });
  const agent = character(options.character);
  host.prepare(agent, options.origin ?? { surface: "rest" });
  let tools = combineToolHosts([]);
  const builtins = createBuiltinToolHost({ memory, clock, listAll: () => tools.list() });
  tools = combineToolHosts([builtins, host.tools]);
  const runner = createTurnRunner({
    model: options.model,
    modelNotConfiguredMessage: "no model",
    models: { primary: "test-primary", fallbacks: [], small: "test-small" },
    memory,
    tools,
    providers: host.providers,
    evaluators: host.evaluators,
    clock,
    events,
    tokens: await loadTokenCounter(),
    limits: DEFAULT_LIMITS,
  });
  const input = turnInput({ source: "rest", agentId: "nova", ...options.input });
  await runner.receive(input);
  const outcome = await runner.respond(agent, input);
  await runner.afterReply(agent, input, outcome);
  return { outcome, memory, events };
}
