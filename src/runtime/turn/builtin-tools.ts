// Tools every agent has without any MCP server: what it can do, remembering a fact about the
// person it talks to, reading back the room's history, and the current time. Side effects use ids
// derived from the turn and call, so a replayed turn does not store a fact twice.
import { CHAT_HISTORY_PREAMBLE, quoteData } from "../context/quoted-data.ts";
import type { Clock } from "../ports/events.ts";
import type { Memory, MemoryStore } from "../ports/memory.ts";
import { declinedByFilter } from "../access/message-filter.ts";
import type {
  ToolContext,
  ToolDefinition,
  ToolHost,
  ToolOutput,
  ToolSourceStatus,
} from "../ports/tools.ts";

const MAX_FACT_CHARS = 1_000;
const MAX_HISTORY_LIMIT = 50;

export interface BuiltinToolsOptions {
  memory: MemoryStore;
  clock: Clock;
  /** Every tool the agent can call right now (built-in and remote), for list_available_tools. */
  listAll: () => Promise<ToolDefinition[]>;
  /** The remote tool sources and their state, for list_available_tools. */
  sources?: () => ToolSourceStatus[];
}

export function describeSource(source: ToolSourceStatus): string {
  if (source.state === "ready")
    return `${source.name}: ready, ${source.tools} tool${source.tools === 1 ? "" : "s"}`;
  const state =
    source.state === "authenticating"
      ? "waiting for authorization"
      : source.state === "down"
        ? "unreachable"
        : "misconfigured";
  return `${source.name}: ${state}${source.detail ? ` (${source.detail})` : ""}; its tools cannot be used now`;
}

type Handler = (args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolOutput>;

export const BUILTIN_TOOL_DEFINITIONS: ToolDefinition[] = [
  {
    name: "list_available_tools",
    description: "List every tool you can call right now, with what each one does.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    source: "builtin",
  },
  {
    name: "remember",
    description:
      "Store a lasting fact about the person you are talking to (a preference, a detail of their life or work) so you can use it in later conversations.",
    parameters: {
      type: "object",
      properties: {
        fact: {
          type: "string",
          minLength: 1,
          maxLength: MAX_FACT_CHARS,
          description: "The fact, as one short sentence.",
        },
      },
      required: ["fact"],
      additionalProperties: false,
    },
    source: "builtin",
  },
  {
    name: "get_chat_history",
    description:
      "Read earlier messages of this conversation, newest last, beyond what you can already see.",
    parameters: {
      type: "object",
      properties: {
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_HISTORY_LIMIT,
          description: "How many messages (default 20).",
        },
        before: {
          type: "string",
          format: "date-time",
          description: "Only messages before this ISO time.",
        },
      },
      additionalProperties: false,
    },
    source: "builtin",
  },
  {
    name: "current_time",
    description: "The current date and time, optionally in an IANA time zone such as Europe/Paris.",
    parameters: {
      type: "object",
      properties: {
        timeZone: { type: "string", description: "IANA time zone name; UTC when omitted." },
      },
      additionalProperties: false,
    },
    source: "builtin",
  },
];

export function createBuiltinToolHost(options: BuiltinToolsOptions): ToolHost {
  const handlers: Record<string, Handler> = {
    async list_available_tools() {
      const tools = await options.listAll();
      const lines = tools.map((tool) => `${tool.name}: ${tool.description}`);
      const sources = options.sources?.() ?? [];
      if (sources.length > 0) {
        lines.push("", "Tool servers:");
        for (const source of sources) lines.push(`- ${describeSource(source)}`);
      }
      return { ok: true, content: lines.join("\n") };
    },

    async remember(args, ctx) {
      const fact = String(args.fact).trim();
      const memory: Memory = {
        id: `${ctx.callId}:fact`,
        type: "fact",
        agentId: ctx.agentId,
        roomId: ctx.roomId,
        userId: ctx.userId,
        content: { text: fact, source: "remember" },
        metadata: { turnId: ctx.turnId },
        createdAt: options.clock.now(),
      };
      await options.memory.saveMemory(memory);
      return { ok: true, content: `Remembered: ${fact}`, data: { memoryId: memory.id } };
    },

    async get_chat_history(args, ctx) {
      const limit = typeof args.limit === "number" ? args.limit : 20;
      const beforeMs = typeof args.before === "string" ? Date.parse(args.before) : undefined;
      if (beforeMs !== undefined && Number.isNaN(beforeMs))
        return { ok: false, error: "before is not a valid date-time" };
      const messages = await options.memory.recentMessages({
        agentId: ctx.agentId,
        roomId: ctx.roomId,
        limit,
        beforeMs,
      });
      // What the place's filter declined never reaches a model, not even through this tool.
      const shown = messages.filter((m) => !declinedByFilter(m));
      if (shown.length === 0) return { ok: true, content: "No earlier messages." };
      // Other people's words: quoted as data with who said them and when, never as instructions.
      const entries = shown.reverse().map((m) => ({
        source: `${m.content.role === "agent" ? "you" : (m.content.userName ?? m.userId ?? "user")} at ${new Date(m.createdAt).toISOString()}`,
        text: m.content.text,
      }));
      return {
        ok: true,
        content: quoteData("Earlier messages in this room", entries, CHAT_HISTORY_PREAMBLE),
      };
    },

    async current_time(args) {
      const timeZone = typeof args.timeZone === "string" ? args.timeZone : "UTC";
      const now = new Date(options.clock.now());
      try {
        const local = new Intl.DateTimeFormat("en-US", {
          timeZone,
          dateStyle: "full",
          timeStyle: "long",
        }).format(now);
        return { ok: true, content: `${local} (${now.toISOString()})` };
      } catch {
        return { ok: false, error: `unknown time zone "${timeZone}"` };
      }
    },
  };

  return {
    async list() {
      return BUILTIN_TOOL_DEFINITIONS;
    },
    async call(name, args, ctx) {
      const handler = handlers[name];
      if (!handler) return { ok: false, error: `no built-in tool named ${name}` };
      return handler(args, ctx);
    },
  };
}

/** Several hosts behind one: names are unique, the first host to offer a name owns it. */
export function combineToolHosts(hosts: ToolHost[]): ToolHost {
  let owners: Map<string, ToolHost> | undefined;
  const list = async () => {
    const seen = new Map<string, ToolHost>();
    const all: ToolDefinition[] = [];
    for (const host of hosts) {
      for (const tool of await host.list()) {
        if (seen.has(tool.name)) continue;
        seen.set(tool.name, host);
        all.push(tool);
      }
    }
    owners = seen;
    return all;
  };
  return {
    list,
    sources: () => hosts.flatMap((host) => host.sources?.() ?? []),
    async call(name, args, ctx) {
      if (!owners) await list();
      const host = owners?.get(name);
      if (!host) return { ok: false, error: `unknown tool "${name}"` };
      return host.call(name, args, ctx);
    },
  };
}
