// In-memory stand-ins for the two D1 stores the MCP client needs (credentials, an agent's added
// servers), for scripts/mcp-conformance-client.ts: the conformance suite tests the OAuth and
// connection code, not D1. Same contracts as src/db/stores/ (the refresh lease included), kept in
// one process; rows are copied in and out so nothing shares objects with a provider.
import type {
  McpCredentialRow,
  McpCredentialStore,
  RefreshLease,
} from "../src/db/stores/mcp-credential-store.ts";
import type { AgentServerStore } from "../src/db/stores/agent-server-store.ts";
import type { McpServerEntry } from "../src/mcp-registry.ts";

interface StoredRow {
  row: McpCredentialRow;
  leaseOwner: string | null;
  leaseUntil: number | null;
}

export function createMemoryCredentialStore(): McpCredentialStore {
  const rows = new Map<string, StoredRow>();
  const key = (agentId: string, server: string) => `${agentId}\u0000${server}`;
  const copy = (row: McpCredentialRow): McpCredentialRow => structuredClone(row);
  return {
    async load(agentId, server) {
      const stored = rows.get(key(agentId, server));
      return stored ? copy(stored.row) : null;
    },
    async save(row) {
      const stored = rows.get(key(row.agentId, row.server));
      rows.set(key(row.agentId, row.server), {
        row: copy(row),
        leaseOwner: stored?.leaseOwner ?? null,
        leaseUntil: stored?.leaseUntil ?? null,
      });
    },
    async takeRefreshLease(agentId, server, owner, now, until): Promise<RefreshLease> {
      const stored = rows.get(key(agentId, server));
      if (!stored) return "missing";
      if (stored.leaseUntil !== null && stored.leaseUntil > now) return "busy";
      stored.leaseOwner = owner;
      stored.leaseUntil = until;
      return "taken";
    },
    async releaseRefreshLease(agentId, server, owner) {
      const stored = rows.get(key(agentId, server));
      if (stored?.leaseOwner !== owner) return;
      stored.leaseOwner = null;
      stored.leaseUntil = null;
    },
    async findByStateHash(stateHash) {
      for (const stored of rows.values())
        if (stored.row.stateHash === stateHash) return copy(stored.row);
      return null;
    },
    async remove(agentId, server) {
      rows.delete(key(agentId, server));
    },
  };
}

/** One agent's added servers, fixed at start (the suite gives one server per run). */
export function createFixedServerStore(entries: readonly McpServerEntry[]): AgentServerStore {
  return {
    list: async () => [...entries],
    add: async () => {
      throw new Error("the conformance client adds no servers");
    },
    remove: async () => false,
    addFromCatalog: async () => false,
  };
}
