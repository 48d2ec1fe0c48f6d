// How a tool's failure reaches an MCP host: a tool result with `isError` (MCP's "tool execution
// error", which the host shows to its model), its text the error's code and message as the REST
// API would give them. Anything else is logged and reported without internals, as handleError does.
import type { CallToolResult } from "@modelcontextprotocol/server";
import { errorField, log } from "../../../log.ts";
import { AppError } from "../../../runtime/util/errors.ts";

export function toolError(tool: string, error: unknown): CallToolResult {
  if (error instanceof AppError)
    return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}` }] };
  log.error("mcp_tool_failed", { tool, error: errorField(error, true) });
  return {
    isError: true,
    content: [{ type: "text", text: "internal: internal error; see the worker logs" }],
  };
}

/** Runs a tool's body, turning what it throws into an error result. */
export async function runTool(
  tool: string,
  body: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await body();
  } catch (error) {
    return toolError(tool, error);
  }
}
