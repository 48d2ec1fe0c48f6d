// Asking for a tool, on for every agent: when the deployment's catalog (mcp-servers.json) has MCP
// servers the agent does not use, the prompt names them and `request_tool {server, reason}` files
// a proposal to add one. On a person's yes the server is added to the agent (an OAuth server then
// waits for consent, as any other). Never a server outside the catalog.
import { z } from "zod";
import { SERVER_NAME } from "../../mcp-registry.ts";
import { MAX_REASON_CHARS } from "../../db/stores/proposal-store.ts";
import { definePlugin } from "../plugin-api.ts";
import { pendingProposalText } from "../proposal-text.ts";

export const catalogPlugin = definePlugin({
  name: "catalog",
  description:
    "Ask for an MCP server of the deployment's catalog (request_tool); a person approves.",
  enabledByDefault: true,
  providers: ({ defineProvider }) => [
    defineProvider({
      name: "requestable-tools",
      position: 31,
      async get({ services }) {
        const servers = await services.catalog.requestable();
        if (servers.length === 0) return null;
        // The catalog is the operator's file: its descriptions are not outside text.
        const lines = servers.map(
          (server) => `- ${server.name}${server.description ? `: ${server.description}` : ""}`,
        );
        return `# Tools you can ask for\nWhen a request needs one of these MCP servers, ask for it with request_tool; a person decides.\n${lines.join("\n")}`;
      },
    }),
  ],
  tools: ({ defineTool }) => [
    defineTool({
      name: "request_tool",
      description:
        "Ask a person to add an MCP server from this deployment's catalog (listed under 'Tools you can ask for') to you.",
      args: z.strictObject({
        server: z.string().max(32).describe("The server's name in the catalog."),
        reason: z
          .string()
          .min(1)
          .max(MAX_REASON_CHARS)
          .describe("Why you need it, for the person who decides."),
      }),
      available: async ({ services }) => (await services.catalog.requestable()).length > 0,
      async run({ server, reason }, context) {
        const requestable = await context.services.catalog.requestable();
        if (!SERVER_NAME.test(server) || !context.services.catalog.has(server))
          return {
            ok: false,
            error: `"${server}" is not in this deployment's catalog; you can ask for: ${requestable.map((s) => s.name).join(", ") || "nothing"}`,
          };
        if (!requestable.some((entry) => entry.name === server))
          return { ok: false, error: `you already have the MCP server "${server}"` };
        const filed = await context.services.proposals.file(
          { kind: "tool", server, reason: reason.trim() },
          context,
        );
        return pendingProposalText(filed, `add the MCP server "${server}"`);
      },
    }),
  ],
});
