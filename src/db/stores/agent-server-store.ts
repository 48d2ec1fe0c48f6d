// The MCP servers added to one agent at runtime (POST /agents/:agentId/tools), in D1. Each row's
// config is validated again on the way back (McpServerConfig), and a name the checked-in registry
// (mcp-servers.json) already uses cannot be taken by one agent's server. Servers of the registry
// an approved request_tool added to the agent are kept by name only (their settings stay the
// registry's) and listed with origin `registry`.
import { and, asc, eq } from "drizzle-orm";
import { McpServerConfig, registryServers, type McpServerEntry } from "../../mcp-registry.ts";
import { ConflictError } from "../../runtime/util/errors.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { agentCatalogServers, agentMcpServers } from "../schema.ts";

export interface AgentServerStore {
  list(agentId: string): Promise<McpServerEntry[]>;
  add(agentId: string, name: string, config: McpServerConfig, now: number): Promise<void>;
  remove(agentId: string, name: string): Promise<boolean>;
  /** Adds a server of the registry to the agent; false when it had it already. */
  addFromCatalog(agentId: string, name: string, now: number): Promise<boolean>;
}

export function createAgentServerStore(db: Db): AgentServerStore {
  return {
    async list(agentId) {
      const [rows, catalog] = await db.batch([
        db
          .select()
          .from(agentMcpServers)
          .where(eq(agentMcpServers.agentId, agentId))
          .orderBy(asc(agentMcpServers.name)),
        db
          .select({ name: agentCatalogServers.name })
          .from(agentCatalogServers)
          .where(eq(agentCatalogServers.agentId, agentId))
          .orderBy(asc(agentCatalogServers.name)),
      ]);
      // A server since removed from the registry is no longer offered.
      const fromCatalog = catalog.flatMap(({ name }) => {
        const config = registryServers().get(name);
        return config ? [{ name, config, origin: "registry" as const }] : [];
      });
      const own = rows.map((row) => ({
        name: row.name,
        config: readJsonColumn(
          McpServerConfig,
          row.config,
          `agent_mcp_servers.config of ${agentId}/${row.name}`,
        ),
        origin: "agent" as const,
      }));
      return [...fromCatalog, ...own];
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
      const [removed, fromCatalog] = await db.batch([
        db
          .delete(agentMcpServers)
          .where(and(eq(agentMcpServers.agentId, agentId), eq(agentMcpServers.name, name)))
          .returning({ name: agentMcpServers.name }),
        db
          .delete(agentCatalogServers)
          .where(and(eq(agentCatalogServers.agentId, agentId), eq(agentCatalogServers.name, name)))
          .returning({ name: agentCatalogServers.name }),
      ]);
      return removed.length + fromCatalog.length > 0;
    },
    async addFromCatalog(agentId, name, now) {
      const inserted = await db
        .insert(agentCatalogServers)
        .values({ agentId, name, createdAt: now })
        .onConflictDoNothing()
        .returning({ name: agentCatalogServers.name });
      return inserted.length > 0;
    },
  };
}
