// One agent's MCP server, built for one request and one token (the transport is stateless): the
// tools and the character resource whose action the one check (src/runtime/access/) allows this
// token on this agent are registered, the others are not, so tools/list shows only what the token
// may call and calling another is the SDK's "not found" tool error. An OAuth grant also sees the
// tools it lacks a grantable scope for, to step up (oauth/step-up.ts). The server's instructions
// say which tools were left out and why, in the check's words.
import { McpServer } from "@modelcontextprotocol/server";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/server/validators/cf-worker";
import { type Action, decide } from "../../../runtime/access/index.ts";
import { CHARACTER_MIME_TYPE, characterUri, readCharacter } from "./character-resource.ts";
import { chat, ChatInput, ChatOutput } from "./chat-tool.ts";
import type { McpCallContext } from "./context.ts";
import { SearchMemoriesInput, SearchMemoriesOutput, searchMemoriesTool } from "./memory-tool.ts";
import {
  GetTaskInput,
  getTaskTool,
  StartTaskInput,
  StartTaskOutput,
  startTask,
} from "./task-tools.ts";
import { runTool } from "./tool-results.ts";
import { missingGrantScope } from "./oauth/step-up.ts";

export const MCP_SERVER_VERSION = "0.1.0";

/** Each tool and the action of the one check it needs (its scope is that action's). */
export const MCP_TOOL_ACTIONS = {
  chat: "message.send",
  search_memories: "memory.read",
  start_task: "message.send",
  get_task: "agent.read",
} as const satisfies Record<string, Action>;

export type McpToolName = keyof typeof MCP_TOOL_ACTIONS;

export function createAgentMcpServer(ctx: McpCallContext): McpServer {
  const { principal, agentId } = ctx;
  const refused: string[] = [];
  const stepUp: string[] = [];
  const allows = (what: string, action: Action): boolean => {
    const decision = decide(principal, action, { agentId });
    if (!decision.allowed) refused.push(`${what}: ${decision.reason}`);
    return decision.allowed;
  };
  // An OAuth grant is shown the tools it lacks a grantable scope for too: calling one is a 403
  // that asks the host to step up (oauth/step-up.ts), and each tool checks again when it runs.
  const offers = (name: string, action: Action): boolean => {
    const missing = missingGrantScope(principal, action, agentId);
    if (missing === null) return allows(name, action);
    stepUp.push(`${name} (needs \`${missing}\`)`);
    return true;
  };
  const tools = Object.fromEntries(
    Object.entries(MCP_TOOL_ACTIONS).map(([name, action]) => [name, offers(name, action)]),
  ) as Record<McpToolName, boolean>;
  const characterReadable = allows("the character resource", "agent.read");

  const server = new McpServer(
    { name: `edge-agents:${agentId}`, version: MCP_SERVER_VERSION },
    {
      // Declared up front, so resources/list answers (empty) for a token that may read none.
      capabilities: { tools: {}, resources: {} },
      // Ajv compiles validators with `new Function`, which workerd forbids.
      jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
      instructions: instructions(agentId, refused, stepUp),
    },
  );

  if (tools.chat)
    server.registerTool(
      "chat",
      {
        title: "Chat with the agent",
        description: `Send a message to agent "${agentId}" and get its reply. Calls with the same userId and roomId are one conversation, which the agent remembers.`,
        inputSchema: ChatInput,
        outputSchema: ChatOutput,
      },
      (args) => runTool("chat", () => chat(ctx, args)),
    );
  if (tools.search_memories)
    server.registerTool(
      "search_memories",
      {
        title: "Search the agent's memories",
        description: `Search what agent "${agentId}" remembers (facts, messages, knowledge), best match first.`,
        inputSchema: SearchMemoriesInput,
        outputSchema: SearchMemoriesOutput,
        annotations: { readOnlyHint: true },
      },
      (args) => runTool("search_memories", () => searchMemoriesTool(ctx, args)),
    );
  if (tools.start_task)
    server.registerTool(
      "start_task",
      {
        title: "Start a task",
        description: `Start an autonomous task on agent "${agentId}": it plans, uses its tools and reports. Returns at once with the task id; read progress and result with get_task.`,
        inputSchema: StartTaskInput,
        outputSchema: StartTaskOutput,
      },
      (args) => runTool("start_task", () => startTask(ctx, args)),
    );
  if (tools.get_task)
    server.registerTool(
      "get_task",
      {
        title: "Read a task",
        description: `A task of agent "${agentId}": status, plan, steps, result or report, and usage.`,
        inputSchema: GetTaskInput,
        annotations: { readOnlyHint: true },
      },
      (args) => runTool("get_task", () => getTaskTool(ctx, args)),
    );
  if (characterReadable)
    server.registerResource(
      "character",
      characterUri(agentId),
      {
        title: `Character of agent "${agentId}"`,
        description: "The agent's character file, normalised; secret values are left out.",
        mimeType: CHARACTER_MIME_TYPE,
      },
      () => readCharacter(ctx),
    );
  return server;
}

function instructions(agentId: string, refused: string[], stepUp: string[]): string {
  const base = `Agent "${agentId}" of an edge-agents deployment. Talk to it with chat; its memory and tasks are reachable with the other tools.`;
  const notOffered =
    refused.length === 0 ? "" : ` Not offered to this token: ${refused.join("; ")}.`;
  const more =
    stepUp.length === 0
      ? ""
      : ` Listed but outside this grant, so calling them asks for a wider one: ${stepUp.join(", ")}.`;
  return `${base}${notOffered}${more}`;
}
