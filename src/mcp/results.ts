// Turns an MCP tools/call result into what the model reads. Text is kept; images and audio are
// described (chat completions take no images in tool messages); embedded resources are quoted
// with their URI; structured content is given as JSON unless a text part already says the same.
// The whole result is quoted as untrusted data with its source, and capped; so is a failure the
// server describes (`isError`, or a JSON-RPC error): the server's words never read as ours.
import type { CallToolResult } from "@modelcontextprotocol/client";
import {
  quoteData,
  TOOL_ERROR_PREAMBLE,
  TOOL_RESULT_PREAMBLE,
} from "../runtime/context/quoted-data.ts";
import type { ToolOutput } from "../runtime/ports/tools.ts";

/** Far above what the tool executor passes on (it truncates further); bounds memory only. */
export const MAX_MCP_RESULT_CHARS = 100_000;

export function toToolOutput(server: string, tool: string, result: CallToolResult): ToolOutput {
  const parts = (result.content ?? []).map(describePart);
  const structured = result.structuredContent;
  if (structured !== undefined && !parts.some((part) => sameJson(part, structured)))
    parts.push(JSON.stringify(structured));
  let text =
    parts.join("\n").trim() ||
    (result.isError ? "the tool reported an error without details" : "(no content)");
  if (text.length > MAX_MCP_RESULT_CHARS)
    text = `${text.slice(0, MAX_MCP_RESULT_CHARS)}\n[cut at ${MAX_MCP_RESULT_CHARS} characters]`;
  if (result.isError) return toolFailure(server, tool, text);
  return {
    ok: true,
    content: quoteData(
      `Result of ${tool} from MCP server ${server}`,
      [{ source: `mcp:${server}/${tool}`, text }],
      TOOL_RESULT_PREAMBLE,
    ),
    ...(structured !== undefined ? { data: structured } : {}),
  };
}

/** A failure in the server's own words, quoted as data under our one-line summary. */
export function toolFailure(server: string, tool: string, said: string): ToolOutput {
  const quoted = quoteData(
    `What ${tool} of MCP server ${server} said`,
    [{ source: `mcp:${server}/${tool}`, text: said.slice(0, MAX_MCP_RESULT_CHARS) }],
    TOOL_ERROR_PREAMBLE,
  );
  return { ok: false, error: `${server}/${tool} failed.\n${quoted}` };
}

type Part = CallToolResult["content"][number];

function describePart(part: Part): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "image":
    case "audio":
      return `[${part.type} ${part.mimeType}, ${base64Bytes(part.data)} bytes, not shown]`;
    case "resource": {
      const resource = part.resource;
      if ("text" in resource && typeof resource.text === "string")
        return `Resource ${resource.uri}${resource.mimeType ? ` (${resource.mimeType})` : ""}:\n${resource.text}`;
      const blob = "blob" in resource && typeof resource.blob === "string" ? resource.blob : "";
      return `[resource ${resource.uri}${resource.mimeType ? ` (${resource.mimeType})` : ""}, ${base64Bytes(blob)} bytes of binary data, not shown]`;
    }
    case "resource_link":
      return `[link to resource ${part.uri}${part.name ? ` "${part.name}"` : ""}${part.mimeType ? ` (${part.mimeType})` : ""}]`;
    default:
      return `[unsupported content type ${(part as { type: string }).type}]`;
  }
}

function base64Bytes(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}
