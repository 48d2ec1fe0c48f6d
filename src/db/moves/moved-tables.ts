// What moving an agent copies: every table of its data, in an order that satisfies the foreign
// keys (people before their rooms' participants, memories before their vectors), each with the key
// that pages through one agent's rows. Columns are read from the database itself (pragma), so a
// later migration's column moves with the rest; the autoincrement `seq` stays behind (the target
// numbers its own rows, and the full-text index follows through the insert triggers).

export interface MovedTable {
  name: string;
  /** Unique within one agent: pages are key ranges, and rows are matched on it. */
  key: readonly string[];
  /**
   * `agent`: the rows whose agent_id is the agent's. `people`: the users its rooms and
   * relationships name (shared with other agents of the database: never deleted by a move).
   */
  scope: "agent" | "people";
  /**
   * A row whose parent (by this column) is not in the new database yet waits for the next pass:
   * the agent kept writing after the parent's table was copied, and the foreign key would refuse
   * it. Under the fence nothing new arrives, so the last pass copies every one.
   */
  parent?: { column: string; table: "users" | "memories" };
}

export const MOVED_TABLES: readonly MovedTable[] = [
  { name: "users", key: ["id"], scope: "people" },
  { name: "rooms", key: ["id"], scope: "agent" },
  {
    name: "participants",
    key: ["room_id", "user_id"],
    scope: "agent",
    parent: { column: "user_id", table: "users" },
  },
  {
    name: "relationships",
    key: ["user_id"],
    scope: "agent",
    parent: { column: "user_id", table: "users" },
  },
  { name: "memories", key: ["id"], scope: "agent" },
  {
    name: "memory_vectors",
    key: ["memory_id"],
    scope: "agent",
    parent: { column: "memory_id", table: "memories" },
  },
  { name: "vector_deletions", key: ["memory_id"], scope: "agent" },
  { name: "turn_inspections", key: ["turn_id"], scope: "agent" },
];

/** The rows of `table` that belong to the agent (bound to ?1). */
export function scopeSql(table: MovedTable): string {
  return table.scope === "agent"
    ? "agent_id = ?1"
    : "id IN (SELECT user_id FROM participants WHERE agent_id = ?1 UNION SELECT user_id FROM relationships WHERE agent_id = ?1)";
}

/** The unique columns an upsert resolves on. */
export function conflictColumns(table: MovedTable): readonly string[] {
  return table.scope === "agent" ? ["agent_id", ...table.key] : table.key;
}

export interface TableColumns {
  names: string[];
  /** Columns holding blobs: read back as byte arrays, bound again as bytes. */
  blobs: Set<string>;
}

export async function columnsOf(db: D1Database, table: MovedTable): Promise<TableColumns> {
  const { results } = await db
    .prepare("SELECT name, type FROM pragma_table_info(?1)")
    .bind(table.name)
    .all<{ name: string; type: string }>();
  const kept = results.filter((column) => column.name !== "seq");
  return {
    names: kept.map((column) => column.name),
    blobs: new Set(
      kept.filter((column) => column.type.toLowerCase() === "blob").map((c) => c.name),
    ),
  };
}
