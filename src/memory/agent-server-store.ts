// The MCP servers added to one agent at runtime (POST /agents/:agentId/tools), in D1. Each row's
// config is validated again on the way back (McpServerConfig), and a name the checked-in registry
// (mcp-servers.json) already uses cannot be taken by one agent's server.
import { and, asc, eq } from "drizzle-orm";
import { McpServerConfig, registryServers, type McpServerEntry } from "../mcp/registry.ts";
import { ConflictError } from "../runtime/errors.ts";
import type { Db } from "./db.ts";
import { readJsonColumn } from "./json-column.ts";
import { agentMcpServers } from "./schema.ts";

export interface AgentServerStore {
  list(agentId: string): Promise<McpServerEntry[]>;
  add(agentId: string, name: string, config: McpServerConfig, now: number): Promise<void>;
  remove(agentId: string, name: string): Promise<boolean>;
}

export function createAgentServerStore(db: Db): AgentServerStore {
  return {
    async list(agentId) {
      const rows = await db
        .select()
        .from(agentMcpServers)
        .where(eq(agentMcpServers.agentId, agentId))
        .orderBy(asc(agentMcpServers.name));
      return rows.map((row) => ({
        name: row.name,
        config: readJsonColumn(
          McpServerConfig,
          row.config,
          `agent_mcp_servers.config of ${agentId}/${row.name}`,
        ),
        origin: "agent" as const,
      }));
    },
    async add(agentId, name, config, now) {
      if (registryServers().has(name))
        throw new ConflictError(
          `"${name}" is a server of mcp-servers.json; name it in the character's settings.mcpServers instead`,
        );
      const inserted = await db
        .insert(agentMcpServers)
        .values({ agentId, name, config: JSON.stringify(config), createdAt: now })
        .onConflictDoNothing()
        .returning({ name: agentMcpServers.name });
      if (inserted.length === 0)
        throw new ConflictError(
          `agent "${agentId}" already has an MCP server named "${name}"; DELETE it first to change it`,
        );
    },
    async remove(agentId, name) {
      const removed = await db
        .delete(agentMcpServers)
        .where(and(eq(agentMcpServers.agentId, agentId), eq(agentMcpServers.name, name)))
        .returning({ name: agentMcpServers.name });
      return removed.length > 0;
    },
  };
}
